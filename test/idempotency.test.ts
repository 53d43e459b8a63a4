import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './fault-harness.ts';
import { createHarness, ENGINE, expectError, type Company, type Harness } from './harness.ts';

const body = { first_name: 'Idem', last_name: 'Potent', email: 'idem@example.com' };

async function countCustomers(co: Company, email = 'idem@example.com'): Promise<number> {
  const res = await co.req({ url: `/v1/customers?filter[email]=${encodeURIComponent(email)}` });
  return res.body.total;
}

describe('idempotency', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('POST without x-idempotency is 409 idempotency_error; Idempotency-Key is accepted', async () => {
    const co = await h.company();
    expectError(await co.req({ url: '/v1/customers', body, idem: false }), 409, 'idempotency_error', 10003);
    assert.equal(await countCustomers(co), 0);
    const viaAlias = await co.req({ url: '/v1/customers', body, idem: false, headers: { 'idempotency-key': 'alias-1' } });
    assert.equal(viaAlias.status, 200, viaAlias.raw);
    const replay = await co.req({ url: '/v1/customers', body, idem: 'alias-1' });
    assert.equal(replay.raw, viaAlias.raw, 'both header names share one key space');
    expectError(await co.req({ url: '/v1/customers', body, idem: 'bad\u0001key' }), 409, 'idempotency_error', 10003);
    expectError(await co.req({ url: '/v1/customers', body, idem: 'k'.repeat(256) }), 409, 'idempotency_error', 10003);
    assert.equal((await co.req({ url: '/v1/customers', body, idem: 'k'.repeat(255) })).status, 200);
  });

  test('a repeat within the window replays the identical response without running again', async () => {
    const co = await h.company();
    const first = await co.req({ url: '/v1/customers', body, idem: 'replay-1' });
    assert.equal(first.status, 200);
    h.clock.advance(30_000);
    const second = await co.req({ url: '/v1/customers', body, idem: 'replay-1' });
    assert.equal(second.status, first.status);
    assert.equal(second.raw, first.raw);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(await countCustomers(co), 1);
  });

  test('a repeat whose body lists its fields in another order than the schema replays too', async () => {
    const co = await h.company();
    // Validation rebuilds the body in the schema's key order; the fingerprint is of the body as sent.
    const shuffled = { email: 'orden@example.com', last_name: 'Potent', first_name: 'Idem' };
    const first = await co.req({ url: '/v1/customers', body: shuffled, idem: 'order-1' });
    assert.equal(first.status, 200, first.raw);
    const second = await co.req({ url: '/v1/customers', body: shuffled, idem: 'order-1' });
    assert.equal(second.status, 200, second.raw);
    assert.equal(second.raw, first.raw);
    assert.equal(await countCustomers(co, 'orden@example.com'), 1);
  });

  test('after the window the same key runs again', async () => {
    const co = await h.company();
    const first = await co.req({ url: '/v1/customers', body, idem: 'window-1' });
    h.clock.advance(61_000);
    const second = await co.req({ url: '/v1/customers', body, idem: 'window-1' });
    assert.equal(second.status, 200);
    assert.notEqual(second.body.id, first.body.id);
    assert.equal(await countCustomers(co), 2);
    // ...and the new result is what replays now, even with another body after the window.
    const third = await co.req({ url: '/v1/customers', body, idem: 'window-1' });
    assert.equal(third.body.id, second.body.id);
  });

  test('an error response is not remembered', async () => {
    const co = await h.company();
    const bad = await co.req({ url: '/v1/customers', body: { ...body, email: 'nope' }, idem: 'err-1' });
    expectError(bad, 422, 'validation_error');
    const badAgain = await co.req({ url: '/v1/customers', body: { ...body, email: 'nope' }, idem: 'err-1' });
    expectError(badAgain, 422, 'validation_error');
    const good = await co.req({ url: '/v1/customers', body, idem: 'err-1' });
    assert.equal(good.status, 200, good.raw);
    assert.equal(await countCustomers(co), 1);
  });

  test('the same key with a different request is 409', async () => {
    const co = await h.company();
    assert.equal((await co.req({ url: '/v1/customers', body, idem: 'mismatch-1' })).status, 200);
    const other = await co.req({ url: '/v1/customers', body: { ...body, first_name: 'Other' }, idem: 'mismatch-1' });
    expectError(other, 409, 'idempotency_error', 10003);
    assert.equal(await countCustomers(co), 1);
  });

  test('keys are scoped by company and environment', async () => {
    const a = await h.company();
    const b = await h.company();
    const ra = await a.req({ url: '/v1/customers', body, idem: 'shared-key' });
    const rb = await b.req({ url: '/v1/customers', body, idem: 'shared-key' });
    const rl = await a.req({ url: '/v1/customers', body, idem: 'shared-key', env: 'live' });
    assert.notEqual(ra.body.id, rb.body.id);
    assert.notEqual(ra.body.id, rl.body.id);
    assert.equal(rl.body.is_test, false);
  });

  test('20 concurrent duplicates create one resource and get identical responses', async () => {
    const co = await h.company();
    const results = await Promise.all(Array.from({ length: 20 }, () => co.req({ url: '/v1/customers', body, idem: 'burst-1' })));
    for (const r of results) {
      assert.equal(r.status, 200, r.raw);
      assert.equal(r.raw, results[0].raw);
    }
    assert.equal(await countCustomers(co), 1);
  });
});

function startServer(port: number, databaseUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_TEST: '100000',
      RUN_WORKERS: 'false',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 60_000;
    const poll = async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        if (res.ok) return resolve(child);
      } catch {
        /* not up yet */
      }
      if (child.exitCode !== null || Date.now() > deadline) return reject(new Error(`server on ${port} did not start: ${stderr}`));
      setTimeout(poll, 100);
    };
    void poll();
  });
}

describe('idempotency across two API processes on one PostgreSQL', { skip: ENGINE !== 'postgres' && 'PostgreSQL only' }, () => {
  test('concurrent duplicates spread over two processes create one resource', async () => {
    const h = await createHarness();
    const children: ChildProcess[] = [];
    try {
      const co = await h.company();
      const ports = [await freePort(), await freePort()];
      for (const port of ports) children.push(await startServer(port, h.config.databaseUrl!));
      const send = (port: number) =>
        fetch(`http://127.0.0.1:${port}/v1/customers`, {
          method: 'POST',
          headers: { authorization: `Bearer ${co.keys.test}`, 'content-type': 'application/json', 'x-idempotency': 'two-procs' },
          body: JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, text: await r.text() }));
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(ports[i % 2])));
      for (const r of results) {
        assert.equal(r.status, 200, r.text);
        assert.equal(r.text, results[0].text);
      }
      assert.equal(await countCustomers(co), 1);
    } finally {
      for (const c of children) {
        c.kill('SIGTERM');
        if (c.exitCode === null) await once(c, 'exit');
      }
      await h.close();
    }
  });
});
