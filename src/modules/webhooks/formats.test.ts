import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createHarness, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { Receiver } from '../../../test/receiver.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { EVENT_CATALOGUE, EVENT_TYPES } from '../events/catalog.ts';

/**
 * Webhook body formats (docs/webhooks.md "Body formats") and the event catalogue
 * (docs/webhooks.md "Event catalogue"): a webhook subscribes only to types the service emits.
 */
const hook = (url: string, events: string[], extra: Record<string, unknown> = {}) => ({ name: 'Hook', url, events, ...extra });
const emitted = EVENT_TYPES.filter((t) => EVENT_CATALOGUE[t].emits);
const notEmitted = EVENT_TYPES.filter((t) => !EVENT_CATALOGUE[t].emits);

describe('event catalogue and subscriptions', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  test('GET /v1/events/types lists every SPEC type with emitted and resource', async () => {
    const res = await co.req({ url: '/v1/events/types' });
    assert.equal(res.status, 200, res.raw);
    const types = res.body.data as { type: string; emitted: boolean; resource: string }[];
    assert.deepEqual(
      types.map((t) => t.type),
      [...EVENT_TYPES],
    );
    for (const t of types) {
      assert.equal(t.emitted, EVENT_CATALOGUE[t.type as (typeof EVENT_TYPES)[number]].emits, t.type);
      assert.match(t.resource, /^[a-z_]+$/, t.type);
    }
    const byType = new Map(types.map((t) => [t.type, t]));
    assert.equal(byType.get('charge.paid')!.emitted, true);
    assert.equal(byType.get('payment.deleted')!.emitted, true, 'DELETE /v1/payments/{id} emits it');
    assert.equal(byType.get('wallet.transaction.created')!.resource, 'wallet_transaction');
    assert.equal(byType.get('payment.message.replied')!.resource, 'payment');
  });

  test('a webhook may subscribe to every emitted type, and to no type without an emitter (422 on events.N)', async () => {
    const all = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/all', emitted) });
    assert.equal(all.status, 200, all.raw);
    assert.deepEqual(all.body.data.events, emitted);
    // Types that have no emitter today (the catalogue's emits: false); empty once all are built.
    for (const type of notEmitted) {
      const res = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/x', ['charge.paid', type]) });
      expectValidation(res, 'events.1');
      assert.match(JSON.stringify(res.body), /not emitted by this service/);
      expectValidation(await co.req({ method: 'PUT', url: `/v1/webhooks/${all.body.data.id}`, body: { events: [type] } }), 'events.0');
    }
    const after = await co.req({ url: `/v1/webhooks/${all.body.data.id}` });
    assert.deepEqual(after.body.data.events, emitted, 'a refused update changes nothing');
  });

  test('a type flagged emits: false is refused at create and update (the mechanism, with a flag flipped here)', async () => {
    const entry = EVENT_CATALOGUE['charge.disputed'] as { emits: boolean };
    const was = entry.emits;
    entry.emits = false;
    try {
      const res = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/x', ['charge.paid', 'charge.disputed']) });
      expectValidation(res, 'events.1');
      assert.match(JSON.stringify(res.body), /not emitted by this service/);
      const w = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/y', ['charge.paid']) });
      expectValidation(await co.req({ method: 'PUT', url: `/v1/webhooks/${w.body.data.id}`, body: { events: ['charge.disputed'] } }), 'events.0');
      assert.deepEqual((await co.req({ url: `/v1/webhooks/${w.body.data.id}` })).body.data.events, ['charge.paid']);
    } finally {
      entry.emits = was;
    }
  });
});

