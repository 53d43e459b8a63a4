import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINE, createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { auditLedger, customerWalletBalance, holdPayout, recordCollection, releaseHold, type LedgerScope } from '../ledger/service.ts';
import { confirmWalletWithdrawal, recordWalletReturn, recordWalletWithdrawal, type WalletScope } from './service.ts';

/** Customer wallets (docs/wallets.md): GET /customers/{id}/balance, POST and GET /customers/{id}/transactions. */

function scope(h: Harness, co: Company, environment: 'test' | 'live' = 'test'): LedgerScope & WalletScope {
  return { companyId: co.company.id, environment, deps: h.runtime.deps };
}

/** Money collected into the company's available balance (minor units), as a settled charge would. */
async function fund(h: Harness, co: Company, minor: bigint, environment: 'test' | 'live' = 'test'): Promise<void> {
  await h.runtime.deps.database.db
    .transaction()
    .execute((trx) =>
      recordCollection(trx, scope(h, co, environment), { currency: 'COP', amount: minor, source: { type: 'test', id: randomUUID() } }),
    );
}

async function available(co: Company, env: 'test' | 'live' = 'test'): Promise<number> {
  const res = await co.req({ url: '/v1/balances', env });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.find((b: { currency: string }) => b.currency === 'COP').available;
}

async function walletBalance(co: Company, customer: string, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: `/v1/customers/${customer}/balance`, env });
  assert.equal(res.status, 200, res.raw);
  return res.body as { id: string; balance: number; label: string; currency: string; is_test: boolean };
}

async function expectClean(h: Harness, ...companies: Company[]): Promise<void> {
  const audit = await auditLedger(
    h.runtime.deps.database.db,
    companies.map((c) => c.company.id),
  );
  assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] });
}

