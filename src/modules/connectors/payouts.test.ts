import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWompi } from '../../../test/fakes/wompi-server.ts';
import { FakeWompiPayouts } from '../../../test/fakes/wompi-payouts-server.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';
import { balance, createAccount, chargeEvents } from '../../../test/support/charges.ts';
import { auditLedger } from '../ledger/service.ts';
import { CASHOUT_RECONCILE_JOB, runCashoutReconcile } from '../cashouts/service.ts';
import { eventChecksum } from '../../rails/connectors/wompi/contract.ts';

/**
 * Cash-outs through Wompi's Third-Party Payments (docs/connectors.md "Payouts") against the local
 * fake of its public API: settings (all payouts keys or none, write-only), a live cash-out sent as
 * a batch of one with the cash-out id as reference and idempotency key, settled by the signed
 * event or the reconciler, once; a failure releases the held money; a refused batch is rejected at
 * once; a lost answer retried with the same key never makes a second batch; forged events change nothing.
 */

const POLL_MS = 60_000;

describe('wompi payouts connector', () => {
  let pay: FakeWompi;
  let fake: FakeWompiPayouts;
  let h: Harness;
  let co: Company;
  let customer: string;
  let account: string;

  before(async () => {
    pay = await new FakeWompi({
      publicKey: 'pub_prod_payout01',
      privateKey: 'prv_prod_payout01',
      eventsSecret: 'prod_events_payout01',
      integritySecret: 'prod_integrity_payout01',
    }).start();
    fake = await new FakeWompiPayouts().start();
    h = await createHarness({
      WOMPI_PRODUCTION_URL: pay.url,
      WOMPI_PAYOUTS_PRODUCTION_URL: fake.url,
      CONNECTOR_POLL_AFTER_MS: String(POLL_MS),
      CONNECTOR_SETTINGS_TTL_MS: '0',
    });
    pay.deliver = async (event) => (await send(h.app, { method: 'POST', url: '/v1/rails/wompi/events', body: event, idem: false })).status;
    fake.deliver = async (event, checksum) =>
      (
        await send(h.app, {
          method: 'POST',
          url: '/v1/rails/wompi/payout-events',
          body: event,
          idem: false,
          headers: { 'x-event-checksum': checksum },
        })
      ).status;
    co = await h.company('Dispersiones Reales SAS');
    const res = await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { ...paymentKeys(), ...payoutKeys() } });
    assert.equal(res.status, 200, res.raw);
    customer = await liveCustomer('Marta');
    account = await createAccount(h, co, customer, { authorization: false, account_number: '5500112233' }, { env: 'live' });
    await fund(2_000_000);
  });
  after(async () => {
    await h.close();
    await fake.close();
    await pay.close();
  });

  const paymentKeys = () => ({
    public_key: pay.publicKey,
    private_key: pay.privateKey,
    events_secret: pay.eventsSecret,
    integrity_secret: pay.integritySecret,
  });
  const payoutKeys = () => ({
    payouts_api_key: fake.apiKey,
    payouts_user_principal_id: fake.principalId,
    payouts_events_secret: fake.eventsSecret,
    payouts_account_id: fake.originAccountId,
  });

  async function liveCustomer(name: string, extra: Record<string, unknown> = {}) {
    const res = await co.req({
      url: '/v1/customers',
      env: 'live',
      body: {
        first_name: name,
        last_name: 'Rojas',
        email: `${name.toLowerCase()}@example.com`,
        document_type: 'CC',
        document_number: '1020304050',
        ...extra,
      },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body.id as string;
  }

  /** Collects `pesos` into the live balance: a card charge through the payments fake, paid by its event. */
  async function fund(pesos: number) {
    const payer = await createCustomer(co, 'live', 'Pagador');
    const card = await co.req({ url: '/v1/cards', env: 'live', body: cardBody(payer) });
    assert.equal(card.status, 200, card.raw);
    const charge = await co.req({
      url: '/v1/charges',
      env: 'live',
      body: { amount: pesos, title: 'Venta', customer_id: payer, card_id: card.body.id },
    });
    assert.equal(charge.status, 200, charge.raw);
    const tx = [...pay.transactions.values()].find((t) => t.reference === charge.body.id)!;
    await pay.finalize(tx.id);
    assert.equal((await co.req({ url: `/v1/charges/${charge.body.id}`, env: 'live' })).body.status, 'paid');
  }

  const cashout = (body: Record<string, unknown> = {}, idem?: string) =>
    co.req({ url: '/v1/cashouts', env: 'live', idem, body: { amount: 100000.5, customer_id: customer, account_id: account, ...body } });
  const read = async (id: string) => (await co.req({ url: `/v1/cashouts/${id}`, env: 'live' })).body;

  /** The types of the events of one resource (its `data.id`), oldest first. */
  const events = async (id: string) => (await chargeEvents(h, co, id)).map((e) => e.type);

  /** Runs the due reconcile jobs of these cash-outs (the queue on PostgreSQL holds other files' jobs too). */
  async function reconcile(ids: string[]) {
    const db = h.runtime.deps.database.db;
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', CASHOUT_RECONCILE_JOB)
      .where(sql<string>`payload->>'cashout_id'`, 'in', ids)
      .where('run_at', '<=', h.clock.now())
      .execute();
    for (const job of jobs) {
      await runCashoutReconcile(h.runtime.deps, job.payload);
      await db.deleteFrom('jobs').where('id', '=', job.id).execute();
    }
  }

  test('settings: the payouts keys all or none, write-only; payout is served only with them', async () => {
    const other = await h.company('Sin Dispersiones SAS');
    const partial = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { ...paymentKeys(), payouts_api_key: fake.apiKey },
    });
    expectValidation(partial, 'payouts_user_principal_id');
    const noKeys = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { ...paymentKeys(), rails: ['card', 'payout'] },
    });
    expectValidation(noKeys, 'rails');
    const payments = await other.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: paymentKeys() });
    assert.deepEqual(payments.body.rails, ['card', 'banklink', 'walleta'], 'without payouts keys the default leaves payout out');
    assert.deepEqual(payments.body.payouts_api_key, { set: false, last4: null });
    // Live cash-outs of that company are still refused: no payout connector.
    expectError(
      await other.req({ url: '/v1/cashouts', env: 'live', body: { amount: 5000, customer_id: customer, account_id: account } }),
      422,
      'rail_not_configured',
    );
    // Adding the keys later adds the rail.
    const added = await other.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: payoutKeys() });
    assert.equal(added.status, 200, added.raw);
    assert.deepEqual(added.body.rails, ['card', 'banklink', 'walleta', 'payout']);
    assert.deepEqual(added.body.payouts_api_key, { set: true, last4: fake.apiKey.slice(-4) });
    assert.equal(added.body.payouts_account_id, fake.originAccountId);
    assert.match(added.body.payouts_events_url, /^http:\/\/recaudo\.test\/v1\/rails\/wompi\/payout-events\/cet_[A-Za-z0-9_-]{32}$/);
    const raw = JSON.stringify(added.body);
    for (const secret of [fake.apiKey, fake.principalId, fake.eventsSecret]) assert.ok(!raw.includes(secret), 'no secret is answered');
    const row = await h.runtime.deps.database.db
      .selectFrom('connector_settings')
      .selectAll()
      .where('company_id', '=', other.company.id)
      .executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(fake.apiKey), 'sealed at rest');
  });

  test('health: the payouts keys are checked and the origin balance shown', async () => {
    const res = await co.req({ url: '/v1/connectors/wompi/health', env: 'live' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.payouts.authenticated, true);
    assert.equal(res.body.payouts.problem, null);
    assert.equal(res.body.payouts.origin_balance, fake.balanceInCents / 100);
  });

  test('a live ACH cash-out is one batch at the provider, held, then completed by the signed event, once', async () => {
    const before = await balance(co, 'COP', 'live');
    const idem = `payout-${Date.now()}`;
    const res = await cashout({ external_id: `ext-${Date.now()}` }, idem);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing', 'the provider took it (PENDING)');
    const [tx] = fake.byReference(res.body.id);
    assert.ok(tx, 'one provider transaction with the cash-out id as reference');
    assert.equal(res.body.network_id, tx.id);
    assert.equal(tx.amountInCents, 10000050, 'pesos × 100, exactly');
    assert.equal(tx.accountNumber, '5500112233');
    assert.equal(tx.bankId, fake.banks[0].id, 'the catalogue bank mapped to the provider’s bank id');
    assert.deepEqual([tx.legalIdType, tx.legalId, tx.personType], ['CC', '1020304050', 'NATURAL']);
    assert.equal(fake.calls.find((c) => c.operation === 'create_payout' && c.status === 201)?.idempotencyKey, res.body.id.replace('_', '-'));
    const held = await balance(co, 'COP', 'live');
    assert.equal(held.available, before.available - 100000.5);
    // The same key again: the same cash-out, no second batch.
    const again = await cashout({ external_id: res.body.external_id }, idem);
    assert.equal(again.body.id, res.body.id);
    assert.equal(fake.byReference(res.body.id).length, 1);
    // The event settles it; the same event again changes nothing.
    await fake.finalize(tx.id);
    assert.equal(await fake.postEvent(tx), 200);
    const done = await read(res.body.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      (await events(res.body.id)).filter((t) => t === 'cashout.completed'),
      ['cashout.completed'],
    );
    const after = await balance(co, 'COP', 'live');
    assert.equal(after.available, before.available - 100000.5, 'paid out: the held money left');
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('a failed payout rejects the cash-out with the provider reason and releases the money', async () => {
    const before = await balance(co, 'COP', 'live');
    const res = await cashout({ amount: 5000 });
    assert.equal(res.status, 200, res.raw);
    const [tx] = fake.byReference(res.body.id);
    await fake.finalize(tx.id, { status: 'FAILED', reason: { code: 'D07', message: 'El número de cuenta no existe' } });
    const rejected = await read(res.body.id);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.remarks, 'FAILED: D07 El número de cuenta no existe');
    assert.equal((await balance(co, 'COP', 'live')).available, before.available, 'released');
  });

  test('without an event the reconciler asks the provider; a forged event changes nothing', async () => {
    const res = await cashout({ amount: 7000 });
    const [tx] = fake.byReference(res.body.id);
    await fake.finalize(tx.id, { event: false });
    const forged = fake.eventOf(tx, (e) => {
      (e.data.transaction as { status: string }).status = 'FAILED';
    });
    const refused = await send(h.app, { method: 'POST', url: '/v1/rails/wompi/payout-events', body: forged, idem: false });
    expectError(refused, 401, 'unauthenticated');
    // Signed with another secret (the payments events secret): refused too.
    const wrongSecret = fake.eventOf(tx, (e) => {
      e.signature.checksum = eventChecksum(e, pay.eventsSecret);
    });
    expectError(await send(h.app, { method: 'POST', url: '/v1/rails/wompi/payout-events', body: wrongSecret, idem: false }), 401);
    assert.equal((await read(res.body.id)).status, 'processing');
    const recorded = await h.runtime.deps.database.db
      .selectFrom('connector_events')
      .select(['verified', 'problem'])
      .where('reference', '=', res.body.id)
      .execute();
    assert.deepEqual(recorded, [
      { verified: false, problem: 'bad checksum' },
      { verified: false, problem: 'bad checksum' },
    ]);
    // An event for a payout Recaudo does not know: acknowledged, recorded, nothing else.
    const stranger = fake.eventOf({ ...tx, id: '00000000-0000-4000-8000-000000000000', payoutId: 'x' });
    assert.equal((await send(h.app, { method: 'POST', url: '/v1/rails/wompi/payout-events', body: stranger, idem: false })).status, 200);
    // Past the expected arrival the reconciler finds it paid.
    h.clock.advance(5 * 86_400_000);
    await reconcile([res.body.id]);
    assert.equal((await read(res.body.id)).status, 'completed');
  });

  test('a lost answer, a retry with the same key and the reconciler: one batch', async () => {
    fake.failNext('create_payout', 'lose_answer');
    const idem = `lost-payout-${Date.now()}`;
    const first = await cashout({ amount: 9000 }, idem);
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.body.status, 'created', 'the outcome is unknown: nothing guessed, the money stays held');
    const retry = await cashout({ amount: 9000 }, idem);
    assert.equal(retry.body.id, first.body.id);
    h.clock.advance(h.config.chargeReconcileDelayMs + 1);
    await reconcile([first.body.id]);
    assert.equal(fake.byReference(first.body.id).length, 1, 'the batch of the reference was found, not sent again');
    assert.equal((await read(first.body.id)).status, 'processing');
    await fake.finalize(fake.byReference(first.body.id)[0].id);
    assert.equal((await read(first.body.id)).status, 'completed');
  });

  test('a batch the provider refuses (no balance at the origin account) is rejected at once and released', async () => {
    const before = await balance(co, 'COP', 'live');
    const kept = fake.balanceInCents;
    fake.balanceInCents = 0;
    try {
      const res = await cashout({ amount: 3000 });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'rejected');
      assert.match(res.body.remarks, /^REFUSED: EXC_008/);
      assert.equal((await balance(co, 'COP', 'live')).available, before.available);
      assert.equal(fake.byReference(res.body.id).length, 0);
    } finally {
      fake.balanceInCents = kept;
    }
  });

  test('what the provider does not offer is refused before anything is recorded', async () => {
    const count = async () =>
      Number(
        (
          await h.runtime.deps.database.db
            .selectFrom('cashouts')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('company_id', '=', co.company.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const n = await count();
    expectValidation(await cashout({ method: 'TURBO' }), 'method');
    const noEmail = await liveCustomer('Sinmail', { email: null });
    const itsAccount = await createAccount(h, co, noEmail, { authorization: false, account_number: '5500998877' }, { env: 'live' });
    expectValidation(await cashout({ customer_id: noEmail, account_id: itsAccount }), 'customer_id');
    // A sandbox trigger with a live key is bad input, whatever the rails.
    expectValidation(await cashout({ test_scenario: 'rejected' }), 'test_scenario');
    assert.equal(await count(), n);
  });
});