describe('webhook payload_format', () => {
  let h: Harness;
  let co: Company;
  let rx: Receiver;
  before(async () => {
    h = await createHarness();
    co = await h.company();
    rx = await new Receiver().start();
  });
  after(async () => {
    await rx.close();
    await h.close();
  });

  async function deliverOne(): Promise<{ raw: string; headers: Record<string, unknown> }> {
    const before = rx.received.length;
    await h.deliverWebhooks();
    await rx.waitFor(before + 1);
    const got = rx.received[before];
    return { raw: got.raw.toString('utf8'), headers: got.headers };
  }

  test('standard by default; legacy and back with PUT; invalid values are 422 and change nothing', async () => {
    const w = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/f', ['charge.paid']) });
    assert.equal(w.body.data.payload_format, 'standard');
    const id = w.body.data.id;
    expectValidation(
      await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/f', ['charge.paid'], { payload_format: 'onepay' }) }),
      'payload_format',
    );
    expectValidation(await co.req({ method: 'PUT', url: `/v1/webhooks/${id}`, body: { payload_format: 'LEGACY' } }), 'payload_format');
    const legacy = await co.req({ method: 'PUT', url: `/v1/webhooks/${id}`, body: { payload_format: 'legacy' } });
    assert.equal(legacy.body.data.payload_format, 'legacy');
    assert.equal((await co.req({ url: `/v1/webhooks/${id}` })).body.data.payload_format, 'legacy');
    const keep = await co.req({ method: 'PUT', url: `/v1/webhooks/${id}`, body: { name: 'Renamed', payload_format: null } });
    assert.equal(keep.body.data.payload_format, 'legacy', 'unsent or null keeps the format');
    const back = await co.req({ method: 'PUT', url: `/v1/webhooks/${id}`, body: { payload_format: 'standard' } });
    assert.equal(back.body.data.payload_format, 'standard');
    const created = await co.req({ url: '/v1/webhooks', body: hook('http://localhost:9/g', ['charge.paid'], { payload_format: 'legacy' }) });
    assert.equal(created.body.data.payload_format, 'legacy');
    assert.equal(
      (await co.req({ url: '/v1/webhooks' })).body.data.find((x: { id: string }) => x.id === created.body.data.id).payload_format,
      'legacy',
    );
  });

  test('legacy body of a real payment: {"payment": {...}, "event": {type, timestamp, environment}}, signed over the raw bytes', async () => {
    const w = (await co.req({ url: '/v1/webhooks', body: hook(rx.url, ['payment.created'], { payload_format: 'legacy' }) })).body.data;
    const payment = await co.req({ url: '/v1/payments', body: { title: 'Boletas concierto', amount: 150000 } });
    assert.equal(payment.status, 200, payment.raw);
    const got = await deliverOne();
    assert.equal(got.headers['signature'], createHmac('sha256', w.secret).update(got.raw).digest('hex'));
    assert.equal(got.headers['x-webhook-event'], 'payment.created');
    assert.match(String(got.headers['x-webhook-id']), /^evt_/);
    const body = JSON.parse(got.raw);
    assert.deepEqual(Object.keys(body), ['payment', 'event']);
    assert.deepEqual(Object.keys(body.event), ['type', 'timestamp', 'environment']);
    assert.equal(body.event.type, 'payment.created');
    assert.equal(body.event.environment, 'test');
    assert.ok(Number.isInteger(body.event.timestamp), 'unix seconds');
    assert.equal(body.payment.id, payment.body.id);
    assert.equal(body.payment.title, 'Boletas concierto');
    // The same event in the standard body (GET /v1/events) carries the same object as data.
    const ev = await co.req({ url: `/v1/events/${got.headers['x-webhook-id']}` });
    assert.deepEqual(body.payment, ev.body.data);
    assert.equal(body.event.timestamp, Math.floor(Date.parse(ev.body.created_at) / 1000));
    assert.equal(JSON.stringify(JSON.parse(got.raw)), got.raw, 'parse → stringify is byte-identical');
  });

  test('the invoicing stamping events keep SPEC payloads in legacy too; live events say environment live', async () => {
    const types = ['invoice.stamped', 'invoice.stamp_rejected', 'invoice.credit_note_issued', 'invoice.paid'] as const;
    const t = (await co.req({ url: '/v1/webhooks', body: hook(rx.url, [...types], { payload_format: 'legacy' }) })).body.data;
    const stamped = {
      invoice_id: 'inv_1',
      stamping: {
        type: 'invoice',
        status: 'accepted',
        number: 'SETP990000001',
        cufe: 'ab'.repeat(48),
        xml_url: 'https://x/1.xml',
        pdf_url: 'https://x/1.pdf',
        total: 119000,
      },
    };
    await h.runtime.deps.database.db.transaction().execute(async (trx) => {
      const scope = { companyId: co.company.id, environment: 'test' as const, db: trx, deps: h.runtime.deps };
      await emitEvent(scope, 'invoice.stamped', stamped, h.clock.now());
    });
    const got = await deliverOne();
    assert.equal(got.headers['signature'], createHmac('sha256', t.secret).update(got.raw).digest('hex'));
    const body = JSON.parse(got.raw);
    assert.deepEqual(Object.keys(body), ['id', 'event', 'created_at', 'is_test', 'data'], 'standard body');
    assert.equal(body.event, 'invoice.stamped');
    assert.deepEqual(body.data, stamped, "SPEC's exact payload");

    const paidAt = h.clock.now();
    await h.runtime.deps.database.db.transaction().execute(async (trx) => {
      const scope = { companyId: co.company.id, environment: 'test' as const, db: trx, deps: h.runtime.deps };
      await emitEvent(scope, 'invoice.paid', { id: 'inv_2', status: 'PAID' }, paidAt);
    });
    const paid = JSON.parse((await deliverOne()).raw);
    assert.deepEqual(paid, {
      invoice: { id: 'inv_2', status: 'PAID' },
      event: { type: 'invoice.paid', timestamp: Math.floor(paidAt.getTime() / 1000), environment: 'test' },
    });
    const liveEvent = await h.runtime.deps.database.db.transaction().execute(async (trx) => {
      const scope = { companyId: co.company.id, environment: 'live' as const, db: trx, deps: h.runtime.deps };
      return emitEvent(scope, 'invoice.paid', { id: 'inv_3' }, h.clock.now());
    });
    const { deliveryBody } = await import('./body.ts');
    const row = await h.runtime.deps.database.db.selectFrom('events').select('payload').where('id', '=', liveEvent.id).executeTakeFirstOrThrow();
    assert.equal(JSON.parse(deliveryBody(row.payload, 'legacy')).event.environment, 'live');
  });

  test('a delivery keeps the format its webhook had when the event happened', async () => {
    const w = (await co.req({ url: '/v1/webhooks', body: hook(rx.url, ['charge.refunded'], { payload_format: 'legacy' }) })).body.data;
    await h.runtime.deps.database.db.transaction().execute(async (trx) => {
      const scope = { companyId: co.company.id, environment: 'test' as const, db: trx, deps: h.runtime.deps };
      await emitEvent(scope, 'charge.refunded', { id: 'ch_1' }, h.clock.now());
    });
    await co.req({ method: 'PUT', url: `/v1/webhooks/${w.id}`, body: { payload_format: 'standard' } });
    const body = JSON.parse((await deliverOne()).raw);
    assert.deepEqual(Object.keys(body), ['charge', 'event']);
  });
});
