import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWompi } from '../../../test/fakes/wompi-server.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';
import { balance, chargeEvents } from '../../../test/support/charges.ts';
import type { WompiEvent } from '../../rails/connectors/wompi/contract.ts';
import { eventChecksum } from '../../rails/connectors/wompi/contract.ts';

/**
 * Provider events are hints, never proof (PRODUCT.md "Live money you can trust"): each company's
 * own events URL, the checksum with that company's secret, stale and future events refused, the
 * transaction read back from the provider, matched by its signed id and checked against the
 * recorded amount and currency before anything settles. Each case first reproduced a defect of
 * the receiver that trusted the event's unsigned reference (issue 28, defect 2).
 */

describe('wompi events are hints', () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;
  let other: Company;
  let eventsUrl: string;
  let otherEventsUrl: string;

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_events001',
      privateKey: 'prv_prod_events001',
      eventsSecret: 'prod_events_events001',
      integritySecret: 'prod_integrity_events001',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_POLL_AFTER_MS: '60000', CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    co = await h.company('Tienda Eventos SAS');
    other = await h.company('Otra Tienda SAS');
    const settings = {
      public_key: fake.publicKey,
      private_key: fake.privateKey,
      events_secret: fake.eventsSecret,
      integrity_secret: fake.integritySecret,
    };
    const mine = await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: settings });
    assert.equal(mine.status, 200, mine.raw);
    eventsUrl = new URL(mine.body.events_url).pathname;
    // Another company on another provider account (its own secret).
    const theirs = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { ...settings, events_secret: 'prod_events_someone_else' },
    });
    assert.equal(theirs.status, 200, theirs.raw);
    otherEventsUrl = new URL(theirs.body.events_url).pathname;
    assert.notEqual(eventsUrl, otherEventsUrl, 'each company has its own events URL');
    fake.deliver = async (event) => (await post(eventsUrl, event)).status;
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  const post = (url: string, body: unknown) => send(h.app, { method: 'POST', url, body, idem: false });

  async function liveCharge(amount: number) {
    const customer = await createCustomer(co, 'live', 'Lucia');
    const card = await co.req({ url: '/v1/cards', env: 'live', body: { ...cardBody(customer, {}), accept_terms: true } });
    assert.equal(card.status, 200, card.raw);
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount, title: 'Pedido', customer_id: customer, card_id: card.body.id } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing');
    return res.body.id as string;
  }
  const txOf = (chargeId: string) => [...fake.transactions.values()].find((t) => t.reference === chargeId)!;
  const status = async (id: string) => (await co.req({ url: `/v1/charges/${id}`, env: 'live' })).body.status as string;
  /** Signs an event as the provider would, after `change` edited it. */
  const resign = (event: WompiEvent, secret = fake.eventsSecret) => {
    event.signature.checksum = eventChecksum(event, secret);
    return event;
  };
  const recorded = (providerId: string) =>
    h.runtime.deps.database.db
      .selectFrom('connector_events')
      .select(['verified', 'problem', 'company_id'])
      .where('provider_id', '=', providerId)
      .orderBy('received_at')
      .execute();

  test('the deprecated URL (no token) is held to the same rules: a swapped reference or a 1-peso event settles nothing else', async () => {
    const legacy = '/v1/rails/wompi/events';
    const small = await liveCharge(10_000);
    const big = await liveCharge(3_000_000);
    const smallTx = txOf(small);
    await fake.finalize(smallTx.id, { event: false });
    const swapped = fake.eventOf(smallTx, (e) => {
      (e.data.transaction as { reference: string }).reference = big;
    });
    assert.equal((await post(legacy, swapped)).status, 200);
    assert.equal(await status(big), 'processing', 'another charge’s reference settles nothing');
    const cheap = await liveCharge(125_000);
    const cheapTx = txOf(cheap);
    await fake.finalize(cheapTx.id, { event: false });
    const onePeso = fake.eventOf({ ...cheapTx, amount_in_cents: 100 });
    assert.equal((await post(legacy, onePeso)).status, 200);
    assert.equal(await status(cheap), 'paid', 'settled at the provider’s own amount, which is the charge’s');
    const old = resign({ ...fake.eventOf(cheapTx), timestamp: Math.floor(Date.UTC(2001, 0, 1) / 1000) });
    expectError(await post(legacy, old), 401, 'unauthenticated');
  });

  test('a genuine event re-posted with another charge’s reference settles only its own transaction', async () => {
    const before = (await balance(co, 'COP', 'live')).available;
    const small = await liveCharge(10_000);
    const big = await liveCharge(3_000_000);
    const smallTx = txOf(small);
    await fake.finalize(smallTx.id, { event: false });
    // The reference is not among the signed properties: the attacker swaps it.
    const swapped = fake.eventOf(smallTx, (e) => {
      (e.data.transaction as { reference: string }).reference = big;
    });
    assert.equal((await post(eventsUrl, swapped)).status, 200);
    assert.equal(await status(big), 'processing', 'the COP 3,000,000 charge is not settled by another transaction');
    assert.equal(await status(small), 'paid', 'the provider’s own reference of the signed id is the one settled');
    assert.equal((await balance(co, 'COP', 'live')).available - before, 10_000, 'only the small charge was credited');
  });

  test('a signed event whose amount is not the charge’s settles nothing', async () => {
    const id = await liveCharge(125_000);
    const tx = txOf(id);
    await fake.finalize(tx.id, { event: false });
    // A 1-peso approval signed with the right secret (as if the provider's amount differed).
    tx.amount_in_cents = 100;
    const res = await post(eventsUrl, fake.eventOf(tx));
    assert.equal(res.status, 200, 'acknowledged (the provider need not send it again), recorded');
    assert.equal(await status(id), 'processing');
    const rows = await recorded(tx.id);
    assert.match(rows.at(-1)!.problem ?? '', /amount 100 COP is not the recorded 12500000 COP/);
    tx.amount_in_cents = 12_500_000;
    assert.equal((await post(eventsUrl, fake.eventOf(tx))).status, 200);
    assert.equal(await status(id), 'paid', 'the provider’s real amount settles it');
  });

  test('stale and future events are refused (401) and recorded; the poll still settles', async () => {
    const id = await liveCharge(50_000);
    const tx = txOf(id);
    await fake.finalize(tx.id, { event: false });
    const old = resign({ ...fake.eventOf(tx), timestamp: Math.floor(Date.UTC(2001, 0, 1) / 1000) });
    expectError(await post(eventsUrl, old), 401, 'unauthenticated');
    const hourAgo = resign({ ...fake.eventOf(tx), timestamp: Math.floor(h.clock.now().getTime() / 1000) - 3_601 });
    expectError(await post(eventsUrl, hourAgo), 401, 'unauthenticated');
    const future = resign({ ...fake.eventOf(tx), timestamp: Math.floor(h.clock.now().getTime() / 1000) + 3_600 });
    expectError(await post(eventsUrl, future), 401, 'unauthenticated');
    assert.equal(await status(id), 'processing');
    assert.deepEqual(
      (await recorded(tx.id)).map((r) => r.problem),
      ['refused: older than an hour', 'refused: older than an hour', 'refused: from the future'],
    );
    // Within the hour (clock skew of a few seconds) it is accepted.
    const recent = resign({ ...fake.eventOf(tx), timestamp: Math.floor(h.clock.now().getTime() / 1000) + 5 });
    assert.equal((await post(eventsUrl, recent)).status, 200);
    assert.equal(await status(id), 'paid');
  });

  test('the events URL decides the secret: another company’s URL, an unknown token, a bad checksum are 401', async () => {
    const id = await liveCharge(20_000);
    const tx = txOf(id);
    await fake.finalize(tx.id, { event: false });
    expectError(await post(otherEventsUrl, fake.eventOf(tx)), 401, 'unauthenticated');
    expectError(await post('/v1/rails/wompi/events/cet_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', fake.eventOf(tx)), 401, 'unauthenticated');
    expectError(await post(eventsUrl, { event: 'transaction.updated', data: {} }), 401, 'unauthenticated');
    assert.equal(await status(id), 'processing');
    const rows = await recorded(tx.id);
    assert.deepEqual(
      rows.map((r) => r.problem),
      ['bad checksum', 'unknown events URL'],
    );
    assert.equal(rows[0].company_id, other.company.id, 'recorded under the company whose URL it was posted to');
  });

  test('an event type the connector does not use is acknowledged (200) and ignored', async () => {
    const event: WompiEvent = {
      event: 'nequi_token.updated',
      data: { nequi_token: { id: 'nequi_prod_1', status: 'APPROVED', phone_number: '3991111111' } },
      environment: 'prod',
      signature: { properties: ['nequi_token.id', 'nequi_token.status'], checksum: '' },
      timestamp: Math.floor(h.clock.now().getTime() / 1000),
    };
    const res = await post(eventsUrl, resign(event));
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { received: true, settled: null });
    // The deprecated URL (no token) also acknowledges it: the provider stops retrying.
    assert.equal((await post('/v1/rails/wompi/events', resign(event))).status, 200);
  });

  test('the event’s status is not trusted: the provider’s read-back decides', async () => {
    const id = await liveCharge(40_000);
    const tx = txOf(id);
    // Still PENDING at the provider; an event claiming APPROVED (validly signed) changes nothing.
    const claimed = fake.eventOf({ ...tx, status: 'APPROVED' });
    assert.equal((await post(eventsUrl, claimed)).status, 200);
    assert.equal(await status(id), 'processing');
    await fake.finalize(tx.id);
    assert.equal(await status(id), 'paid');
    const types = (await chargeEvents(h, co, id)).map((e) => e.type);
    assert.equal(types.filter((t) => t === 'charge.paid').length, 1);
  });

  test('the provider unreachable for the read-back: 503, so the provider sends it again', async () => {
    const id = await liveCharge(30_000);
    const tx = txOf(id);
    await fake.finalize(tx.id, { event: false });
    fake.failNext('get_transaction', '5xx');
    expectError(await post(eventsUrl, fake.eventOf(tx)), 503, 'service_unavailable');
    assert.equal(await status(id), 'processing');
    assert.equal((await post(eventsUrl, fake.eventOf(tx))).status, 200);
    assert.equal(await status(id), 'paid');
  });
});
