import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createHarness, eventually, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { Receiver } from '../../../test/receiver.ts';
import { campaignCompany } from '../../../test/support/campaigns.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { dispatchers } from './dispatcher.ts';
import { urlResolvers } from './service.ts';

const hook = (url: string, events = ['payment.created']) => ({ name: 'Hook', url, events });

async function emit(h: Harness, co: Company, type: string, count = 1): Promise<void> {
  await h.runtime.deps.database.db.transaction().execute(async (trx) => {
    for (let i = 0; i < count; i++)
      await emitEvent({ companyId: co.company.id, environment: 'test', db: trx, deps: h.runtime.deps }, type, { id: `obj_${i}` }, h.clock.now());
  });
}

async function deliveries(co: Company, webhookId: string) {
  return (await co.req({ url: `/v1/webhooks/${webhookId}/deliveries` })).body.data;
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * A receiver with three paths: /fast answers 200 at once, /hold keeps the request until the test
 * answers it, /trickle answers 200 and then one byte every 100 ms for 3 s.
 */
class ScriptedReceiver {
  readonly held: http.ServerResponse[] = [];
  fast = 0;
  url = '';
  private server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/fast') {
        this.fast++;
        return res.end('ok');
      }
      if (req.url === '/hold') return this.held.push(res);
      res.writeHead(200, { 'content-type': 'text/plain' });
      let sent = 0;
      const drip = setInterval(() => (++sent >= 30 ? res.end('.') : res.write('.')), 100);
      res.on('close', () => clearInterval(drip));
    });
  });

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  answer(index: number, status: number): void {
    this.held[index].writeHead(status).end(status < 300 ? 'ok' : 'no');
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
  }
}

describe('by default (ALLOW_PRIVATE_WEBHOOKS unset, whatever NODE_ENV says): test webhooks, flows and campaign media follow the live address rules', () => {
  let h: Harness;
  let co: Company;
  let rx: Receiver;
  before(async () => {
    // The suites' harness opts in for its local receivers; '' is "unset", the default an operator gets.
    h = await createHarness({ ALLOW_PRIVATE_WEBHOOKS: '', NODE_ENV: 'development' });
    co = await h.company();
    rx = await new Receiver().start();
  });
  after(async () => {
    await rx.close();
    await h.close();
  });

  test('private, loopback, link-local and CGNAT URLs are refused at create and update', async () => {
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://10.1.2.3/x',
      'http://169.254.169.254/latest/meta-data',
      'http://100.64.0.1/x',
      'http://localhost:3000/x',
      'http://[::1]/x',
      'http://[::127.0.0.1]/x',
      'http://[::ffff:0:10.0.0.1]/x',
      'http://[2002:a9fe:a9fe::]/x',
      'http://[64:ff9b:1::a00:1]/x',
      'http://[fd00::1]/x',
    ]) {
      expectValidation(await co.req({ url: '/v1/webhooks', body: hook(url) }), 'url');
    }
    urlResolvers.set(h.runtime.deps, async () => ['10.0.0.7']);
    try {
      expectValidation(await co.req({ url: '/v1/webhooks', body: hook('http://intranet.example.com/x') }), 'url');
    } finally {
      urlResolvers.delete(h.runtime.deps);
    }
    const ok = await co.req({ url: '/v1/webhooks', body: hook('http://93.184.216.34/hook') });
    assert.equal(ok.status, 200, 'a test key keeps http to a public address');
    expectValidation(await co.req({ method: 'PUT', url: `/v1/webhooks/${ok.body.data.id}`, body: { url: 'http://192.168.0.10/x' } }), 'url');
  });

  test('a flow calling a private URL and campaign media on a private address are refused the same way', async () => {
    for (const url of ['http://127.0.0.1:9/flow', 'http://169.254.169.254/latest/meta-data', 'http://localhost:8080/x']) {
      const flow = await co.req({
        url: '/v1/flows',
        idem: false,
        body: { name: 'Privado', event: 'charge.paid', action: { type: 'call_url', url } },
      });
      expectValidation(flow, 'action.url');
    }
    const shop = await campaignCompany(h, 'Medios Privados SAS');
    const media = await shop.req({
      url: '/v1/campaigns/import-messages',
      body: { template: 'cobro_factura', phones: ['+573001234567'], image_url: `${rx.url}/a.png`, optional_1: 'Hola' },
    });
    expectValidation(media, 'image_url');
    assert.match(media.body.errors.image_url.join(' '), /private|loopback/);
  });

  test('every delivery is checked again: a stored private URL (by address or by name) gets no request', async () => {
    const port = new URL(rx.url).port;
    const ids: string[] = [];
    for (const name of ['a', 'b']) {
      ids.push((await co.req({ url: '/v1/webhooks', body: hook(`http://93.184.216.34/${name}`, ['charge.paid']) })).body.data.id);
    }
    // As if stored while private webhooks were allowed.
    const db = h.runtime.deps.database.db;
    await db.updateTable('webhooks').set({ url: rx.url }).where('id', '=', ids[0]).execute();
    await db
      .updateTable('webhooks')
      .set({ url: `http://localhost:${port}/hook` })
      .where('id', '=', ids[1])
      .execute();
    await emit(h, co, 'charge.paid');
    assert.equal(await h.deliverWebhooks(), 2);
    assert.equal(rx.received.length, 0);
    for (const id of ids) {
      const [d] = await deliveries(co, id);
      assert.equal(d.status, 'pending');
      assert.match(d.last_error, /EADDRNOTPUBLIC/);
      assert.equal(d.attempt_history[0].response_excerpt, null);
    }
  });
});