describe('customer wallets', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: string;

  const deposit = (body: Record<string, unknown>, c: Company = co, who = customer, env: 'test' | 'live' = 'test', idem?: string) =>
    c.req({ url: `/v1/customers/${who}/transactions`, body, env, idem });
  const walletEvents = async (c: Company = co) =>
    (
      await h.runtime.deps.database.db
        .selectFrom('events')
        .select(['type', 'data', 'environment'])
        .where('company_id', '=', c.company.id)
        .where('type', '=', 'wallet.transaction.created')
        .orderBy('created_at')
        .orderBy('id')
        .execute()
    ).map((e) => ({ ...e, data: e.data as unknown as Record<string, any> }));
  const rowsOf = async (c: Company) =>
    (await h.runtime.deps.database.db.selectFrom('wallet_transactions').select('id').where('company_id', '=', c.company.id).execute()).length;
  const ledgerTransactions = async (c: Company) =>
    (await h.runtime.deps.database.db.selectFrom('ledger_transactions').select('id').where('company_id', '=', c.company.id).execute()).length;

  before(async () => {
    h = await createHarness();
    co = await h.company('Billeteras Clientes SAS');
    other = await h.company('Otra Empresa SAS');
    customer = await createCustomer(co, 'test', 'Ana');
  });
  after(() => h.close());

  test('a new customer has an empty wallet: {id, balance: 0, label}', async () => {
    const fresh = await createCustomer(co, 'test', 'Beto');
    assert.deepEqual(await walletBalance(co, fresh), { id: fresh, balance: 0, label: '$ 0', currency: 'COP', is_test: true });
    const list = await co.req({ url: `/v1/customers/${fresh}/transactions` });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.total, 0);
    assert.deepEqual(list.body.data, []);
    assert.equal(list.body.path, `http://recaudo.test/v1/customers/${fresh}/transactions`);
  });

  test('a deposit moves money from the company balance to the wallet at once, with its row, ledger posting and event', async () => {
    await fund(h, co, 100_000_00n);
    const before = await ledgerTransactions(co);
    const res = await deposit({ amount: 12500, concept: 'Recarga de octubre' });
    assert.equal(res.status, 200, res.raw);
    const t = res.body;
    assert.match(t.id, /^wtx_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...t, id: undefined, created_at: undefined },
      {
        id: undefined,
        type: 'deposit',
        subtype: 'DEPOSIT',
        amount: 12500,
        label: '$ 12.500',
        currency: 'COP',
        concept: 'Recarga de octubre',
        confirmed: true,
        node_type: null,
        node: null,
        customer_id: customer,
        created_at: undefined,
        is_test: true,
      },
    );
    assert.ok(!Number.isNaN(Date.parse(t.created_at)));
    assert.deepEqual(await walletBalance(co, customer), { id: customer, balance: 12500, label: '$ 12.500', currency: 'COP', is_test: true });
    assert.equal(await available(co), 87500);
    // One ledger transaction, wallet_deposit, sourced by the wallet transaction.
    assert.equal(await ledgerTransactions(co), before + 1);
    const tx = await h.runtime.deps.database.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('company_id', '=', co.company.id)
      .where('source_id', '=', t.id)
      .executeTakeFirstOrThrow();
    assert.equal(tx.kind, 'wallet_deposit');
    assert.equal(tx.source_type, 'wallet_transaction');
    const events = await walletEvents();
    assert.equal(events.length, 1);
    assert.deepEqual(events[0].data, t, 'the event carries the transaction as the API shows it');
    await expectClean(h, co);
  });

  test('pesos with decimals: exact amounts and es-CO labels; no concept is null', async () => {
    const before = await walletBalance(co, customer);
    const res = await deposit({ amount: '1500.50' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.amount, 1500.5);
    assert.equal(res.body.label, '$ 1.500,50');
    assert.equal(res.body.concept, null);
    const after = await walletBalance(co, customer);
    assert.equal(after.balance, before.balance + 1500.5);
    assert.equal(after.label, '$ 14.000,50');
    const cents = await deposit({ amount: 0.01 });
    assert.equal(cents.status, 200, cents.raw);
    assert.equal(cents.body.label, '$ 0,01');
    assert.equal(await customerWalletBalance(h.runtime.deps.database.db, scope(h, co), customer), 14_000_51n, 'the ledger holds exact minor units');
    await expectClean(h, co);
  });

  test('x-idempotency: a repeat answers the same deposit and moves money once', async () => {
    const key = randomUUID();
    const before = await walletBalance(co, customer);
    const first = await deposit({ amount: 100, concept: 'Una vez' }, co, customer, 'test', key);
    const again = await deposit({ amount: 100, concept: 'Una vez' }, co, customer, 'test', key);
    assert.equal(first.status, 200, first.raw);
    assert.deepEqual(again.body, first.body);
    assert.equal((await walletBalance(co, customer)).balance, before.balance + 100);
    const missing = await co.req({ url: `/v1/customers/${customer}/transactions`, body: { amount: 100 }, idem: false });
    expectError(missing, 409, 'idempotency_error', 10003);
  });

  test('422 validation: amount missing, zero, negative, over 2 decimals, not a number; concept empty or over 255 characters', async () => {
    const before = {
      wallet: await walletBalance(co, customer),
      available: await available(co),
      rows: await rowsOf(co),
      events: (await walletEvents()).length,
    };
    for (const body of [{}, { amount: null }, { amount: true }, { amount: { value: 1 } }]) expectValidation(await deposit(body), 'amount');
    for (const amount of [0, '0.00', -5, '-5', 1.234, '12.345', 'abc', '', '1e5', 1e16]) {
      const res = await deposit({ amount });
      expectValidation(res, 'amount');
    }
    expectValidation(await deposit({ amount: 100, concept: '' }), 'concept');
    expectValidation(await deposit({ amount: 100, concept: 'x'.repeat(256) }), 'concept');
    assert.equal((await deposit({ amount: 100, concept: 'x'.repeat(255) })).status, 200);
    assert.equal((await walletBalance(co, customer)).balance, before.wallet.balance + 100);
    assert.equal(await available(co), before.available - 100);
    assert.equal(await rowsOf(co), before.rows + 1);
    assert.equal((await walletEvents()).length, before.events + 1);
  });

  test('a deposit over the available balance is 422 10501 insufficient_funds and moves nothing; the exact balance goes through', async () => {
    const poor = await h.company('Poca Plata SAS');
    const who = await createCustomer(poor, 'test', 'Carla');
    expectError(await deposit({ amount: 1 }, poor, who), 422, 'insufficient_funds', 10501);
    await fund(h, poor, 5_000_00n);
    const res = await deposit({ amount: 5000.01 }, poor, who);
    expectError(res, 422, 'insufficient_funds', 10501);
    assert.match(res.body.message, /\$ 5\.000,01/);
    assert.equal(await available(poor), 5000);
    assert.equal((await walletBalance(poor, who)).balance, 0);
    assert.equal(await rowsOf(poor), 0, 'no wallet transaction');
    assert.equal((await walletEvents(poor)).length, 0, 'no event');
    assert.equal(
      (
        await h.runtime.deps.database.db
          .selectFrom('ledger_transactions')
          .select('id')
          .where('company_id', '=', poor.company.id)
          .where('kind', '=', 'wallet_deposit')
          .execute()
      ).length,
      0,
    );
    const all = await deposit({ amount: 5000 }, poor, who);
    assert.equal(all.status, 200, all.raw);
    assert.equal(await available(poor), 0);
    assert.equal((await walletBalance(poor, who)).balance, 5000);
    expectError(await deposit({ amount: 0.01 }, poor, who), 422, 'insufficient_funds', 10501);
    await expectClean(h, poor);
  });

  test('404: an unknown, malformed or deleted customer on every route', async () => {
    const gone = await createCustomer(co, 'test', 'Dario');
    assert.equal((await co.req({ url: `/v1/customers/${gone}`, method: 'DELETE' })).status, 204);
    for (const id of [randomUUID(), 'not-a-uuid', gone]) {
      expectError(await co.req({ url: `/v1/customers/${id}/balance` }), 404, 'record_not_found', 10002);
      expectError(await co.req({ url: `/v1/customers/${id}/transactions` }), 404, 'record_not_found', 10002);
      expectError(await deposit({ amount: 100 }, co, id), 404, 'record_not_found', 10002);
    }
  });

  test("another company's customer is missing (404) and the owner's live key gets environment_key_mismatch; nothing moves", async () => {
    await fund(h, other, 10_000_00n);
    await fund(h, co, 10_000_00n, 'live');
    const before = { wallet: await walletBalance(co, customer), other: await available(other), live: await available(co, 'live') };
    await expectScoped(co, other, { url: `/v1/customers/${customer}/balance` });
    await expectScoped(co, other, { url: `/v1/customers/${customer}/transactions` });
    await expectScoped(co, other, { url: `/v1/customers/${customer}/transactions`, body: { amount: 100 } });
    assert.deepEqual(await walletBalance(co, customer), before.wallet);
    assert.equal(await available(other), before.other);
    assert.equal(await available(co, 'live'), before.live);
  });

  test('401 without a key, 404 with an invalid or publishable key', async () => {
    for (const req of [
      { url: `/v1/customers/${customer}/balance` },
      { url: `/v1/customers/${customer}/transactions` },
      { url: `/v1/customers/${customer}/transactions`, body: { amount: 100 } },
    ]) {
      expectError(await send(h.app, { ...req, key: null }), 401, 'unauthenticated', 10000);
      expectError(await send(h.app, { ...req, key: 'sk_test_doesnotexist0000000000000000000000' }), 404, 'record_not_found', 10002);
      expectError(await send(h.app, { ...req, key: co.publishable_keys.test }), 404, 'record_not_found', 10002);
    }
  });

  test('test and live money never mix: a live customer’s wallet is funded from the live balance only', async () => {
    const liveCo = await h.company('Vivo SAS');
    const liveCustomer = await createCustomer(liveCo, 'live', 'Elena');
    const testCustomer = await createCustomer(liveCo, 'test', 'Elena');
    await fund(h, liveCo, 1_000_00n, 'test');
    expectError(await deposit({ amount: 500 }, liveCo, liveCustomer, 'live'), 422, 'insufficient_funds', 10501);
    await fund(h, liveCo, 3_000_00n, 'live');
    const res = await deposit({ amount: 2000 }, liveCo, liveCustomer, 'live');
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.is_test, false);
    assert.equal(await available(liveCo, 'live'), 1000);
    assert.equal(await available(liveCo, 'test'), 1000, 'test money untouched');
    assert.deepEqual(await walletBalance(liveCo, liveCustomer, 'live'), {
      id: liveCustomer,
      balance: 2000,
      label: '$ 2.000',
      currency: 'COP',
      is_test: false,
    });
    assert.equal((await walletBalance(liveCo, testCustomer)).balance, 0);
    const events = await walletEvents(liveCo);
    assert.deepEqual(
      events.map((e) => e.environment),
      ['live'],
    );
    await expectClean(h, liveCo);
  });

  test('the list: newest first, the list envelope, pages and filters', async () => {
    const who = await createCustomer(co, 'test', 'Fabio');
    const ids: string[] = [];
    for (const amount of [100, 200, 300]) {
      const res = await deposit({ amount, concept: `n${amount}` }, co, who);
      assert.equal(res.status, 200, res.raw);
      ids.push(res.body.id);
      h.clock.advance(10);
    }
    const all = await co.req({ url: `/v1/customers/${who}/transactions` });
    assert.equal(all.status, 200, all.raw);
    assert.deepEqual(
      all.body.data.map((t: { id: string }) => t.id),
      [...ids].reverse(),
    );
    assert.equal(all.body.total, 3);
    assert.equal(all.body.per_page, 20);
    const page = await co.req({ url: `/v1/customers/${who}/transactions?per_page=2&page=2` });
    assert.equal(page.status, 200, page.raw);
    assert.deepEqual(
      page.body.data.map((t: { id: string }) => t.id),
      [ids[0]],
    );
    assert.equal(page.body.last_page, 2);
    assert.equal(page.body.prev_page_url, `http://recaudo.test/v1/customers/${who}/transactions?per_page=2&page=1`);
    const oldest = await co.req({ url: `/v1/customers/${who}/transactions?sort=created_at` });
    assert.deepEqual(
      oldest.body.data.map((t: { id: string }) => t.id),
      ids,
    );
    const byId = await co.req({ url: `/v1/customers/${who}/transactions?filter[id]=${ids[1]}` });
    assert.deepEqual(
      byId.body.data.map((t: { concept: string }) => t.concept),
      ['n200'],
    );
    const withdrawals = await co.req({ url: `/v1/customers/${who}/transactions?filter[type]=withdrawal` });
    assert.equal(withdrawals.body.total, 0);
    expectError(await co.req({ url: `/v1/customers/${who}/transactions?filter[amount]=1` }), 400);
    expectValidation(await co.req({ url: `/v1/customers/${who}/transactions?per_page=101` }), 'per_page');
    // Only this customer's movements.
    assert.ok(!all.body.data.some((t: { customer_id: string }) => t.customer_id !== who));
  });

  test("cash-out extension point: a withdrawal row (CashoutLine) beside the caller's ledger hold, once; confirmed on completion; a return restores", async () => {
    const who = await createCustomer(co, 'test', 'Gina');
    await fund(h, co, 50_000_00n);
    assert.equal((await deposit({ amount: 30000 }, co, who)).status, 200);
    h.clock.advance(10);
    const db = h.runtime.deps.database.db;
    const cashoutId = `co_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
    const before = await ledgerTransactions(co);
    // The writer posts nothing itself.
    const probe = await createCustomer(co, 'test', 'Probe');
    const alone = await db.transaction().execute((trx) =>
      recordWalletWithdrawal(trx, scope(h, co), {
        customerId: probe,
        amount: 10_000_00n,
        currency: 'COP',
        cashoutId: 'co_probe',
        concept: 'Retiro',
      }),
    );
    assert.equal(alone.created, true);
    assert.equal(await ledgerTransactions(co), before, 'recordWalletWithdrawal posts no ledger entry');
    h.clock.advance(10);
    // As the cash-out module does it: hold from the wallet, then the row, in one transaction.
    const moved = await db.transaction().execute(async (trx) => {
      const hold = await holdPayout(trx, scope(h, co), {
        currency: 'COP',
        amount: 12_000_00n,
        source: { type: 'cashout', id: cashoutId },
        from: { kind: 'customer_wallet', holder: who },
      });
      return recordWalletWithdrawal(trx, scope(h, co), {
        customerId: who,
        amount: 12_000_00n,
        currency: 'COP',
        cashoutId,
        concept: 'Retiro a Bancolombia',
        ledgerTransactionId: hold.id,
      });
    });
    assert.equal(moved.created, true);
    const w = moved.transaction;
    assert.equal(w.type, 'withdrawal');
    assert.equal(w.subtype, 'WITHDRAW');
    assert.equal(w.node_type, 'CashoutLine');
    assert.deepEqual(w.node, { id: cashoutId });
    assert.equal(w.confirmed, false);
    assert.equal(w.amount, 12000);
    assert.equal((await walletBalance(co, who)).balance, 18000);
    // Recorded again (a retried job): the same row, no second event.
    const eventsBefore = (await walletEvents()).length;
    const again = await db
      .transaction()
      .execute((trx) => recordWalletWithdrawal(trx, scope(h, co), { customerId: who, amount: 12_000_00n, currency: 'COP', cashoutId }));
    assert.equal(again.created, false);
    assert.equal(again.transaction.id, w.id);
    assert.equal((await walletEvents()).length, eventsBefore);
    h.clock.advance(10);
    const confirmed = await db.transaction().execute((trx) => confirmWalletWithdrawal(trx, scope(h, co), cashoutId));
    assert.equal(confirmed?.confirmed, true);
    assert.equal(await db.transaction().execute((trx) => confirmWalletWithdrawal(trx, scope(h, co), 'co_none')), null);
    // The cash-out is rejected: the hold is released to the wallet and a return is recorded.
    const back = await db.transaction().execute(async (trx) => {
      const release = await releaseHold(trx, scope(h, co), {
        currency: 'COP',
        amount: 12_000_00n,
        source: { type: 'cashout', id: cashoutId },
        to: { kind: 'customer_wallet', holder: who },
      });
      return recordWalletReturn(trx, scope(h, co), { cashoutId, concept: 'Devuelto', ledgerTransactionId: release.id });
    });
    assert.equal(back.transaction.type, 'return');
    assert.equal(back.transaction.subtype, 'RETURN');
    assert.equal(back.transaction.amount, 12000);
    assert.equal((await walletBalance(co, who)).balance, 30000);
    await assert.rejects(db.transaction().execute((trx) => recordWalletReturn(trx, scope(h, co), { cashoutId: 'co_none' })));
    const list = await co.req({ url: `/v1/customers/${who}/transactions` });
    assert.deepEqual(
      list.body.data.map((t: { type: string; confirmed: boolean }) => [t.type, t.confirmed]),
      [
        ['return', true],
        ['withdrawal', true],
        ['deposit', true],
      ],
    );
    const events = (await walletEvents()).slice(-3).map((e) => e.data.type);
    assert.deepEqual(events, ['withdrawal', 'withdrawal', 'return']);
    await expectClean(h, co);
  });

  test(`parallel deposits against a balance for 5: exactly 5 go through (${ENGINE})`, async () => {
    const busy = await h.company('Concurrente SAS');
    const who = await createCustomer(busy, 'test', 'Hugo');
    await fund(h, busy, 5_000_00n);
    const results = await Promise.all(Array.from({ length: 20 }, () => deposit({ amount: 1000 }, busy, who)));
    const ok = results.filter((r) => r.status === 200);
    for (const r of results) if (r.status !== 200) expectError(r, 422, 'insufficient_funds', 10501);
    assert.equal(ok.length, 5);
    assert.equal(await available(busy), 0);
    assert.equal((await walletBalance(busy, who)).balance, 5000);
    assert.equal(await rowsOf(busy), 5);
    assert.equal((await walletEvents(busy)).length, 5);
    await expectClean(h, busy);
  });
});
