import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { sql } from 'kysely';
import { createHarness, ENGINE, expectError, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { parseMail, startSmtpSink, type SmtpSink } from '../../../test/smtp-sink.ts';
import { MessagingError, SandboxMessaging } from '../../rails/index.ts';
import { applyMessageStatus, runSendMessage, SEND_MESSAGE_JOB } from './messages.ts';
import { createPayment } from '../../../test/support/payments.ts';

/**
 * Runs the queued sends of these payments, then waits until every sandbox outcome was reported
 * and recorded. On PGlite (a database per harness) through the real queue; on the shared
 * PostgreSQL database only this test's own jobs (another test file's jobs belong to its process,
 * whose sandbox rails its assertions read).
 */
async function runSends(h: Harness, paymentIds: string[]): Promise<void> {
  const deps = h.runtime.deps;
  if (ENGINE === 'pglite') {
    await deps.jobs.tick();
  } else {
    const db = deps.database.db;
    const now = h.clock.now();
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload', 'attempts'])
      .where('kind', '=', SEND_MESSAGE_JOB)
      .where(sql<string>`payload->>'payment_id'`, 'in', paymentIds)
      .where('run_at', '<=', now)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .execute();
    for (const job of jobs) {
      const attempts = job.attempts + 1;
      await db.updateTable('jobs').set({ attempts }).where('id', '=', job.id).execute();
      try {
        await runSendMessage(deps, job.payload, { id: job.id, attempts });
        await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      } catch {
        await db
          .updateTable('jobs')
          .set({ run_at: new Date(now.getTime() + 2 ** attempts * 1000) })
          .where('id', '=', job.id)
          .execute();
      }
    }
  }
  await deps.rails.test.messaging.idle();
  if (deps.rails.live.messaging instanceof SandboxMessaging) await deps.rails.live.messaging.idle();
}

async function messageRows(h: Harness, paymentId: string) {
  return h.runtime.deps.database.db
    .selectFrom('payment_messages')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The payment.message.* events of a payment, by type. */
async function messageEvents(h: Harness, paymentId: string, type?: string): Promise<{ type: string; data: any }[]> {
  let q = h.runtime.deps.database.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where(sql<string>`data->>'id'`, '=', paymentId)
    .where('type', 'like', 'payment.message.%');
  if (type) q = q.where('type', '=', type);
  return q.orderBy('created_at').orderBy('id').execute();
}

async function sendJobs(h: Harness, paymentId: string): Promise<number> {
  const rows = await h.runtime.deps.database.db
    .selectFrom('jobs')
    .select('id')
    .where('kind', '=', SEND_MESSAGE_JOB)
    .where(sql<string>`payload->>'payment_id'`, '=', paymentId)
    .execute();
  return rows.length;
}

describe('payments: delivery by the messaging and e-mail sandboxes', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Panadería La Espiga SAS');
    other = await h.company('Otra SAS');
  });
  after(() => h.close());
  const sms = () => h.runtime.deps.rails.test.messaging;
  const mail = () => h.runtime.deps.rails.test.email;
  const sentTo = (reference: string) => sms().sent.filter((m) => m.reference === reference);

  test('phone: the link goes out after commit by the messaging rail, and payment.message.delivered follows', async () => {
    const p = await createPayment(co, { phone: '+573001234567', reference: 'FV-2001' });
    assert.equal(p.channel, 'messaging');
    // Answered before anything was sent: the message is recorded, its job queued.
    const [recorded] = await messageRows(h, p.id);
    assert.match(recorded.id, /^msg_[0-9a-z]{26}$/);
    assert.equal(recorded.status, 'pending');
    assert.equal(recorded.kind, 'link');
    assert.equal(recorded.recipient, '+573001234567');
    assert.equal(sentTo(recorded.id).length, 0, 'never sent inside the request transaction');
    assert.equal(await sendJobs(h, p.id), 1);

    await runSends(h, [p.id]);
    const [sent] = sentTo(recorded.id);
    assert.ok(sent, 'the sandbox got the message');
    assert.equal(sent.to, '+573001234567');
    assert.ok(sent.text.includes(p.payment_link), sent.text);
    assert.match(sent.text, /^Panadería La Espiga SAS le envió una solicitud de pago: Factura FV-1001, por \$ 150\.000\. Pague aquí: /);
    assert.equal(sent.template, undefined, 'no template chosen');

    const [row] = await messageRows(h, p.id);
    assert.equal(row.status, 'delivered');
    assert.equal(row.provider_message_id, sent.providerMessageId);
    assert.equal(row.attempts, 1);
    const events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.delivered'],
    );
    const data = events[0].data;
    assert.equal(data.id, p.id);
    assert.equal(data.payment_link, p.payment_link);
    assert.equal(data.status, 'pending');
    assert.deepEqual(data.message, { id: row.id, channel: 'messaging', kind: 'link', recipient: '+573001234567', status: 'delivered' });

    const list = await co.req({ url: `/v1/payments/${p.id}/messages` });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.total, 1);
    assert.deepEqual(list.body.data[0], {
      id: row.id,
      payment_id: p.id,
      channel: 'messaging',
      kind: 'link',
      recipient: '+573001234567',
      template_id: null,
      status: 'delivered',
      error: null,
      reply_text: null,
      attempts: 1,
      held_until: null,
      is_test: true,
      created_at: list.body.data[0].created_at,
      updated_at: list.body.data[0].updated_at,
    });
    assert.equal(await sendJobs(h, p.id), 0, 'the job is done');
  });

  test('a repeated delivery report emits nothing twice', async () => {
    const p = await createPayment(co, { phone: '+573001234568' });
    await runSends(h, [p.id]);
    const [row] = await messageRows(h, p.id);
    await sms().report(row.provider_message_id!, 'delivered');
    const report = sms().reports.find((r) => r.providerMessageId === row.provider_message_id)!;
    await applyMessageStatus(h.runtime.deps, report.providerMessageId, report.status, report.detail, 'test');
    assert.equal((await messageEvents(h, p.id, 'payment.message.delivered')).length, 1);
  });

  test('phone ending in 0000: payment.message.failed with the reason', async () => {
    const p = await createPayment(co, { phone: '+573000000000' });
    await runSends(h, [p.id]);
    const [row] = await messageRows(h, p.id);
    assert.equal(row.status, 'failed');
    assert.equal(row.error, 'unreachable');
    const events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.failed'],
    );
    assert.deepEqual(events[0].data.message, {
      id: row.id,
      channel: 'messaging',
      kind: 'link',
      recipient: '+573000000000',
      status: 'failed',
      error: 'unreachable',
      remarks: 'unreachable',
    });
    // A late "delivered" after a failure does not revive it (and emits nothing).
    await sms().report(row.provider_message_id!, 'delivered');
    assert.equal((await messageEvents(h, p.id)).length, 1);
  });

  test('phone ending in 1111: payment.message.replied; each new reply is a new event, a repeated one is not', async () => {
    const p = await createPayment(co, { phone: '+573001111111' });
    await runSends(h, [p.id]);
    let [row] = await messageRows(h, p.id);
    assert.equal(row.status, 'replied');
    assert.equal(row.reply_text, 'Gracias, ya recibí el enlace.');
    let events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.replied'],
    );
    assert.deepEqual(events[0].data.message, {
      id: row.id,
      channel: 'messaging',
      kind: 'link',
      recipient: '+573001111111',
      status: 'replied',
      reply_text: 'Gracias, ya recibí el enlace.',
    });

    // The provider repeats the same report: nothing new.
    const first = sms().reports.find((r) => r.providerMessageId === row.provider_message_id)!;
    await applyMessageStatus(h.runtime.deps, first.providerMessageId, 'replied', first.detail, 'test');
    assert.equal((await messageEvents(h, p.id)).length, 1);

    // The payer writes again.
    h.clock.advance(1000);
    await sms().report(row.provider_message_id!, 'replied', { replyText: '¿Puedo pagar el viernes?' });
    [row] = await messageRows(h, p.id);
    assert.equal(row.reply_text, '¿Puedo pagar el viernes?');
    events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.replied', 'payment.message.replied'],
    );
    assert.equal(events[1].data.message.reply_text, '¿Puedo pagar el viernes?');
    // A late "delivered" never moves a replied message back.
    await sms().report(row.provider_message_id!, 'delivered');
    assert.equal((await messageEvents(h, p.id)).length, 2);
    assert.equal((await messageRows(h, p.id))[0].status, 'replied');
  });

  test('email: the e-mail goes out by the e-mail rail, delivered once the server accepts it', async () => {
    const p = await createPayment(co, { email: 'Pagador@Example.com', amount: 99000.5, expiration_date: '2099-12-31' });
    assert.equal(p.channel, 'email');
    await runSends(h, [p.id]);
    const [row] = await messageRows(h, p.id);
    const [m] = mail().sent.filter((e) => e.reference === row.id);
    assert.ok(m, 'the e-mail sandbox got it');
    assert.deepEqual(m.to, [{ name: '', address: 'pagador@example.com' }]);
    assert.equal(m.from.name, 'Panadería La Espiga SAS');
    assert.equal(m.subject, 'Panadería La Espiga SAS: solicitud de pago por $ 99.000,50');
    assert.ok(m.text.includes(p.payment_link));
    assert.match(m.text, /Vence: 31 de diciembre de 2099, 11:59 p\. m\./);
    assert.ok(m.html?.includes(`href="${p.payment_link}"`));
    assert.equal(row.status, 'delivered');
    assert.equal(row.channel, 'email');
    assert.equal(row.provider_message_id, m.messageId);
    const events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.delivered'],
    );
    assert.deepEqual(events[0].data.message, { id: row.id, channel: 'email', kind: 'link', recipient: 'pagador@example.com', status: 'delivered' });
  });

  test('resend: a second message, with the template chosen', async () => {
    const p = await createPayment(co, { phone: '+573002000001' });
    await runSends(h, [p.id]);
    const res = await co.req({ url: `/v1/payments/${p.id}`, body: { template_id: 'tpl_cobro_sms' } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.resend_count, 1);
    await runSends(h, [p.id]);
    const rows = await messageRows(h, p.id);
    assert.deepEqual(
      rows.map((r) => [r.kind, r.status, r.template_id]),
      [
        ['link', 'delivered', null],
        ['resend', 'delivered', 'tpl_cobro_sms'],
      ],
    );
    const [resent] = sentTo(rows[1].id);
    assert.equal(resent.to, '+573002000001');
    assert.ok(resent.text.includes(p.payment_link));
    assert.equal(resent.template, 'cobro_sms');
    assert.deepEqual(resent.variables, { company_name: 'Panadería La Espiga SAS', amount: '$ 150.000', payment_link: p.payment_link });
    assert.equal((await messageEvents(h, p.id, 'payment.message.delivered')).length, 2);
    const list = await co.req({ url: `/v1/payments/${p.id}/messages` });
    assert.deepEqual(
      list.body.data.map((m: any) => m.kind),
      ['resend', 'link'],
      'newest first',
    );

    // A resend of a partially paid payment asks for what is still due.
    await h.runtime.deps.database.db
      .updateTable('payments')
      .set({ status: 'partially_paid', amount_paid: 5000000n })
      .where('id', '=', p.id)
      .execute();
    await co.req({ url: `/v1/payments/${p.id}`, body: {} });
    await runSends(h, [p.id]);
    const third = sentTo((await messageRows(h, p.id))[2].id)[0];
    assert.match(third.text, /por \$ 100\.000\./);
  });

  test('cancel with notify: a cancellation message by the channel; without notify, nothing', async () => {
    const p = await createPayment(co, { phone: '+573003000001' });
    await runSends(h, [p.id]);
    const del = await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}`, body: { notify: true } });
    assert.equal(del.status, 200, del.raw);
    await runSends(h, [p.id]);
    const rows = await messageRows(h, p.id);
    assert.deepEqual(
      rows.map((r) => [r.kind, r.status]),
      [
        ['link', 'delivered'],
        ['cancellation', 'delivered'],
      ],
    );
    const [cancelled] = sentTo(rows[1].id);
    assert.equal(
      cancelled.text,
      'Panadería La Espiga SAS anuló la solicitud de pago: Factura FV-1001, por $ 150.000. Ya no debe pagarla; el enlace de pago dejó de funcionar.',
    );
    const events = await messageEvents(h, p.id, 'payment.message.delivered');
    assert.equal(events.at(-1)!.data.status, 'cancelled');
    assert.equal(events.at(-1)!.data.message.kind, 'cancellation');

    const quiet = await createPayment(co, { phone: '+573003000002' });
    await runSends(h, [quiet.id]);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${quiet.id}` })).status, 200);
    assert.equal((await messageRows(h, quiet.id)).length, 1, 'only the link');

    const byMail = await createPayment(co, { email: 'anulado@example.com' });
    await runSends(h, [byMail.id]);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${byMail.id}?notify=true` })).status, 200);
    await runSends(h, [byMail.id]);
    const mailRows = await messageRows(h, byMail.id);
    assert.deepEqual(
      mailRows.map((r) => [r.kind, r.status]),
      [
        ['link', 'delivered'],
        ['cancellation', 'delivered'],
      ],
    );
    const [m] = mail().sent.filter((e) => e.reference === mailRows[1].id);
    assert.equal(m.subject, 'Panadería La Espiga SAS: solicitud de pago anulada');
    assert.ok(!m.text.includes(byMail.payment_link), 'no link to pay in a cancellation');
  });

  test('receipts: once paid the payer gets a receipt by the payment’s channel (who, what, how much, how, when, reference); receipts false sends none', async () => {
    const p = await createPayment(co, { phone: '+573004440001', reference: 'FV-7001' });
    assert.equal(p.receipts, true);
    await runSends(h, [p.id]);
    const paid = await co.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } });
    assert.equal(paid.status, 200, paid.raw);
    const receipt = (await messageRows(h, p.id)).find((m) => m.kind === 'receipt');
    assert.ok(receipt, 'recorded with the payment');
    await runSends(h, [p.id]);
    const [sent] = sentTo(receipt.id);
    assert.ok(sent, 'sent by the messaging rail');
    assert.match(sent.text, /^Panadería La Espiga SAS recibió su pago de .+ por \$ 150\.000 \(.+\), el .+\. Referencia: FV-7001\.$/);
    assert.equal((await messageRows(h, p.id)).find((m) => m.kind === 'receipt')!.status, 'delivered');
    const byMail = await createPayment(co, { email: 'recibos@example.com', reference: 'FV-7002' });
    await co.req({ url: `/v1/payments/${byMail.id}/resolve`, body: { action: 'approve' } });
    await runSends(h, [byMail.id]);
    const mailed = mail().sent.find((m) => m.subject === 'Panadería La Espiga SAS: recibo de su pago' && m.text.includes('FV-7002'));
    assert.ok(mailed, 'an e-mail receipt');
    assert.match(mailed.text, /Medio de pago: /);

    const quiet = await createPayment(co, { phone: '+573004440002', receipts: false });
    assert.equal(quiet.receipts, false);
    await co.req({ url: `/v1/payments/${quiet.id}/resolve`, body: { action: 'approve' } });
    assert.equal((await messageRows(h, quiet.id)).filter((m) => m.kind === 'receipt').length, 0);
  });

  test('reference (portal) and manual channels send nothing, for create, resend or cancel with notify', async () => {
    const portal = await createPayment(co, { reference: 'FV-3001' });
    const manual = await createPayment(co, {});
    assert.equal(portal.channel, 'portal');
    assert.equal(manual.channel, 'manual');
    for (const p of [portal, manual]) {
      assert.equal((await co.req({ url: `/v1/payments/${p.id}`, body: {} })).status, 200);
      assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}`, body: { notify: true } })).status, 200);
      assert.equal(await sendJobs(h, p.id), 0);
      assert.deepEqual(await messageRows(h, p.id), []);
      const list = await co.req({ url: `/v1/payments/${p.id}/messages` });
      assert.equal(list.body.total, 0);
    }
  });

  test('a link for a payment cancelled before the job ran is not sent: failed, with the reason', async () => {
    const p = await createPayment(co, { phone: '+573004000001' });
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}` })).status, 200);
    await runSends(h, [p.id]);
    const [row] = await messageRows(h, p.id);
    assert.equal(row.status, 'failed');
    assert.equal(row.error, 'not sent: the payment is cancelled');
    assert.equal(sentTo(row.id).length, 0);
    assert.deepEqual(
      (await messageEvents(h, p.id)).map((e) => e.type),
      ['payment.message.failed'],
    );
  });

  test('a rail failure neither fails nor rolls back the request; retryable errors retry with the same reference', async () => {
    const rail = sms();
    const original = rail.send.bind(rail);
    const references: string[] = [];
    let failure: MessagingError | null = new MessagingError('provider_error', 'gateway answered 503', true, true, 503);
    rail.send = async (m) => {
      references.push(m.reference);
      if (failure) throw failure;
      return original(m);
    };
    try {
      const p = await createPayment(co, { phone: '+573005000001' });
      await runSends(h, [p.id]);
      let [row] = await messageRows(h, p.id);
      assert.equal(row.status, 'pending', 'kept for the retry');
      assert.equal(row.error, 'provider_error: gateway answered 503');
      assert.equal(row.attempts, 1);
      const got = await co.req({ url: `/v1/payments/${p.id}` });
      assert.equal(got.status, 200);
      assert.equal(got.body.status, 'pending', 'the payment stands');
      assert.equal(await sendJobs(h, p.id), 1, 'the job waits for its retry');

      failure = null;
      h.clock.advance(3_000); // past the queue's backoff after one attempt (2 s)
      await runSends(h, [p.id]);
      [row] = await messageRows(h, p.id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.error, null);
      assert.equal(row.attempts, 2);
      assert.deepEqual(references, [row.id, row.id], 'the same reference on every attempt');

      // Refused for good: failed at once, with payment.message.failed.
      failure = new MessagingError('rejected', 'provider answered 400', false, false, 400);
      const refused = await createPayment(co, { phone: '+573005000002' });
      await runSends(h, [refused.id]);
      const [bad] = await messageRows(h, refused.id);
      assert.equal(bad.status, 'failed');
      assert.equal(bad.error, 'rejected: provider answered 400');
      assert.equal(await sendJobs(h, refused.id), 0);
      const events = await messageEvents(h, refused.id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['payment.message.failed'],
      );
      assert.equal(events[0].data.message.error, 'rejected: provider answered 400');
    } finally {
      rail.send = original;
    }
  });

  test('the last attempt of a retryable failure gives up: failed, with payment.message.failed', async () => {
    const rail = sms();
    const original = rail.send.bind(rail);
    rail.send = async () => {
      throw new MessagingError('timeout', 'no answer in 10000 ms', true, true);
    };
    try {
      const p = await createPayment(co, { phone: '+573006000001' });
      const [row] = await messageRows(h, p.id);
      const job = await h.runtime.deps.database.db
        .selectFrom('jobs')
        .select(['id', 'payload', 'max_attempts'])
        .where('kind', '=', SEND_MESSAGE_JOB)
        .where(sql<string>`payload->>'payment_id'`, '=', p.id)
        .executeTakeFirstOrThrow();
      await runSendMessage(h.runtime.deps, job.payload, { id: job.id, attempts: job.max_attempts });
      const [failed] = await messageRows(h, p.id);
      assert.equal(failed.id, row.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error, `gave up after ${job.max_attempts} attempts: timeout: no answer in 10000 ms`);
      assert.deepEqual(
        (await messageEvents(h, p.id)).map((e) => e.type),
        ['payment.message.failed'],
      );
      await h.runtime.deps.database.db.deleteFrom('jobs').where('id', '=', job.id).execute();
    } finally {
      rail.send = original;
    }
  });

  test('GET /payments/{id}/messages is scoped by company and environment', async () => {
    const p = await createPayment(co, { phone: '+573007000001' });
    await expectScoped(co, other, { url: `/v1/payments/${p.id}/messages` });
    expectError(await co.req({ url: '/v1/payments/pay_nope/messages' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: `/v1/payments/${p.id}/messages`, key: null }), 401, 'unauthenticated');
    expectError(await co.req({ url: `/v1/payments/${p.id}/messages`, key: co.publishable_keys.test }), 404, 'record_not_found');
    await runSends(h, [p.id]);
  });

  test('the status callback route is the live provider’s: the sandbox answers 404', async () => {
    const res = await co.req({ url: '/v1/rails/messaging/status', key: null, body: { provider_message_id: 'x', status: 'delivered' } });
    assert.equal(res.status, 404);
    assert.match(res.body.error, /sandbox/);
  });
});

describe('payments: live without a channel, never simulated', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness(); // no MESSAGING_PROVIDER, no SMTP_URL
    co = await h.company('Sin Canal SAS');
  });
  after(() => h.close());

  test('phone or e-mail: failed at once with remarks channel_not_configured, payment.message.failed, shown on the payment; nothing sent, no job', async () => {
    for (const [body, channel] of [
      [{ phone: '+573001234567' }, 'messaging'],
      [{ email: 'pagador@example.com' }, 'email'],
    ] as const) {
      const p = await createPayment(co, body, 'live');
      assert.equal(p.channel, channel);
      assert.deepEqual(p.message, { status: 'failed', remarks: 'channel_not_configured' }, 'the answer already says so');
      const [row] = await messageRows(h, p.id);
      assert.deepEqual([row.status, row.error], ['failed', 'channel_not_configured']);
      assert.equal(await sendJobs(h, p.id), 0, 'nothing queued: there is nothing that could send it');
      const events = await messageEvents(h, p.id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['payment.message.failed'],
      );
      assert.equal(events[0].data.message.remarks, 'channel_not_configured');
      assert.deepEqual((await co.req({ url: `/v1/payments/${p.id}`, env: 'live' })).body.message, {
        status: 'failed',
        remarks: 'channel_not_configured',
      });
      const listed = (await co.req({ url: '/v1/payments?per_page=100', env: 'live' })).body.data.find((x: { id: string }) => x.id === p.id);
      assert.deepEqual(listed.message, { status: 'failed', remarks: 'channel_not_configured' });
    }
    // The live rails are refusals, not the sandbox: a direct send is refused too.
    await assert.rejects(h.runtime.deps.rails.live.messaging.send({ to: '+573001234567', text: 'x', reference: 'r' }), /channel_not_configured/);
    await assert.rejects(h.runtime.deps.rails.live.email.send({ to: 'a@example.com', subject: 's', text: 't' }), /channel_not_configured/);
    // Test keys keep the sandbox.
    const t = await createPayment(co, { phone: '+573001234567' });
    assert.deepEqual(t.message, { status: 'pending', remarks: null });
  });
});

describe('payments: live e-mail through a real SMTP server', () => {
  let h: Harness;
  let sink: SmtpSink;
  let co: Company;
  before(async () => {
    sink = await startSmtpSink();
    h = await createHarness({ SMTP_URL: sink.url(), SMTP_FROM: 'Recaudo <cobros@recaudo.test>' });
    co = await h.company('Ferretería El Tornillo SAS');
  });
  after(async () => {
    await h.close();
    await sink.close();
  });

  test('a live payment by e-mail reaches the SMTP server; test keys stay on the sandbox', async () => {
    assert.equal(h.runtime.deps.rails.live.email.provider, 'smtp');
    const p = await createPayment(co, { email: 'tesoreria@cliente.example', title: 'Pedido Ñandú #7' }, 'live');
    assert.equal(p.is_test, false);
    await runSends(h, [p.id]);
    const got = await sink.nextMessage();
    const mail = parseMail(got.raw);
    const [row] = await messageRows(h, p.id);
    assert.deepEqual(got.to, ['tesoreria@cliente.example']);
    assert.equal(got.from, 'cobros@recaudo.test');
    assert.equal(mail.header('subject'), 'Ferretería El Tornillo SAS: solicitud de pago por $ 150.000');
    assert.match(mail.header('from') ?? '', /Ferretería El Tornillo SAS/);
    assert.equal(mail.header('x-recaudo-reference'), row.id);
    assert.ok(mail.text?.includes(p.payment_link), mail.text);
    assert.ok(mail.text?.includes('Pedido Ñandú #7'));
    assert.ok(mail.html?.includes(`href="${p.payment_link}"`));
    assert.equal(row.status, 'delivered');
    assert.equal(row.environment, 'live');
    const events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.delivered'],
    );
    assert.equal(events[0].data.is_test, false);

    // The same company with its test key: the sandbox, never the SMTP server.
    const t = await createPayment(co, { email: 'tesoreria@cliente.example' });
    await runSends(h, [t.id]);
    const [testRow] = await messageRows(h, t.id);
    assert.equal(testRow.status, 'delivered');
    assert.equal(h.runtime.deps.rails.test.email.sent.filter((m) => m.reference === testRow.id).length, 1);
    assert.equal(sink.messages.length, 1);
  });

  test('an SMTP refusal fails the message for good; the payment stands', async () => {
    sink.rejectRecipient = (address) => (address.startsWith('nadie@') ? '550 5.1.1 no such user' : undefined);
    try {
      const p = await createPayment(co, { email: 'nadie@cliente.example' }, 'live');
      await runSends(h, [p.id]);
      const [row] = await messageRows(h, p.id);
      assert.equal(row.status, 'failed');
      assert.match(row.error ?? '', /^rejected: /);
      assert.deepEqual(
        (await messageEvents(h, p.id)).map((e) => e.type),
        ['payment.message.failed'],
      );
      assert.equal((await co.req({ url: `/v1/payments/${p.id}`, env: 'live' })).body.status, 'pending');
    } finally {
      sink.rejectRecipient = undefined;
    }
  });
});

describe('payments: live messaging through the http provider and its status callback', () => {
  const TOKEN = 'tok_callback-1';
  const received: { headers: http.IncomingHttpHeaders; body: any }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `prov-${received.length}-${process.pid}-${Date.now()}` }));
    });
  });
  let h: Harness;
  let co: Company;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    h = await createHarness({ MESSAGING_PROVIDER: 'http', MESSAGING_HTTP_URL: `http://127.0.0.1:${port}/send`, MESSAGING_HTTP_TOKEN: TOKEN });
    co = await h.company('Tienda Ñandú SAS');
  });
  after(async () => {
    await h.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    received.length = 0;
  });
  const callback = (body: unknown, token: string | null = TOKEN) =>
    co.req({ url: '/v1/rails/messaging/status', key: null, body, headers: token ? { authorization: `Bearer ${token}` } : {} });

  test('sent → the gateway reports delivered on the callback route → payment.message.delivered once', async () => {
    const p = await createPayment(co, { phone: '+573101234567' }, 'live');
    await runSends(h, [p.id]);
    assert.equal(received.length, 1);
    const [row] = await messageRows(h, p.id);
    assert.equal(received[0].headers['idempotency-key'], row.id);
    assert.equal(received[0].body.reference, row.id);
    assert.equal(received[0].body.to, '+573101234567');
    assert.ok(received[0].body.text.includes(p.payment_link));
    assert.equal(row.status, 'sent', 'handed over; the outcome comes later');
    assert.ok(row.provider_message_id?.startsWith('prov-'));

    const report = { provider_message_id: row.provider_message_id, status: 'delivered', reference: row.id, at: '2025-05-15T10:00:00-05:00' };
    expectCallback(await callback(report, 'wrong'), 401);
    expectCallback(await callback({ status: 'delivered' }), 400);
    assert.equal((await messageRows(h, p.id))[0].status, 'sent', 'refused reports change nothing');
    expectCallback(await callback(report), 200);
    expectCallback(await callback(report), 200); // the gateway repeats itself
    assert.equal((await messageRows(h, p.id))[0].status, 'delivered');
    const events = await messageEvents(h, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.message.delivered'],
    );
    assert.equal(events[0].data.is_test, false);

    // A reply found by the provider's id alone (no reference echoed), then the same reply again.
    const reply = { provider_message_id: row.provider_message_id, status: 'replied', reply_text: 'Listo, pago hoy', at: '2025-05-15T10:05:00-05:00' };
    expectCallback(await callback(reply), 200);
    expectCallback(await callback(reply), 200);
    const replies = await messageEvents(h, p.id, 'payment.message.replied');
    assert.equal(replies.length, 1);
    assert.equal(replies[0].data.message.reply_text, 'Listo, pago hoy');
    // A report for a message Recaudo never sent is acknowledged and ignored.
    expectCallback(await callback({ provider_message_id: 'prov-unknown', status: 'delivered', reference: 'msg_unknown' }), 200);
  });
});

function expectCallback(res: { status: number; raw: string }, status: number): void {
  assert.equal(res.status, status, res.raw);
}
