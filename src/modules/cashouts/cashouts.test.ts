import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, ENGINE, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { balance, chargeBody, createAccount, payer, chargeEvents } from '../../../test/support/charges.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { auditLedger } from '../ledger/service.ts';
import { createNamedKey } from '../companies/service.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { addBusinessDays, isBusinessDay } from './business-days.ts';
import {
  CASHOUT_APPROVAL_JOB,
  CASHOUT_RECONCILE_JOB,
  CASHOUT_SANDBOX_RETURN_JOB,
  runApprovalExpiry,
  runCashoutReconcile,
  runSandboxReturn,
} from './service.ts';
import { APPROVAL_WINDOW_MS } from './lifecycle.ts';

/** Black-box tests of cash-outs and balance withdrawals (docs/cashouts.md); sandbox time through the clock. */
describe(`cash-outs (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  let customer: string;
  let account: string;

  before(async () => {
    h = await createHarness();
    co = await h.company('Pagos Salientes SAS');
    customer = await createCustomer(co, 'test', 'Ana');
    account = await createAccount(h, co, customer, { account_number: '5500112233' });
  });
  after(() => h.close());

  /** Collects `pesos` into the test balance with a paid card charge. */
  async function fund(pesos: number, target: Company = co) {
    const p = await payer(h, target);
    const res = await target.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: pesos }) });
    assert.equal(res.body.status, 'paid', res.raw);
  }

  const cashout = (body: Record<string, unknown> = {}, target: Company = co, env: 'test' | 'live' = 'test') =>
    target.req({ url: '/v1/cashouts', env, body: { amount: 20000, customer_id: customer, account_id: account, ...body } });

  const handlers: Record<string, (deps: Harness['runtime']['deps'], p: Record<string, unknown>) => Promise<void>> = {
    [CASHOUT_RECONCILE_JOB]: runCashoutReconcile,
    [CASHOUT_APPROVAL_JOB]: runApprovalExpiry,
    [CASHOUT_SANDBOX_RETURN_JOB]: runSandboxReturn,
  };

  /** Runs this test's due cash-out jobs (the queue on PostgreSQL holds other files' jobs too). */
  async function runJobs(ids: string[]) {
    const db = h.runtime.deps.database.db;
    for (let round = 0; round < 5; round++) {
      const jobs = await db
        .selectFrom('jobs')
        .select(['id', 'kind', 'payload'])
        .where('kind', 'in', Object.keys(handlers))
        .where(sql<string>`payload->>'cashout_id'`, 'in', ids)
        .where('run_at', '<=', h.clock.now())
        .execute();
      if (jobs.length === 0) return;
      for (const job of jobs) {
        await handlers[job.kind](h.runtime.deps, job.payload);
        await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      }
    }
  }

  /** The types of the events of one resource (its `data.id`), oldest first. */
  const events = async (id: string) => (await chargeEvents(h, co, id)).map((e) => e.type);

  const get = async (id: string) => (await co.req({ url: `/v1/cashouts/${id}` })).body;
  const heldOf = async () => (await co.req({ url: '/v1/balances' })).body.data.find((b: { currency: string }) => b.currency === 'COP').held as number;

  test('ACH: held at creation, processing, completed after the sandbox delay; the money left once', async () => {
    await fund(100000);
    const before = await balance(co);
    const res = await cashout({ amount: 20000.5, external_id: 'nomina-1', description: 'Pago de nómina' });
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.match(c.id, /^co_/);
    assert.equal(c.status, 'processing');
    assert.equal(c.method, 'ACH');
    assert.equal(c.amount, 20000.5);
    assert.equal(c.source, 'company_available');
    assert.equal(c.is_test, true);
    assert.ok(c.expected_arrival_at > c.created_at);
    assert.equal((await balance(co)).available, before.available - 20000.5, 'held from available');
    assert.equal(await heldOf(), 20000.5);
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([c.id]);
    const done = await get(c.id);
    assert.equal(done.status, 'completed');
    assert.ok(done.completed_at);
    assert.equal(await heldOf(), 0);
    assert.equal((await balance(co)).available, before.available - 20000.5);
    assert.deepEqual(await events(c.id), ['cashout.created', 'cashout.processing', 'cashout.completed']);
    // Asked again: nothing changes.
    await runJobs([c.id]);
    assert.deepEqual(await events(c.id), ['cashout.created', 'cashout.processing', 'cashout.completed']);
    const audit = await auditLedger(h.runtime.deps.database.db, [co.company.id]);
    assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] });
  });

  test('rejected and returned: the money comes back once; a final state changes once (RETURNED)', async () => {
    await fund(60000);
    const before = await balance(co);
    const rejected = (await cashout({ test_scenario: 'rejected' })).body;
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([rejected.id]);
    const r = await get(rejected.id);
    assert.equal(r.status, 'rejected');
    assert.equal(r.remarks, 'ACCOUNT_CLOSED');
    assert.equal((await balance(co)).available, before.available, 'released');
    const returned = (await cashout({ test_scenario: 'returned' })).body;
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([returned.id]);
    assert.equal((await get(returned.id)).status, 'completed');
    assert.equal((await balance(co)).available, before.available - 20000);
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([returned.id]);
    const back = await get(returned.id);
    assert.equal(back.status, 'rejected');
    assert.equal(back.remarks, 'RETURNED');
    assert.equal((await balance(co)).available, before.available, 'the return reversed the payout');
    assert.deepEqual(await events(returned.id), ['cashout.created', 'cashout.processing', 'cashout.completed', 'cashout.rejected']);
    expectError(await co.req({ url: `/v1/cashouts/${returned.id}/resolve`, body: { action: 'return' } }), 422);
  });

  test('INSTANT completes at once to a KEY account of a natural person; TURBO needs a bank that offers it', async () => {
    await fund(50000);
    const key = await createAccount(h, co, customer, { subtype: 'KEY', account_number: '@ana.pagos', bank_id: undefined });
    const instant = await cashout({ method: 'INSTANT', account_id: key });
    assert.equal(instant.status, 200, instant.raw);
    assert.equal(instant.body.status, 'completed');
    expectValidation(await cashout({ method: 'INSTANT' }), 'account_id');
    expectValidation(await cashout({ method: 'ACH', account_id: key }), 'account_id');
    const turbo = await cashout({ method: 'TURBO' });
    assert.equal(turbo.body.status, 'processing', turbo.raw);
    const coop = await createAccount(h, co, customer, {
      bank_id: (await import('../banks/catalogue.ts')).bankId('1066'),
      account_number: '7700112233',
    });
    const refused = await cashout({ method: 'TURBO', account_id: coop });
    expectValidation(refused, 'account_id');
    assert.match(JSON.stringify(refused.body.errors), /TURBO/);
  });

  test('turbo_onboarding: the beneficiary is enrolled first (cashout.turbo_onboarding), then it completes; an account ending in 9999 is rejected', async () => {
    await fund(30000);
    const t = (await cashout({ method: 'TURBO', test_scenario: 'turbo_onboarding' })).body;
    assert.equal(t.status, 'processing');
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([t.id]);
    // processing and turbo_onboarding are written in the same transaction (the same instant): their order is not fixed.
    assert.deepEqual((await events(t.id)).sort(), ['cashout.completed', 'cashout.created', 'cashout.processing', 'cashout.turbo_onboarding']);
    const closed = await createAccount(h, co, customer, { account_number: '5500119999', authorization: false }); // a payout destination
    const before = await balance(co);
    const r = (await cashout({ account_id: closed })).body;
    assert.equal(r.status, 'rejected');
    assert.equal(r.remarks, 'ACCOUNT_REJECTED');
    assert.equal((await balance(co)).available, before.available, 'released at once');
    const company = await createCustomer(co, 'test', 'Empresa');
    await h.runtime.deps.database.db.updateTable('customers').set({ type: 'company' }).where('id', '=', company).execute();
    const key = await createAccount(h, co, company, { subtype: 'KEY', account_number: '@empresa.pagos', bank_id: undefined });
    expectValidation(await cashout({ method: 'INSTANT', customer_id: company, account_id: key }), 'method');
  });

  test("a customer's wallet pays the cash-outs it covers: withdrawal in its transactions, confirmed when completed, a return when rejected", async () => {
    await fund(50000);
    const walletOwner = await createCustomer(co, 'test', 'Carla');
    const own = await createAccount(h, co, walletOwner, { account_number: '5500223344' });
    const deposit = await co.req({ url: `/v1/customers/${walletOwner}/transactions`, body: { amount: 30000, concept: 'Anticipo' } });
    assert.equal(deposit.status, 200, deposit.raw);
    const before = await balance(co);
    const paid = (await cashout({ customer_id: walletOwner, account_id: own, amount: 20000 })).body;
    assert.equal(paid.source, 'customer_wallet');
    assert.equal((await balance(co)).available, before.available, "the company's balance is not touched");
    assert.equal((await co.req({ url: `/v1/customers/${walletOwner}/balance` })).body.balance, 10000);
    const tooBig = (await cashout({ customer_id: walletOwner, account_id: own, amount: 15000 })).body;
    assert.equal(tooBig.source, 'company_available', 'the wallet does not cover it: the company pays');
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([paid.id, tooBig.id]);
    const rejected = (await cashout({ customer_id: walletOwner, account_id: own, amount: 10000, test_scenario: 'rejected' })).body;
    assert.equal(rejected.source, 'customer_wallet');
    h.clock.advance(h.config.sandboxCashoutDelayMs);
    await runJobs([rejected.id]);
    const moves = (await co.req({ url: `/v1/customers/${walletOwner}/transactions` })).body.data as {
      type: string;
      amount: number;
      confirmed: boolean;
      node: { id: string } | null;
    }[];
    const summary = moves.map((m) => `${m.type}:${m.amount}:${m.confirmed}:${m.node?.id ?? ''}`).sort();
    assert.deepEqual(
      summary,
      [`deposit:30000:true:`, `return:10000:true:${rejected.id}`, `withdrawal:10000:false:${rejected.id}`, `withdrawal:20000:true:${paid.id}`].sort(),
    );
    assert.equal((await co.req({ url: `/v1/customers/${walletOwner}/balance` })).body.balance, 10000, 'the rejected one came back');
  });

  test('rules: amount limits, the account, the customer, test_scenario, a duplicate external_id', async () => {
    expectValidation(await cashout({ amount: 999.99 }), 'amount');
    expectValidation(await cashout({ amount: 1000.001 }), 'amount');
    expectValidation(await cashout({ amount: 600_000_000 }), 'amount');
    const other = await createCustomer(co, 'test', 'Berta');
    expectValidation(await cashout({ customer_id: other }), 'account_id');
    expectValidation(await cashout({ account_id: '00000000-0000-4000-8000-000000000000' }), 'account_id');
    expectValidation(await cashout({ customer_id: '00000000-0000-4000-8000-000000000000' }), 'customer_id');
    const pending = await createAccount(h, co, customer, { account_number: '5500998877' }, { activate: false });
    expectValidation(await cashout({ account_id: pending }), 'account_id');
    expectValidation(await cashout({ test_scenario: 'nope' }), 'test_scenario');
    expectValidation(await cashout({ method: 'WIRE' }), 'method');
    await fund(30000);
    const first = await cashout({ external_id: 'dup-1' });
    assert.equal(first.status, 200);
    const dup = await cashout({ external_id: 'dup-1' });
    expectError(dup, 409, 'cashout_external_id_taken');
    assert.equal(dup.body.cashout_id, first.body.id);
  });

  test('insufficient funds: 10501, nothing created, nothing held', async () => {
    const poor = await h.company('Sin Saldo SAS');
    const c = await createCustomer(poor, 'test', 'Ana');
    const a = await createAccount(h, poor, c);
    const res = await poor.req({ url: '/v1/cashouts', body: { amount: 5000, customer_id: c, account_id: a } });
    expectError(res, 422, 'insufficient_funds');
    assert.equal(res.body.code, 10501);
    assert.equal((await poor.req({ url: '/v1/cashouts' })).body.data.length, 0);
  });

  test('approval: above the threshold waits (each cash-out and the Bogotá day’s sum); another key approves (maker-checker), reject and 7 days without a decision release it', async () => {
    await fund(300000);
    h.clock.advance(86_400_000); // a Bogotá day of its own: the day's sum starts at zero
    await h.runtime.deps.database.db
      .updateTable('companies')
      .set({ cashout_approval_threshold: 50_000_00n })
      .where('id', '=', co.company.id)
      .execute();
    const treasurer = await createNamedKey(h.runtime.deps.database.db, { company: co.company.id, env: 'test', name: 'Tesorería' }, h.clock.now());
    try {
      const before = await balance(co);
      // The day's sum: 30,000 and 15,000 pass; 10,000 more makes 55,000, above the 50,000 threshold.
      const s1 = (await cashout({ amount: 30000 })).body;
      const s2 = (await cashout({ amount: 15000 })).body;
      assert.deepEqual([s1.status, s2.status], ['processing', 'processing']);
      const s3 = (await cashout({ amount: 10000 })).body;
      assert.equal(s3.status, 'require_approval', 'many small cash-outs do not pass where one large one waits');
      const big = (await cashout({ amount: 60000 })).body;
      assert.equal(big.status, 'require_approval');
      assert.match(big.created_by, /^key_/);
      assert.equal(big.approved_by, null);
      assert.equal((await balance(co)).available, before.available - 30000 - 15000 - 10000 - 60000, 'held while waiting');

      // Maker-checker: the creating key cannot approve; the other key can.
      const own = await co.req({ url: `/v1/cashouts/${big.id}/approve`, body: {} });
      expectError(own, 422, 'cashout_approver_is_creator', 10512);
      assert.equal((await get(big.id)).status, 'require_approval', 'nothing changed');
      const approved = await co.req({ url: `/v1/cashouts/${big.id}/approve`, body: {}, key: treasurer.key });
      assert.equal(approved.status, 200, approved.raw);
      assert.equal(approved.body.status, 'processing');
      assert.deepEqual([approved.body.created_by, approved.body.approved_by], [big.created_by, treasurer.id]);
      expectError(await co.req({ url: `/v1/cashouts/${big.id}/approve`, body: {}, key: treasurer.key }), 422, 'cashout_not_pending_approval', 10514);
      expectError(await co.req({ url: `/v1/cashouts/${big.id}/cancel`, body: {} }), 422, 'cashout_not_cancellable');
      const r = await co.req({ url: `/v1/cashouts/${s3.id}/reject`, body: { remarks: 'NOT_AUTHORIZED' }, key: treasurer.key });
      assert.deepEqual([r.body.status, r.body.remarks, r.body.rejected_by], ['rejected', 'NOT_AUTHORIZED', treasurer.id]);
      const cancelled = (await cashout({ amount: 55000 })).body;
      const c = await co.req({ url: `/v1/cashouts/${cancelled.id}/cancel`, body: {} });
      assert.equal(c.body.status, 'cancelled');
      const forgotten = (await cashout({ amount: 51000 })).body;
      h.clock.advance(APPROVAL_WINDOW_MS);
      await runJobs([forgotten.id]);
      const expired = await get(forgotten.id);
      assert.equal(expired.status, 'cancelled');
      assert.equal(expired.remarks, 'APPROVAL_EXPIRED');
      assert.deepEqual(await events(big.id), ['cashout.created', 'cashout.require_approval', 'cashout.processing']);
      assert.equal((await balance(co)).available, before.available - 30000 - 15000 - 60000, 'released: the rejected, cancelled and expired ones');
      // Another Bogotá day (the approval window moved the clock 7 days): its own sum.
      assert.equal((await cashout({ amount: 20000 })).body.status, 'processing');
    } finally {
      await h.runtime.deps.database.db.updateTable('companies').set({ cashout_approval_threshold: null }).where('id', '=', co.company.id).execute();
    }
  });

  test('pending stays processing until resolve; resolve is for test cash-outs with a test key', async () => {
    await fund(30000);
    const p = (await cashout({ test_scenario: 'pending' })).body;
    h.clock.advance(h.config.sandboxCashoutDelayMs * 10);
    await runJobs([p.id]);
    assert.equal((await get(p.id)).status, 'processing');
    const done = await co.req({ url: `/v1/cashouts/${p.id}/resolve`, body: { action: 'complete' } });
    assert.equal(done.body.status, 'completed', done.raw);
    expectError(await co.req({ url: `/v1/cashouts/${p.id}/resolve`, env: 'live', body: { action: 'complete' } }), 404);
  });

  test('resolve refuses a cash-out a provider handled (its network id is the provider’s): no return by hand', async () => {
    await fund(30000);
    const p = (await cashout({ test_scenario: 'pending' })).body;
    h.clock.advance(h.config.sandboxCashoutDelayMs * 10);
    await runJobs([p.id]);
    // As if a connector on the provider's sandbox had sent it (issue 28: a test balance fed a real payout, then was "returned").
    await h.runtime.deps.database.db.updateTable('cashouts').set({ network_id: '118-1795833333-provider' }).where('id', '=', p.id).execute();
    for (const action of ['complete', 'reject']) {
      expectError(await co.req({ url: `/v1/cashouts/${p.id}/resolve`, body: { action } }), 422);
    }
    assert.equal((await get(p.id)).status, 'processing', 'only the provider settles it');
  });

  test('list filters, get, 404 across companies and environments, auth', async () => {
    const list = await co.req({ url: `/v1/cashouts?filter[customer_id]=${customer}&filter[method]=ACH&filter[status]=completed` });
    assert.equal(list.status, 200, list.raw);
    assert.ok(list.body.data.length >= 1);
    assert.ok(list.body.data.every((c: { method: string; status: string }) => c.method === 'ACH' && c.status === 'completed'));
    const one = list.body.data[0];
    const byExternal = await co.req({ url: '/v1/cashouts?filter[external_id]=nomina-1' });
    assert.equal(byExternal.body.data.length, 1);
    const stranger = await h.company('Otra SAS');
    await expectScoped(co, stranger, { url: `/v1/cashouts/${one.id}` });
    // Operations by path id answer the same way.
    await expectScoped(co, stranger, { url: `/v1/cashouts/${one.id}/cancel`, body: {} });
    await expectScoped(co, stranger, { url: `/v1/cashouts/${one.id}/approve`, body: {} });
    expectError(await co.req({ url: '/v1/cashouts/co_nope' }), 404);
    const anonymous = await send(h.app, { method: 'GET', url: '/v1/cashouts', idem: false });
    assert.equal(anonymous.status, 401);
    // Live without a payout connector: refused, nothing recorded.
    const live = await co.req({ url: '/v1/cashouts', env: 'live', body: { amount: 5000, customer_id: customer, account_id: account } });
    expectError(live, 422, 'rail_not_configured');
  });

  test('POST /balances: to the payout account (10809 until set), the whole balance by default, 10500 when empty', async () => {
    const shop = await h.company('Retiros SAS');
    expectError(await shop.req({ url: '/v1/balances', body: {} }), 422, 'company_account_not_found');
    const owner = await createCustomer(shop, 'test', 'Dueno');
    const own = await createAccount(h, shop, owner, { account_number: '3300112233' });
    const set = await shop.req({ method: 'PUT', url: '/v1/company/payout-account', body: { account_id: own }, idem: false });
    assert.equal(set.status, 200, set.raw);
    assert.equal((await shop.req({ url: '/v1/company/payout-account' })).body.account_id, own);
    expectError(await shop.req({ url: '/v1/balances', body: {} }), 422, 'balance_is_empty');
    await fund(45000, shop);
    expectError(await shop.req({ url: '/v1/balances', body: { amount: 90000 } }), 422, 'insufficient_funds');
    const partial = await shop.req({ url: '/v1/balances', body: { amount: 5000 } });
    assert.equal(partial.status, 204, partial.raw);
    const all = await shop.req({ url: '/v1/balances', body: {} });
    assert.equal(all.status, 204, all.raw);
    const listed = (await shop.req({ url: '/v1/cashouts' })).body.data;
    assert.deepEqual(
      listed.map((c: { amount: number }) => c.amount).sort((a: number, b: number) => a - b),
      [5000, 40000],
    );
    assert.equal((await balance(shop)).available, 0);
    expectError(await shop.req({ url: '/v1/balances', body: {} }), 422, 'balance_is_empty');
  });

  test('concurrency: 50 parallel cash-outs against a balance that covers 10 → exactly 10, 40 × 10501', async () => {
    const busy = await h.company('Concurrencia SAS');
    const c = await createCustomer(busy, 'test', 'Ana');
    const a = await createAccount(h, busy, c);
    await fund(100000, busy);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => busy.req({ url: '/v1/cashouts', body: { amount: 10000, customer_id: c, account_id: a } })),
    );
    const ok = results.filter((r) => r.status === 200);
    const short = results.filter((r) => r.status === 422 && r.body.code === 10501);
    assert.equal(ok.length, 10, results.map((r) => r.status).join());
    assert.equal(short.length, 40);
    assert.equal((await balance(busy)).available, 0);
    const audit = await auditLedger(h.runtime.deps.database.db, [busy.company.id]);
    assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] });
  });
});

describe('Colombian business days', () => {
  test('a Friday before a festivo Monday: the next business day is Tuesday', () => {
    // 2026-11-13 is a Friday; Monday the 16th is Independencia de Cartagena (moved).
    const friday = new Date('2026-11-13T15:00:00-05:00');
    assert.equal(isBusinessDay(friday), true);
    assert.equal(addBusinessDays(friday, 1).toISOString(), new Date('2026-11-17T15:00:00-05:00').toISOString());
    assert.equal(isBusinessDay(new Date('2026-11-16T10:00:00-05:00')), false);
    // 23:30 in Bogotá on a Saturday is Sunday in UTC: still the weekend either way.
    assert.equal(isBusinessDay(new Date('2026-11-14T23:30:00-05:00')), false);
  });
});