describe('the URL check runs outside the request transaction', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  test('a slow DNS lookup for a live URL does not hold up other requests; answers are unchanged', async () => {
    let release!: (addresses: string[]) => void;
    let lookups = 0;
    urlResolvers.set(h.runtime.deps, () => {
      lookups++;
      return new Promise((resolve) => (release = resolve));
    });
    try {
      const creating = co.req({ url: '/v1/webhooks', body: hook('https://hooks.example.com/x'), env: 'live' });
      await eventually(async () => lookups > 0, 3_000);
      // On PGlite a transaction holds the only session: a lookup inside one would stall this.
      const other = await within(co.req({ url: '/v1/customers', body: { first_name: 'Ana' }, env: 'live' }), 1_500, 'a request during the lookup');
      assert.equal(other.status, 200, other.raw);
      release(['93.184.216.34']);
      const created = await creating;
      assert.equal(created.status, 200, created.raw);

      urlResolvers.set(h.runtime.deps, async () => ['10.0.0.7']);
      const refused = await co.req({ url: '/v1/webhooks', body: hook('https://hooks.example.com/x'), env: 'live' });
      expectValidation(refused, 'url');
      assert.deepEqual(refused.body.errors.url, ['must not resolve to a private, loopback or link-local address']);
      expectValidation(
        await co.req({ method: 'PUT', url: `/v1/webhooks/${created.body.data.id}`, body: { url: 'https://other.example.com/x' }, env: 'live' }),
        'url',
      );
      // Body validation still answers first, as before.
      const both = await co.req({ url: '/v1/webhooks', body: { ...hook('https://hooks.example.com/x'), name: '' }, env: 'live' });
      expectValidation(both, 'name');
      assert.equal(both.body.errors.url, undefined);
    } finally {
      urlResolvers.delete(h.runtime.deps);
    }
  });
});

