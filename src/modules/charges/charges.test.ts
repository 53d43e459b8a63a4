import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { installFakeLiveConnector } from '../../../test/fakes/live-connectors.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { activeWallet } from '../../../test/support/payments.ts';
import { createCard, createCustomer, VISA_DECLINED, VISA_EXPIRED } from '../../../test/support/cards.ts';
import { balance, chargeBody, chargeEvents, createAccount, payer, runChargeJobs } from '../../../test/support/charges.ts';

const DELAY = 2000;
const RECONCILE = 30_000;

describe('charges', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let p: { customer: string; card: string; account: string };
  const charge = (
    method: { card_id?: string; account_id?: string },
    extra: Record<string, unknown> = {},
    c: Company = co,
    env: 'test' | 'live' = 'test',
  ) => c.req({ url: '/v1/charges', body: chargeBody(p.customer, method, extra), env });

  before(async () => {
    h = await createHarness({ SANDBOX_CHARGE_DELAY_MS: String(DELAY), CHARGE_RECONCILE_DELAY_MS: String(RECONCILE) });
    co = await h.company('Cobros SAS');
    // Live calls in these tests run through a stand-in connector (without one: rail_not_configured, test/live-money.test.ts).
    installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id });
    other = await h.company('Otra SAS');
    p = await payer(h, co);
  });
  after(() => h.close());

  test('a card charge is paid at once: created → processing → paid, each event once, a ledger collection, an intent', async () => {
    const before = await balance(co);
    const res = await charge({ card_id: p.card }, { external_id: 'pedido-1', metadata: { pedido: '1' } });
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.match(c.id, /^ch_[0-9a-z]{26}$/);
    assert.equal(c.status, 'paid');
    assert.equal(c.amount, 150000);
    assert.equal(c.currency, 'COP');
    assert.equal(c.title, 'Cuota de octubre');
    assert.equal(c.customer_id, p.customer);
    assert.equal(c.payment_method_type, 'card');
    assert.equal(c.card_id, p.card);
    assert.equal(c.account_id, null);
    assert.equal(c.external_id, 'pedido-1');
    assert.deepEqual(c.metadata, { pedido: '1' });
    assert.equal(c.remarks, null);
    assert.equal(c.is_test, true);
    assert.ok(c.paid_at);
    assert.equal(c.network_id, `sbx_${c.id}`);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => `${e.type}:${e.data.status}`),
      ['charge.created:created', 'charge.processing:processing', 'charge.paid:paid'],
    );
    assert.equal((await balance(co)).available, before.available + 150000);

    const got = await co.req({ url: `/v1/charges/${c.id}` });
    assert.deepEqual(got.body, c);
    assert.deepEqual((await co.req({ url: `/v1/charges/${c.payment_intent_id}` })).body, c, 'the intent id finds the charge');
    const intent = await co.req({ url: `/v1/payment-intents/${c.id}` });
    assert.equal(intent.status, 200, intent.raw);
    assert.equal(intent.body.id, c.payment_intent_id);
    assert.equal(intent.body.charge_id, c.id);
    assert.equal(intent.body.payment_id, null);
    assert.equal(intent.body.status, 'approved');
    assert.equal(intent.body.method, 'card');
    assert.equal(intent.body.amount, 150000);
    // The safety job is gone: the outcome was saved.
    assert.equal(await runChargeJobs(h, [c.id]), 0);
    h.clock.advance(RECONCILE);
    assert.equal(await runChargeJobs(h, [c.id]), 0);
  });

  test('declining test cards: 200 with status failed and the reason in remarks', async () => {
    for (const [number, reason] of [
      [VISA_DECLINED, 'TRANSACTION_REJECTED'],
      [VISA_EXPIRED, 'CARD_EXPIRED'],
      ['4000000000009995', 'INSUFFICIENT_FUNDS'],
      ['4100000000000019', 'RISK_CONTROL'],
    ]) {
      const card = await createCard(co, p.customer, { card_number: number });
      const res = await charge({ card_id: card.id });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'failed');
      assert.equal(res.body.remarks, reason);
      assert.ok(res.body.failed_at);
      assert.deepEqual(
        (await chargeEvents(h, co, res.body.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
      const intent = await co.req({ url: `/v1/payment-intents/${res.body.id}` });
      assert.equal(intent.body.status, 'declined');
      assert.equal(intent.body.remarks, reason);
    }
  });

  test('a card past its expiry month fails with CARD_EXPIRED', async () => {
    const card = await createCard(co, p.customer, { expiration_month: 12, expiration_year: new Date().getUTCFullYear() });
    await h.runtime.deps.database.db.updateTable('cards').set({ exp_year: 2001 }).where('id', '=', card.id).execute();
    const res = await charge({ card_id: card.id });
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.remarks, 'CARD_EXPIRED');
  });

  test('test_scenario: decline codes fail with that code, on cards and accounts', async () => {
    for (const scenario of ['INSUFFICIENT_FUNDS', 'RISK_CONTROL', 'CARD_EXPIRED', 'TRANSACTION_REJECTED']) {
      for (const method of [{ card_id: p.card }, { account_id: p.account }]) {
        const res = await charge(method, { test_scenario: scenario });
        assert.equal(res.status, 200, res.raw);
        assert.equal(res.body.status, 'failed');
        assert.equal(res.body.remarks, scenario);
        assert.equal(res.body.test_scenario, scenario);
      }
    }
    assert.equal((await charge({ card_id: p.card }, { test_scenario: 'approved' })).body.status, 'paid');
  });

  test('a bank-account debit is processing, then paid when the sandbox bank settles it', async () => {
    const before = await balance(co);
    const res = await charge({ account_id: p.account });
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.equal(c.status, 'processing');
    assert.equal(c.payment_method_type, 'account');
    assert.equal(c.account_id, p.account);
    assert.equal(c.paid_at, null);
    assert.equal((await balance(co)).available, before.available, 'nothing collected yet');
    assert.equal(await runChargeJobs(h, [c.id]), 0, 'not due yet');
    h.clock.advance(DELAY);
    assert.equal(await runChargeJobs(h, [c.id]), 1);
    const paid = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(paid.status, 'paid');
    assert.equal((await balance(co)).available, before.available + 150000);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid'],
    );
    // Running the job again (a retry) changes nothing.
    h.clock.advance(RECONCILE);
    assert.equal(await runChargeJobs(h, [c.id]), 0);
    assert.equal((await chargeEvents(h, co, c.id)).length, 3);
  });

  test('test_scenario pending stays processing until resolve', async () => {
    const res = await charge({ card_id: p.card }, { test_scenario: 'pending' });
    assert.equal(res.body.status, 'processing');
    h.clock.advance(RECONCILE + DELAY);
    await runChargeJobs(h, [res.body.id]);
    assert.equal((await co.req({ url: `/v1/charges/${res.body.id}` })).body.status, 'processing');
    const resolved = await co.req({ url: `/v1/charges/${res.body.id}/resolve`, body: { action: 'approve' } });
    assert.equal(resolved.status, 200, resolved.raw);
    assert.equal(resolved.body.status, 'paid');

    const acc = await charge({ account_id: p.account }, { test_scenario: 'pending' });
    const rejected = await co.req({ url: `/v1/charges/${acc.body.id}/resolve`, body: { action: 'reject', remarks: 'INSUFFICIENT_FUNDS' } });
    assert.equal(rejected.body.status, 'failed');
    assert.equal(rejected.body.remarks, 'INSUFFICIENT_FUNDS');
    assert.deepEqual(
      (await chargeEvents(h, co, acc.body.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.failed'],
    );
  });

  test('test_scenario persistence_lost: 503 90005, the charge exists (found by external_id) and the reconciler settles it', async () => {
    const res = await charge({ card_id: p.card }, { test_scenario: 'persistence_lost', external_id: 'lost-1' });
    expectError(res, 503, 'charge_persistence_lost', 90005);
    const found = await co.req({ url: '/v1/charges?filter[external_id]=lost-1' });
    assert.equal(found.body.total, 1);
    const c = found.body.data[0];
    assert.equal(c.status, 'created');
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created'],
    );
    h.clock.advance(RECONCILE);
    assert.equal(await runChargeJobs(h, [c.id]), 1);
    const settled = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(settled.status, 'paid');
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid'],
    );

    const acc = await charge({ account_id: p.account }, { test_scenario: 'persistence_lost', external_id: 'lost-2' });
    expectError(acc, 503, 'charge_persistence_lost', 90005);
    const accCharge = (await co.req({ url: '/v1/charges?filter[external_id]=lost-2' })).body.data[0];
    h.clock.advance(RECONCILE);
    await runChargeJobs(h, [accCharge.id]);
    assert.equal((await co.req({ url: `/v1/charges/${accCharge.id}` })).body.status, 'paid');
  });

  test('the final save failing (the database, not a trigger) answers 90005 and loses nothing', async () => {
    const db = h.runtime.deps.database.db;
    const original = db.transaction.bind(db);
    let calls = 0;
    // The request's own transaction is opened with startTransaction; the final save is the first transaction().
    (db as { transaction: typeof db.transaction }).transaction = (() => {
      calls++;
      if (calls === 1) throw new Error('connection lost');
      return original();
    }) as typeof db.transaction;
    let res;
    try {
      res = await charge({ card_id: p.card }, { external_id: 'lost-3' });
    } finally {
      (db as { transaction: typeof db.transaction }).transaction = original;
    }
    expectError(res, 503, 'charge_persistence_lost', 90005);
    const c = (await co.req({ url: '/v1/charges?filter[external_id]=lost-3' })).body.data[0];
    assert.equal(c.status, 'created');
    h.clock.advance(RECONCILE);
    await runChargeJobs(h, [c.id]);
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'paid');
  });

  test('validation: title, amount, currency (null is 422), account xor card, test_scenario', async () => {
    expectValidation(await charge({ card_id: p.card }, { title: 'Cuot' }), 'title');
    expectValidation(await charge({ card_id: p.card }, { title: 'x'.repeat(101) }), 'title');
    assert.equal((await charge({ card_id: p.card }, { title: 'x'.repeat(100) })).status, 200);
    assert.equal((await charge({ card_id: p.card }, { title: 'Cuota' })).status, 200);
    for (const amount of [0, -5, 1.001, 'abc', '12.345', null]) expectValidation(await charge({ card_id: p.card }, { amount }), 'amount');
    assert.equal((await charge({ card_id: p.card }, { amount: '1500.50' })).body.amount, 1500.5);
    const nullCurrency = await charge({ card_id: p.card }, { currency: null });
    expectValidation(nullCurrency, 'currency');
    expectValidation(await charge({ card_id: p.card }, { currency: 'EUR' }), 'currency');
    for (const currency of ['USD', 'MXN']) {
      const res = await charge({ card_id: p.card }, { currency, amount: 10 });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.currency, currency);
    }
    expectValidation(await charge({ card_id: p.card, account_id: p.account }), 'account_id', 'card_id');
    expectValidation(await charge({}), 'account_id', 'card_id');
    expectValidation(await charge({ card_id: p.card }, { test_scenario: 'maybe' }), 'test_scenario');
    expectValidation(await charge({ card_id: p.card }, { customer_id: 'nope' }), 'customer_id');
    expectValidation(await charge({ card_id: p.card }, { customer_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5' }), 'customer_id');
    expectValidation(await charge({ card_id: p.card }, { external_id: '' }), 'external_id');
  });

  test('the account or card must be of that customer, usable, and authorized', async () => {
    const someoneElse = await createCustomer(co, 'test', 'Luis');
    expectValidation(await co.req({ url: '/v1/charges', body: chargeBody(someoneElse, { card_id: p.card }) }), 'card_id');
    expectValidation(await co.req({ url: '/v1/charges', body: chargeBody(someoneElse, { account_id: p.account }) }), 'account_id');
    expectValidation(await charge({ card_id: 'card_nope' }), 'card_id');
    expectValidation(await charge({ account_id: 'nope' }), 'account_id');
    expectValidation(await charge({ account_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5' }), 'account_id');

    const pending = await createAccount(h, co, p.customer, {}, { activate: false });
    const res = await charge({ account_id: pending });
    expectValidation(res, 'account_id');
    assert.match(res.body.errors.account_id[0], /PENDING/);
    const unauthorized = await createAccount(h, co, p.customer, { authorization: false }); // a payout destination: ACTIVE, no debits
    expectValidation(await charge({ account_id: unauthorized }), 'account_id');
    const rejected = await createAccount(h, co, p.customer, { account_number: '12349999' });
    expectValidation(await charge({ account_id: rejected }), 'account_id');
    const noAuthCard = await createCard(co, p.customer, { authorization: false });
    expectValidation(await charge({ card_id: noAuthCard.id }), 'card_id');
    const deleted = await createCard(co, p.customer);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/cards/${deleted.id}` })).status, 204);
    expectValidation(await charge({ card_id: deleted.id }), 'card_id');
    const deletedAccount = await createAccount(h, co, p.customer);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/accounts/${deletedAccount}` })).status, 204);
    expectValidation(await charge({ account_id: deletedAccount }), 'account_id');
    // Another company's or environment's card and account do not exist here.
    const theirs = await payer(h, other);
    expectValidation(await charge({ card_id: theirs.card }), 'card_id');
    expectValidation(await charge({ account_id: theirs.account }), 'account_id');
    const wallet = await activeWallet(h, co, other);
    expectValidation(
      await co.req({
        url: '/v1/charges',
        body: chargeBody((await co.req({ url: `/v1/accounts/${wallet}` })).body.customer_id, { account_id: wallet }),
      }),
      'account_id',
    );
  });

  test('limits: the company maximum (COP) and instant-key (KEY) accounts below COP 11,552,000', async () => {
    const key = await createAccount(h, co, p.customer, { subtype: 'KEY', account_number: '@ana.gomez', bank_id: undefined });
    const over = await charge({ account_id: key }, { amount: 11_552_000 });
    expectValidation(over, 'amount');
    assert.match(over.body.errors.amount[0], /11\.552\.000/);
    const under = await charge({ account_id: key }, { amount: '11551999.99' });
    assert.equal(under.status, 200, under.raw);
    assert.equal(under.body.status, 'processing');
    expectValidation(await charge({ account_id: key }, { amount: 100, currency: 'USD' }), 'currency');
    // The card has no such limit; the company maximum applies to every COP charge.
    assert.equal((await charge({ card_id: p.card }, { amount: 11_552_000 })).body.status, 'paid');
    await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 1_000_000n }).where('id', '=', co.company.id).execute();
    try {
      expectValidation(await charge({ card_id: p.card }, { amount: 1_000_000.01 }), 'amount');
      assert.equal((await charge({ card_id: p.card }, { amount: 1_000_000 })).status, 200);
      assert.equal((await charge({ card_id: p.card }, { amount: 5_000_000, currency: 'USD' })).status, 200, 'the maximum is in COP');
    } finally {
      await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 500_000_000n }).where('id', '=', co.company.id).execute();
    }
  });

  test('a live key: test_scenario is 422; live cards are charged through the live rail', async () => {
    const live = await payer(h, co, 'live');
    expectValidation(
      await co.req({ url: '/v1/charges', env: 'live', body: chargeBody(live.customer, { card_id: live.card }, { test_scenario: 'approved' }) }),
      'test_scenario',
    );
    const res = await co.req({ url: '/v1/charges', env: 'live', body: chargeBody(live.customer, { card_id: live.card }) });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'paid');
    assert.equal(res.body.is_test, false);
    // A test card from the test environment does not exist for the live key.
    expectValidation(await co.req({ url: '/v1/charges', env: 'live', body: chargeBody(live.customer, { card_id: p.card }) }), 'card_id');
    assert.equal((await balance(co, 'COP', 'live')).available, 150000);
  });

  test('splits move their shares to the other balances when the charge is paid', async () => {
    const partner = await h.company('Aliado SAS');
    const wallet = await activeWallet(h, co, partner);
    const before = await balance(co);
    const res = await charge({ card_id: p.card }, { amount: 100000, splits: [{ account_id: wallet, percentage: 10 }] });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.splits, [{ account_id: wallet, wallet_id: partner.company.id, amount: null, percentage: 10 }]);
    assert.equal((await balance(co)).available, before.available + 90000);
    assert.equal((await balance(partner)).available, 10000);
    const fixed = await charge({ account_id: p.account }, { amount: 50000, splits: [{ wallet_id: partner.company.id, amount: 5000 }] });
    assert.equal(fixed.body.status, 'processing');
    assert.equal((await balance(partner)).available, 10000, 'nothing moves before the debit settles');
    h.clock.advance(DELAY);
    await runChargeJobs(h, [fixed.body.id]);
    assert.equal((await balance(partner)).available, 15000);
    expectValidation(await charge({ card_id: p.card }, { amount: 1000, splits: [{ wallet_id: partner.company.id, amount: 1001 }] }), 'splits');
    expectValidation(await charge({ card_id: p.card }, { splits: [{ wallet_id: co.company.id, amount: 1 }] }), 'splits.0.wallet_id');
    expectValidation(await charge({ card_id: p.card }, { splits: [{ wallet_id: partner.company.id }] }), 'splits.0');
  });

  test('idempotency: a repeat replays the same charge; the create key finds it (filter[key])', async () => {
    const body = chargeBody(p.customer, { card_id: p.card }, { external_id: 'idem-1' });
    const first = await co.req({ url: '/v1/charges', body, idem: 'charge-idem-1' });
    const replay = await co.req({ url: '/v1/charges', body, idem: 'charge-idem-1' });
    assert.equal(replay.raw, first.raw);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal((await co.req({ url: '/v1/charges?filter[external_id]=idem-1' })).body.total, 1);
    const byKey = await co.req({ url: '/v1/charges?filter[key]=charge-idem-1' });
    assert.deepEqual(
      byKey.body.data.map((c: { id: string }) => c.id),
      [first.body.id],
    );
    expectError(await co.req({ url: '/v1/charges', body: { ...body, amount: 1 }, idem: 'charge-idem-1' }), 409, 'idempotency_error', 10003);
    // Simultaneous duplicates: the second waits for the first's answer.
    const body2 = chargeBody(p.customer, { account_id: p.account }, { external_id: 'idem-2' });
    const both = await Promise.all([
      co.req({ url: '/v1/charges', body: body2, idem: 'charge-idem-2' }),
      co.req({ url: '/v1/charges', body: body2, idem: 'charge-idem-2' }),
    ]);
    assert.equal(both[0].status, 200, both[0].raw);
    assert.equal(both[1].raw, both[0].raw);
    assert.equal((await co.req({ url: '/v1/charges?filter[external_id]=idem-2' })).body.total, 1);
    // An error is not remembered, but a 90005 recorded the charge: the same key answers it (never a second one).
    const lostBody = { ...body, test_scenario: 'persistence_lost', external_id: 'idem-3' };
    const lost = await co.req({ url: '/v1/charges', body: lostBody, idem: 'charge-idem-3' });
    expectError(lost, 503, 'charge_persistence_lost', 90005);
    const retry = await co.req({ url: '/v1/charges', body: lostBody, idem: 'charge-idem-3' });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal((await co.req({ url: '/v1/charges?filter[external_id]=idem-3' })).body.total, 1);
    // A claim committed early by a request that then died: another request is refused meanwhile
    // (a different body), and the claim is taken over once it is older than the window.
    const db = h.runtime.deps.database.db;
    const claim = (completedAt: Date) => ({
      company_id: co.company.id,
      environment: 'test' as const,
      key: 'charge-idem-dead',
      fingerprint: 'someone else',
      status_code: null,
      response_body: null,
      completed_at: completedAt,
    });
    await db.insertInto('idempotency_keys').values(claim(h.clock.now())).execute();
    expectError(await co.req({ url: '/v1/charges', body, idem: 'charge-idem-dead' }), 409, 'idempotency_error', 10003);
    await db
      .updateTable('idempotency_keys')
      .set({ completed_at: new Date(h.clock.now().getTime() - 61_000) })
      .where('company_id', '=', co.company.id)
      .where('key', '=', 'charge-idem-dead')
      .execute();
    const taken = await co.req({ url: '/v1/charges', body, idem: 'charge-idem-dead' });
    assert.equal(taken.status, 200, taken.raw);
    assert.equal((await co.req({ url: '/v1/charges', body, idem: 'charge-idem-dead' })).raw, taken.raw, 'and its answer replays');
  });

  test('refund: paid → refunded (charge.refunded, the money leaves the balance); 10805, 10807, 10806; by the intent id', async () => {
    const paid = (await charge({ card_id: p.card }, { amount: 20000, test_scenario: 'refundable' })).body;
    assert.equal(paid.status, 'paid', 'refundable approves like approved');
    const before = await balance(co);
    const res = await co.req({ method: 'POST', url: `/v1/charges/${paid.payment_intent_id}/refund` }); // no body at all
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.id, paid.id);
    assert.equal(res.body.status, 'refunded');
    assert.ok(res.body.refunded_at);
    assert.equal((await balance(co)).available, before.available - 20000);
    assert.deepEqual(
      (await chargeEvents(h, co, paid.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid', 'charge.refunded'],
    );
    expectError(await co.req({ url: `/v1/charges/${paid.id}/refund`, body: {} }), 422, 'charge_refunded', 10805);

    const processing = (await charge({ account_id: p.account })).body;
    expectError(await co.req({ url: `/v1/charges/${processing.id}/refund`, body: {} }), 422, 'charge_is_not_paid', 10807);
    const failed = (await charge({ card_id: p.card }, { test_scenario: 'RISK_CONTROL' })).body;
    expectError(await co.req({ url: `/v1/charges/${failed.id}/refund`, body: {} }), 422, 'charge_is_not_paid', 10807);

    const pending = (await charge({ card_id: p.card }, { test_scenario: 'pending' })).body;
    assert.equal((await co.req({ url: `/v1/charges/${pending.id}/resolve`, body: { action: 'approve' } })).body.status, 'paid');
    expectError(await co.req({ url: `/v1/charges/${pending.id}/refund`, body: {} }), 422, 'charge_is_test', 10806);

    // SPEC.md: a paid test charge cannot be refunded (10806), after the state check (10807 first).
    const plain = (await charge({ card_id: p.card }, { amount: 21000 })).body;
    assert.equal(plain.status, 'paid');
    const refused = await co.req({ url: `/v1/charges/${plain.id}/refund`, body: {} });
    expectError(refused, 422, 'charge_is_test', 10806);
    assert.match(refused.body.message, /test_scenario refundable/);
    assert.equal((await co.req({ url: `/v1/charges/${plain.id}` })).body.status, 'paid', 'nothing changed');
    const openTest = (await charge({ account_id: p.account }, { test_scenario: 'refundable' })).body;
    assert.equal(openTest.status, 'processing');
    expectError(await co.req({ url: `/v1/charges/${openTest.id}/refund`, body: {} }), 422, 'charge_is_not_paid', 10807);
    // An account debit with refundable refunds once the sandbox bank settled it.
    h.clock.advance(DELAY);
    await runChargeJobs(h, [openTest.id]);
    assert.equal((await co.req({ url: `/v1/charges/${openTest.id}/refund`, body: {} })).body.status, 'refunded');
    // Resolved by hand: no rail movement, never refundable, even with the scenario.
    const resolvedRefundable = (await charge({ account_id: p.account }, { test_scenario: 'refundable', amount: 1500 })).body;
    await co.req({ url: `/v1/charges/${resolvedRefundable.id}/resolve`, body: { action: 'approve' } });
    expectError(await co.req({ url: `/v1/charges/${resolvedRefundable.id}/refund`, body: {} }), 422, 'charge_is_test', 10806);
    // The scenario is a test-key thing.
    expectValidation(await charge({ card_id: p.card }, { test_scenario: 'refundable' }, co, 'live'), 'test_scenario');

    const whole = (await charge({ card_id: p.card }, { amount: 30000, test_scenario: 'refundable' })).body;
    expectValidation(await co.req({ url: `/v1/charges/${whole.id}/refund`, body: { amount: 100 } }), 'amount');
    assert.equal((await co.req({ url: `/v1/charges/${whole.id}/refund`, body: { amount: 30000 } })).body.status, 'refunded');
    expectError(await co.req({ url: '/v1/charges/ch_nope/refund', body: {} }), 404, 'record_not_found', 10002);
  });

  test('refund of a split charge takes the shares back too; a balance too small refuses it', async () => {
    const partner = await h.company('Aliado Dos SAS');
    const fresh = await h.company('Nueva SAS');
    const q = await payer(h, fresh);
    const wallet = await activeWallet(h, fresh, partner);
    const paid = await fresh.req({
      url: '/v1/charges',
      body: chargeBody(
        q.customer,
        { card_id: q.card },
        { amount: 10000, splits: [{ account_id: wallet, amount: 4000 }], test_scenario: 'refundable' },
      ),
    });
    assert.equal(paid.body.status, 'paid', paid.raw);
    assert.equal((await balance(fresh)).available, 6000);
    assert.equal((await balance(partner)).available, 4000);
    const refunded = await fresh.req({ url: `/v1/charges/${paid.body.id}/refund`, body: {} });
    assert.equal(refunded.body.status, 'refunded', refunded.raw);
    assert.equal((await balance(fresh)).available, 0);
    assert.equal((await balance(partner)).available, 0);

    const second = await fresh.req({
      url: '/v1/charges',
      body: chargeBody(q.customer, { card_id: q.card }, { amount: 10000, test_scenario: 'refundable' }),
    });
    // The company paid the money out meanwhile (simulated with a ledger posting of its own).
    const { postTransaction } = await import('../ledger/service.ts');
    await h.runtime.deps.database.db.transaction().execute((trx) =>
      postTransaction(
        trx,
        { companyId: fresh.company.id, environment: 'test', deps: h.runtime.deps },
        {
          kind: 'payout',
          currency: 'COP',
          source: { type: 'test', id: second.body.id },
          entries: [
            { account: { kind: 'company_available' }, amount: -9000_00n },
            { account: { kind: 'external_clearing' }, amount: 9000_00n },
          ],
        },
      ),
    );
    expectError(await fresh.req({ url: `/v1/charges/${second.body.id}/refund`, body: {} }), 422, 'insufficient_balance');
    assert.equal((await fresh.req({ url: `/v1/charges/${second.body.id}` })).body.status, 'paid', 'nothing changed');
    assert.equal(
      (await h.runtime.deps.database.db.selectFrom('charge_refunds').select('id').where('charge_id', '=', second.body.id).execute()).length,
      0,
    );
  });

  test('cancel: only created or processing (10808); the charge fails with remarks CANCELLED', async () => {
    const processing = (await charge({ account_id: p.account })).body;
    const res = await co.req({ method: 'POST', url: `/v1/charges/${processing.id}/cancel` });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.remarks, 'CANCELLED');
    assert.ok(res.body.cancelled_at);
    assert.deepEqual(
      (await chargeEvents(h, co, processing.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.failed'],
    );
    // The settlement that comes later changes nothing; the void job runs.
    h.clock.advance(DELAY);
    await runChargeJobs(h, [processing.id]);
    assert.equal((await co.req({ url: `/v1/charges/${processing.id}` })).body.status, 'failed');
    assert.equal((await chargeEvents(h, co, processing.id)).length, 3);
    expectError(await co.req({ url: `/v1/charges/${processing.id}/cancel`, body: {} }), 422, 'charge_not_cancellable', 10808);

    const paid = (await charge({ card_id: p.card })).body;
    expectError(await co.req({ url: `/v1/charges/${paid.id}/cancel`, body: {} }), 422, 'charge_not_cancellable', 10808);
    const lost = await charge({ card_id: p.card }, { test_scenario: 'persistence_lost', external_id: 'cancel-created' });
    expectError(lost, 503);
    const created = (await co.req({ url: '/v1/charges?filter[external_id]=cancel-created' })).body.data[0];
    assert.equal(created.status, 'created');
    assert.equal((await co.req({ url: `/v1/charges/${created.payment_intent_id}/cancel`, body: {} })).body.status, 'failed', 'cancel from created');
    h.clock.advance(RECONCILE);
    await runChargeJobs(h, [created.id]);
    assert.equal((await co.req({ url: `/v1/charges/${created.id}` })).body.status, 'failed', 'the reconciler leaves a cancelled charge alone');
    const refunded = (await charge({ card_id: p.card }, { test_scenario: 'refundable' })).body;
    assert.equal((await co.req({ url: `/v1/charges/${refunded.id}/refund`, body: {} })).body.status, 'refunded');
    expectError(await co.req({ url: `/v1/charges/${refunded.id}/cancel`, body: {} }), 422, 'charge_not_cancellable', 10808);
  });

  test('resolve: test charges from created or processing only; 403 with a live key; 422 when not open', async () => {
    const paid = (await charge({ card_id: p.card })).body;
    const notOpen = await co.req({ url: `/v1/charges/${paid.id}/resolve`, body: { action: 'approve' } });
    expectError(notOpen, 422);
    assert.equal(notOpen.body.code, undefined);
    const live = await payer(h, co, 'live');
    const liveCharge = (await co.req({ url: '/v1/charges', env: 'live', body: chargeBody(live.customer, { account_id: live.account }) })).body;
    assert.equal(liveCharge.status, 'processing');
    const forbidden = await co.req({ url: `/v1/charges/${liveCharge.id}/resolve`, body: { action: 'approve' }, env: 'live' });
    expectError(forbidden, 403);
    assert.equal(forbidden.body.code, undefined);
    const open = (await charge({ account_id: p.account })).body;
    expectValidation(await co.req({ url: `/v1/charges/${open.id}/resolve`, body: { action: 'reject', remarks: 'BECAUSE' } }), 'remarks');
    expectValidation(await co.req({ url: `/v1/charges/${open.id}/resolve`, body: { action: 'maybe' } }), 'action');
    const rejected = await co.req({ url: `/v1/charges/${open.id}/resolve`, body: { action: 'reject' } });
    assert.equal(rejected.body.status, 'failed');
    assert.equal(rejected.body.remarks, 'TRANSACTION_REJECTED');
    // The bank's settlement later does not revive it.
    h.clock.advance(DELAY);
    await runChargeJobs(h, [open.id]);
    assert.equal((await co.req({ url: `/v1/charges/${open.id}` })).body.status, 'failed');
  });

  test('charges are scoped to the company and the environment', async () => {
    const c = (await charge({ account_id: p.account })).body;
    await expectScoped(co, other, { url: `/v1/charges/${c.id}` });
    await expectScoped(co, other, { url: `/v1/charges/${c.payment_intent_id}` });
    await expectScoped(co, other, { url: `/v1/charges/${c.id}/refund`, body: {} });
    await expectScoped(co, other, { url: `/v1/charges/${c.id}/cancel`, body: {} });
    await expectScoped(co, other, { url: `/v1/charges/${c.id}/resolve`, body: { action: 'approve' } });
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'processing', 'nothing changed');
    assert.equal((await other.req({ url: `/v1/charges?filter[id]=${c.id}` })).body.total, 0);
    assert.equal((await co.req({ url: `/v1/charges?filter[id]=${c.id}`, env: 'live' })).body.total, 0);
    expectError(await co.req({ url: '/v1/charges', body: {}, idem: false }), 409, 'idempotency_error', 10003);
  });
});

