import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { MessagingError, SANDBOX_REPLY_TEXT, SandboxMessaging, sandboxOutcome, type MessageStatus, type StatusDetail } from './index.ts';

const logger = pino({ level: 'silent' });

function recorder() {
  const calls: { id: string; status: MessageStatus; detail: StatusDetail }[] = [];
  return { calls, listener: (id: string, status: MessageStatus, detail: StatusDetail) => void calls.push({ id, status, detail }) };
}

describe('sandbox messaging', () => {
  test('records every message and exposes it', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    const result = await rail.send({
      to: '+573001234567',
      text: 'Hola, su enlace de pago: https://recaudo.test/p/abc',
      template: 'payment_link',
      variables: { company: 'Tienda Ñandú' },
      reference: 'pmsg_1',
    });
    assert.equal(result.status, 'queued');
    assert.match(result.providerMessageId, /^sbmsg_[0-9a-z]{26}$/);
    assert.equal(rail.sent.length, 1);
    const [m] = rail.sent;
    assert.equal(m.providerMessageId, result.providerMessageId);
    assert.equal(m.to, '+573001234567');
    assert.equal(m.text, 'Hola, su enlace de pago: https://recaudo.test/p/abc');
    assert.equal(m.template, 'payment_link');
    assert.deepEqual(m.variables, { company: 'Tienda Ñandú' });
    assert.equal(m.reference, 'pmsg_1');
    assert.ok(m.sentAt instanceof Date);
  });

  test('deterministic outcomes: 0000 fails, 1111 replies, anything else is delivered', async (t) => {
    assert.deepEqual(sandboxOutcome('+573000000000'), { status: 'failed', reason: 'unreachable' });
    assert.deepEqual(sandboxOutcome('+573001111111'), { status: 'replied', replyText: SANDBOX_REPLY_TEXT });
    assert.deepEqual(sandboxOutcome('+573001234567'), { status: 'delivered' });

    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    const { calls, listener } = recorder();
    rail.onStatus(listener);
    const delivered = await rail.send({ to: '+573001234567', text: 'a', reference: 'r-delivered' });
    const failed = await rail.send({ to: '+573000000000', text: 'b', reference: 'r-failed' });
    const replied = await rail.send({ to: '+573001111111', text: 'c', reference: 'r-replied' });
    await rail.idle();

    assert.deepEqual(
      calls.map((c) => [c.id, c.status, c.detail.reference, c.detail.to]),
      [
        [delivered.providerMessageId, 'delivered', 'r-delivered', '+573001234567'],
        [failed.providerMessageId, 'failed', 'r-failed', '+573000000000'],
        [replied.providerMessageId, 'replied', 'r-replied', '+573001111111'],
      ],
    );
    assert.equal(calls[1].detail.reason, 'unreachable');
    assert.equal(calls[2].detail.replyText, SANDBOX_REPLY_TEXT);
    assert.equal(calls[0].detail.reason, undefined);
    assert.equal(calls[0].detail.replyText, undefined);
    for (const c of calls) assert.ok(c.detail.at instanceof Date);
    assert.deepEqual(
      rail.reports.map((r) => r.status),
      ['delivered', 'failed', 'replied'],
    );
  });

  test('reports asynchronously, never before send has returned, after the configured delay', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    const { calls, listener } = recorder();
    rail.onStatus(listener);
    const { providerMessageId } = await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    assert.equal(calls.length, 0, 'even with no delay the outcome comes on a later turn');
    const report = await rail.waitForStatus(providerMessageId);
    assert.equal(report.status, 'delivered');
    assert.equal(calls.length, 1);

    const slow = new SandboxMessaging({ logger, delayMs: 80 });
    t.after(() => slow.close());
    const started = Date.now();
    const sent = await slow.send({ to: '+573001234567', text: 'a', reference: 'r2' });
    await new Promise((r) => setTimeout(r, 20));
    const seen = slow.reports.length;
    if (Date.now() - started < 75) assert.equal(seen, 0, 'not reported before the delay');
    await slow.waitForStatus(sent.providerMessageId);
    assert.ok(Date.now() - started >= 75, `reported after ${Date.now() - started} ms`);
  });

  test('waitForStatus resolves once the listeners have finished, and at once for a settled message', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    let finished = false;
    rail.onStatus(async () => {
      await new Promise((r) => setTimeout(r, 30));
      finished = true;
    });
    const { providerMessageId } = await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    await rail.waitForStatus(providerMessageId);
    assert.equal(finished, true);
    const again = await rail.waitForStatus(providerMessageId);
    assert.equal(again.providerMessageId, providerMessageId);
  });

  test('refuses a phone that is not E.164 and records nothing', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    for (const to of ['3001234567', '+57 300 123 4567', '+0573001234567', '', '+57300123456789012']) {
      await assert.rejects(
        rail.send({ to, text: 'a', reference: 'r' }),
        (e: unknown) => e instanceof MessagingError && e.code === 'invalid_request' && !e.retryable,
        to,
      );
    }
    await assert.rejects(rail.send({ to: '+573001234567', text: '  ', reference: 'r' }), MessagingError);
    await assert.rejects(rail.send({ to: '+573001234567', text: 'a', reference: '' }), MessagingError);
    assert.equal(rail.sent.length, 0);
  });

  test('a listener that throws is called again, then the status is dropped after the retries', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0, retryDelaysMs: [1, 1] });
    t.after(() => rail.close());
    let attempts = 0;
    rail.onStatus(() => {
      attempts++;
      if (attempts < 3) throw new Error('database busy');
    });
    const first = await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    await rail.waitForStatus(first.providerMessageId);
    assert.equal(attempts, 3, 'third attempt succeeds');

    let calls = 0;
    const other = new SandboxMessaging({ logger, delayMs: 0, retryDelaysMs: [1] });
    t.after(() => other.close());
    other.onStatus(() => {
      calls++;
      throw new Error('always');
    });
    const second = await other.send({ to: '+573001234567', text: 'a', reference: 'r2' });
    const report = await other.waitForStatus(second.providerMessageId);
    assert.equal(report.status, 'delivered');
    assert.equal(calls, 2);
  });

  test('every listener hears every status, and one that unsubscribes hears no more', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    const a = recorder();
    const b = recorder();
    rail.onStatus(a.listener);
    const offB = rail.onStatus(b.listener);
    await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    await rail.idle();
    offB();
    await rail.send({ to: '+573001234567', text: 'a', reference: 'r2' });
    await rail.idle();
    assert.equal(a.calls.length, 2);
    assert.equal(b.calls.length, 1);
  });

  test('report() sends a further status (a second reply) through the same listeners', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    const { calls, listener } = recorder();
    rail.onStatus(listener);
    const { providerMessageId } = await rail.send({ to: '+573001111111', text: 'a', reference: 'r1' });
    await rail.idle();
    await rail.report(providerMessageId, 'replied', { replyText: '¿Puedo pagar mañana?' });
    assert.deepEqual(
      calls.map((c) => [c.status, c.detail.replyText, c.detail.reference]),
      [
        ['replied', SANDBOX_REPLY_TEXT, 'r1'],
        ['replied', '¿Puedo pagar mañana?', 'r1'],
      ],
    );
  });

  test('close drops outcomes not yet due and refuses further sends', async () => {
    const rail = new SandboxMessaging({ logger, delayMs: 60_000 });
    const { calls, listener } = recorder();
    rail.onStatus(listener);
    const { providerMessageId } = await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    const waiting = rail.waitForStatus(providerMessageId);
    const started = Date.now();
    await rail.close();
    assert.ok(Date.now() - started < 1_000, 'close does not wait for the delay');
    await assert.rejects(waiting, /closed/);
    assert.equal(calls.length, 0);
    await assert.rejects(rail.send({ to: '+573001234567', text: 'a', reference: 'r2' }), /closed/);
  });

  test('keeps only the most recent messages, and still reports the forgotten ones with their reference', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0, keep: 2 });
    t.after(() => rail.close());
    const { calls, listener } = recorder();
    rail.onStatus(listener);
    for (const ref of ['r1', 'r2', 'r3']) await rail.send({ to: '+573001234567', text: 'a', reference: ref });
    assert.deepEqual(
      rail.sent.map((m) => m.reference),
      ['r2', 'r3'],
    );
    await rail.idle();
    assert.deepEqual(
      calls.map((c) => c.detail.reference),
      ['r1', 'r2', 'r3'],
    );
    assert.equal(rail.reports.length, 2);
  });

  test('clear forgets what was recorded', async (t) => {
    const rail = new SandboxMessaging({ logger, delayMs: 0 });
    t.after(() => rail.close());
    await rail.send({ to: '+573001234567', text: 'a', reference: 'r1' });
    await rail.idle();
    rail.clear();
    assert.equal(rail.sent.length, 0);
    assert.equal(rail.reports.length, 0);
  });
});