describe('webhook attempts under slow receivers', () => {
  let rx: ScriptedReceiver;
  before(async () => {
    rx = await new ScriptedReceiver().start();
  });
  after(() => rx.close());

  test('an attempt has a hard deadline: a receiver trickling bytes is cut off at WEBHOOK_TIMEOUT_MS', async () => {
    const h = await createHarness({ WEBHOOK_TIMEOUT_MS: '300', WEBHOOK_RETRY_SCHEDULE: '10s' });
    try {
      const co = await h.company();
      const w = (await co.req({ url: '/v1/webhooks', body: hook(`${rx.url}/trickle`) })).body.data;
      await emit(h, co, 'payment.created');
      const started = Date.now();
      assert.equal(await h.deliverWebhooks(), 1);
      const took = Date.now() - started;
      assert.ok(took < 1_500, `the attempt took ${took} ms (the receiver trickles for 3 s)`);
      const [d] = await deliveries(co, w.id);
      assert.equal(d.status, 'pending');
      assert.match(d.last_error, /timed out/);
      assert.equal(d.attempt_history[0].status_code, null);
    } finally {
      await h.close();
    }
  });

  describe('with leases and slots', () => {
    let h: Harness;
    before(async () => {
      h = await createHarness({ WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_CONCURRENCY: '2', WEBHOOK_RETRY_SCHEDULE: '10s,20s,40s' });
    });
    after(() => h.close());

    test('free slots are refilled at once: a slow receiver holds one slot, not a batch', async () => {
      const co = await h.company('Slots SAS');
      const slow = (await co.req({ url: '/v1/webhooks', body: hook(`${rx.url}/hold`, ['payment.created']) })).body.data;
      const fast = (await co.req({ url: '/v1/webhooks', body: hook(`${rx.url}/fast`, ['charge.paid']) })).body.data;
      await emit(h, co, 'payment.created');
      h.clock.advance(1);
      await emit(h, co, 'charge.paid', 6);
      const held = rx.held.length;
      const fastBefore = rx.fast;
      const dispatcher = dispatchers.get(h.runtime.deps)!;
      dispatcher.onlyCompanies = [co.company.id];
      dispatcher.poller.start();
      try {
        // Two slots: the held one stays busy; the six others go through the second slot meanwhile.
        await eventually(async () => rx.fast - fastBefore >= 6, 3_000);
        assert.equal(rx.held.length, held + 1);
        rx.answer(held, 200);
        await eventually(async () => (await deliveries(co, slow.id))[0].status === 'succeeded', 5_000);
        const done = await deliveries(co, fast.id);
        assert.equal(done.length, 6);
        await eventually(async () => (await deliveries(co, fast.id)).every((d: { status: string }) => d.status === 'succeeded'), 5_000);
      } finally {
        await dispatcher.poller.stop();
        dispatcher.onlyCompanies = undefined;
      }
    });

    test('a worker whose lease lapsed cannot overwrite the newer lease or its outcome', async () => {
      const co = await h.company('Lease SAS');
      const w = (await co.req({ url: '/v1/webhooks', body: hook(`${rx.url}/hold`, ['cashout.created']) })).body.data;
      await emit(h, co, 'cashout.created');
      const first = rx.held.length;
      const stale = h.deliverWebhooks(); // worker A: its receiver dawdles
      await eventually(async () => rx.held.length > first, 3_000);
      h.clock.advance(8_000); // past A's lease (timeout 5 s + 2.5 s)
      const fresh = h.deliverWebhooks(); // worker B leases it again
      await eventually(async () => rx.held.length > first + 1, 3_000);

      rx.answer(first, 500); // A's late answer
      assert.equal(await stale, 1);
      let [d] = await deliveries(co, w.id);
      assert.equal(d.attempts, 2);
      assert.equal(d.status, 'pending');
      assert.equal(d.last_status_code, null, "A's result does not settle the delivery");
      assert.equal(d.attempt_history.length, 1, "A's attempt is recorded");
      const lease = await h.runtime.deps.database.db
        .selectFrom('webhook_deliveries')
        .select('locked_until')
        .where('id', '=', d.id)
        .executeTakeFirstOrThrow();
      assert.ok(lease.locked_until, "B's lease is kept");
      h.clock.advance(4_000); // past A's would-be retry time (10 s + jitter), within B's lease
      assert.equal(await h.deliverWebhooks(), 0, 'nobody else sends it while B holds it');

      rx.answer(first + 1, 200);
      assert.equal(await fresh, 1);
      [d] = await deliveries(co, w.id);
      assert.equal(d.status, 'succeeded');
      assert.equal(d.attempts, 2);
      assert.deepEqual(
        d.attempt_history.map((a: { status_code: number }) => a.status_code),
        [500, 200],
      );
    });
  });
});