describe('GET /charges filters', () => {
  let h: Harness;
  let co: Company;
  const made: Record<string, any> = {};

  before(async () => {
    h = await createHarness();
    co = await h.company('Listas SAS');
    // The clock moves to 2031 below: cards valid until then.
    const farExpiry = { expiration_year: new Date().getUTCFullYear() + 15 };
    const customer = await createCustomer(co);
    const p = { customer, card: (await createCard(co, customer, farExpiry)).id, account: await createAccount(h, co, customer) };
    const other = await createCustomer(co, 'test', 'Luis');
    const otherCard = await createCard(co, other, farExpiry);
    const at = (iso: string) => h.clock.advance(new Date(iso).getTime() - h.clock.now().getTime());
    at('2031-03-10T15:00:00Z');
    made.a = (
      await co.req({
        url: '/v1/charges',
        body: chargeBody(p.customer, { card_id: p.card }, { amount: 1000, external_id: 'ext-a', title: 'Cuota marzo' }),
        idem: 'list-key-a',
      })
    ).body;
    at('2031-03-11T09:30:00Z');
    made.b = (
      await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { account_id: p.account }, { amount: 2500.5, external_id: 'ext-b' }) })
    ).body;
    at('2031-03-12T23:59:59Z');
    made.c = (await co.req({ url: '/v1/charges', body: chargeBody(other, { card_id: otherCard.id }, { amount: 90, currency: 'USD' }) })).body;
    at('2031-03-13T00:00:01Z');
    made.d = (
      await co.req({ url: '/v1/charges', body: chargeBody(other, { card_id: otherCard.id }, { amount: 5000, test_scenario: 'RISK_CONTROL' }) })
    ).body;
    for (const c of Object.values(made)) assert.ok(c.id, JSON.stringify(c));
  });
  after(() => h.close());

  const ids = async (query: string) => {
    const res = await co.req({ url: `/v1/charges?${query}` });
    assert.equal(res.status, 200, `${query}: ${res.raw}`);
    return res.body.data.map((c: { id: string }) => c.id).sort();
  };
  const names = (...keys: string[]) => keys.map((k) => made[k].id).sort();

  test('exact filters', async () => {
    assert.deepEqual(await ids(`filter[id]=${made.b.id}`), names('b'));
    assert.deepEqual(await ids('filter[id]=nope'), []);
    assert.deepEqual(await ids('filter[status]=paid'), names('a', 'c'));
    assert.deepEqual(await ids('filter[status]=processing'), names('b'));
    assert.deepEqual(await ids('filter[status]=failed'), names('d'));
    assert.deepEqual(await ids('filter[status]=whatever'), []);
    assert.deepEqual(await ids('filter[currency]=USD'), names('c'));
    assert.deepEqual(await ids('filter[currency]=cop'), names('a', 'b', 'd'));
    assert.deepEqual(await ids('filter[title]=Cuota%20marzo'), names('a'));
    assert.deepEqual(await ids('filter[payment_method_type]=account'), names('b'));
    assert.deepEqual(await ids('filter[payment_method_type]=card'), names('a', 'c', 'd'));
    assert.deepEqual(await ids('filter[external_id]=ext-a'), names('a'));
    assert.deepEqual(await ids(`filter[customer_id]=${made.c.customer_id}`), names('c', 'd'));
    assert.deepEqual(await ids('filter[customer_id]=nope'), []);
    assert.deepEqual(await ids('filter[key]=list-key-a'), names('a'));
  });

  test('amount: exact and as ranges (pesos)', async () => {
    assert.deepEqual(await ids('filter[amount]=1000'), names('a'));
    assert.deepEqual(await ids('filter[amount]=2500.50'), names('b'));
    assert.deepEqual(await ids('filter[amount]=2500.5'), names('b'));
    assert.deepEqual(await ids('filter[amount][gte]=1000'), names('a', 'b', 'd'));
    assert.deepEqual(await ids('filter[amount][gt]=1000'), names('b', 'd'));
    assert.deepEqual(await ids('filter[amount][lt]=1000'), names('c'));
    assert.deepEqual(await ids('filter[amount][gte]=1000&filter[amount][lte]=2500.50'), names('a', 'b'));
    expectValidation(await co.req({ url: '/v1/charges?filter[amount]=abc' }), 'filter[amount]');
    expectValidation(await co.req({ url: '/v1/charges?filter[amount][gte]=-1' }), 'filter[amount][gte]');
  });

  test('created_at: exact (a timestamp, or a whole UTC day) and as ranges', async () => {
    assert.deepEqual(await ids(`filter[created_at]=${made.a.created_at}`), names('a'));
    assert.deepEqual(await ids('filter[created_at]=2031-03-12'), names('c'));
    assert.deepEqual(await ids('filter[created_at][gte]=2031-03-11'), names('b', 'c', 'd'));
    assert.deepEqual(await ids('filter[created_at][gt]=2031-03-11'), names('c', 'd'));
    assert.deepEqual(await ids('filter[created_at][lte]=2031-03-12'), names('a', 'b', 'c'));
    assert.deepEqual(await ids('filter[created_at][lt]=2031-03-12'), names('a', 'b'));
    assert.deepEqual(await ids('filter[created_at][gte]=2031-03-11T00:00:00Z&filter[created_at][lt]=2031-03-12T23:59:59Z'), names('b'));
    expectValidation(await co.req({ url: '/v1/charges?filter[created_at]=yesterday' }), 'filter[created_at]');
    expectValidation(await co.req({ url: '/v1/charges?filter[created_at][gte]=2031-13-45' }), 'filter[created_at][gte]');
  });

  test('sort created_at and paid_at; unknown filters and sorts are 400', async () => {
    const asc = await co.req({ url: '/v1/charges?sort=created_at' });
    assert.deepEqual(
      asc.body.data.map((c: { id: string }) => c.id),
      [made.a.id, made.b.id, made.c.id, made.d.id],
    );
    const desc = await co.req({ url: '/v1/charges' });
    assert.deepEqual(
      desc.body.data.map((c: { id: string }) => c.id),
      [made.d.id, made.c.id, made.b.id, made.a.id],
      'newest first by default',
    );
    const paid = await co.req({ url: '/v1/charges?sort=-paid_at' });
    assert.deepEqual(
      paid.body.data.slice(0, 2).map((c: { id: string }) => c.id),
      [made.c.id, made.a.id],
      'paid ones first, newest payment first',
    );
    expectError(await co.req({ url: '/v1/charges?filter[remarks]=x' }), 400);
    expectError(await co.req({ url: '/v1/charges?sort=amount' }), 400);
    expectError(await co.req({ url: '/v1/charges?filter[status][gte]=paid' }), 400);
    const page = await co.req({ url: '/v1/charges?per_page=2&page=2' });
    assert.equal(page.body.total, 4);
    assert.equal(page.body.data.length, 2);
  });
});
