import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Transaction } from 'kysely';
import { ENGINE, createHarness, expectError, send, type Company, type Harness } from '../../../test/harness.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { activeWallet, createPayment, scopeOf } from '../../../test/support/payments.ts';
import { transitionPayment } from '../payments/transition.ts';
import {
  auditLedger,
  findTransaction,
  getBalances,
  LedgerError,
  postTransaction,
  recordCollection,
  recordRefund,
  reverse,
  settlePending,
  type LedgerScope,
} from './service.ts';

/** The ledger service (docs/ledger.md) and GET /v1/balances. */

function scope(h: Harness, co: Company, environment: 'test' | 'live' = 'test'): LedgerScope {
  return { companyId: co.company.id, environment, deps: h.runtime.deps };
}

function inTrx<T>(h: Harness, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  return h.runtime.deps.database.db.transaction().execute(fn);
}

/** Minor units per (kind) of the company in one currency: the exact balances (cached + not rolled up yet). */
async function accounts(h: Harness, co: Company, currency = 'COP', environment: 'test' | 'live' = 'test'): Promise<Record<string, bigint>> {
  const rows = await h.runtime.deps.database.db
    .selectFrom('ledger_account_balances')
    .select(['kind', 'balance'])
    .where('company_id', '=', co.company.id)
    .where('environment', '=', environment)
    .where('currency', '=', currency)
    .execute();
  return Object.fromEntries(rows.map((r) => [r.kind, BigInt(r.balance)]));
}

async function transactionsOf(h: Harness, co: Company): Promise<number> {
  const row = await h.runtime.deps.database.db
    .selectFrom('ledger_transactions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('company_id', '=', co.company.id)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function expectClean(h: Harness, ...companies: Company[]): Promise<void> {
  const audit = await auditLedger(
    h.runtime.deps.database.db,
    companies.map((c) => c.company.id),
  );
  assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] });
}

async function balances(co: Company, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: '/v1/balances', env });
  assert.equal(res.status, 200, res.raw);
  return res.body.data as { currency: string; available: number; pending: number; held: number }[];
}

function isApiError(name: string) {
  return (e: unknown) => e instanceof ApiError && e.def.codeName === name;
}

describe('ledger: posting', () => {
  let h: Harness;
  let a: Company;
  let b: Company;
  before(async () => {
    h = await createHarness();
    a = await h.company('Libro Mayor SAS');
    b = await h.company('Aliado Billetera SAS');
  });
  after(() => h.close());

  test('a collection credits the company and debits the outside world; entries sum to zero', async () => {
    const { collection, split } = await inTrx(h, (trx) =>
      recordCollection(trx, scope(h, a), { currency: 'COP', amount: 150_000_00n, source: { type: 'test', id: 'c-1' } }),
    );
    assert.match(collection.id, /^ltx_[0-9a-z]{26}$/);
    assert.equal(collection.kind, 'collection');
    assert.equal(collection.created, true);
    assert.equal(split, null);
    assert.equal(
      collection.entries.reduce((s, e) => s + e.amount, 0n),
      0n,
    );
    assert.deepEqual(collection.entries.map((e) => [e.account.kind, e.amount]).sort(), [
      ['company_available', 150_000_00n],
      ['external_clearing', -150_000_00n],
    ]);
    assert.deepEqual(await accounts(h, a), { company_available: 150_000_00n, external_clearing: -150_000_00n });
    assert.deepEqual(await getBalances(h.runtime.deps.database.db, scope(h, a)), [
      { currency: 'COP', available: 150_000_00n, pending: 0n, held: 0n },
    ]);
    assert.deepEqual(await balances(a), [{ currency: 'COP', available: 150000, pending: 0, held: 0 }]);
    await expectClean(h, a);
  });

  test('the same source posts once: a repeat returns the first transaction; other entries are a bug', async () => {
    const before = await transactionsOf(h, a);
    const input = { currency: 'USD', amount: 12_34n, source: { type: 'test', id: 'dup-1' } };
    const first = await inTrx(h, (trx) => recordCollection(trx, scope(h, a), input));
    const again = await inTrx(h, (trx) => recordCollection(trx, scope(h, a), input));
    assert.equal(again.collection.id, first.collection.id);
    assert.equal(again.collection.created, false);
    assert.deepEqual(again.collection.entries.map((e) => e.amount).sort(), first.collection.entries.map((e) => e.amount).sort());
    assert.equal(await transactionsOf(h, a), before + 1);
    assert.deepEqual(await accounts(h, a, 'USD'), { company_available: 12_34n, external_clearing: -12_34n });
    await assert.rejects(
      inTrx(h, (trx) => recordCollection(trx, scope(h, a), { ...input, amount: 99n })),
      LedgerError,
    );
    // The same source under another kind is another business event.
    await inTrx(h, (trx) => recordRefund(trx, scope(h, a), input));
    assert.deepEqual(await accounts(h, a, 'USD'), { company_available: 0n, external_clearing: 0n });
    const found = await findTransaction(h.runtime.deps.database.db, scope(h, a), { kind: 'collection', source: input.source });
    assert.equal(found?.id, first.collection.id);
    await expectClean(h, a);
  });

  test('postTransaction refuses unbalanced or malformed entries and writes nothing', async () => {
    const before = await transactionsOf(h, a);
    const post = (entries: { account: { kind: any; companyId?: string }; amount: bigint }[], extra: Record<string, unknown> = {}) =>
      inTrx(h, (trx) =>
        postTransaction(trx, scope(h, a), {
          kind: 'collection',
          currency: 'COP',
          source: { type: 'test', id: `bad-${Math.random()}` },
          entries,
          ...extra,
        }),
      );
    const ext = { kind: 'external_clearing' as const };
    const avail = { kind: 'company_available' as const };
    await assert.rejects(
      post([
        { account: ext, amount: -100n },
        { account: avail, amount: 99n },
      ]),
      /sum to zero/,
    );
    await assert.rejects(
      post([
        { account: ext, amount: 0n },
        { account: avail, amount: 0n },
      ]),
      /never zero/,
    );
    await assert.rejects(post([{ account: ext, amount: -100n }]), /at least two/);
    await assert.rejects(
      post([
        { account: avail, amount: -100n },
        { account: avail, amount: 100n },
      ]),
      /appears twice/,
    );
    await assert.rejects(
      post([
        { account: ext, amount: -100n },
        { account: { kind: 'company_available', companyId: b.company.id }, amount: 100n },
      ]),
      /only be its wallet/,
    );
    await assert.rejects(
      post(
        [
          { account: ext, amount: -100n },
          { account: avail, amount: 100n },
        ],
        { currency: 'pesos' },
      ),
      /ISO 4217/,
    );
    await assert.rejects(
      post([
        { account: ext, amount: -1 as unknown as bigint },
        { account: avail, amount: 1 as unknown as bigint },
      ]),
      /bigint/,
    );
    await assert.rejects(
      post(
        [
          { account: ext, amount: -100n },
          { account: avail, amount: 100n },
        ],
        { source: { type: '', id: 'x' } },
      ),
      /source/,
    );
    assert.equal(await transactionsOf(h, a), before);
    await expectClean(h, a, b);
  });

  test('a refund never takes the available balance below zero: insufficient_balance, nothing written', async () => {
    const co = await h.company('Reembolsos SAS');
    await inTrx(h, (trx) => recordCollection(trx, scope(h, co), { currency: 'COP', amount: 10_000_00n, source: { type: 'test', id: 'r-c' } }));
    const err = await inTrx(h, (trx) =>
      recordRefund(trx, scope(h, co), { currency: 'COP', amount: 10_000_01n, source: { type: 'test', id: 'r-1' } }),
    ).catch((e) => e);
    assert.ok(isApiError('insufficient_balance')(err), String(err));
    assert.equal(err.status, 422);
    assert.deepEqual(err.body(), {
      message: 'The COP available balance (COP 10000.00) is less than the COP 10000.01 this refund needs.',
      code: 10010,
      code_name: 'insufficient_balance',
    });
    assert.equal(await transactionsOf(h, co), 1, 'the refused refund left no transaction');
    // A refund of a currency never collected finds an empty account.
    await assert.rejects(
      inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'MXN', amount: 1n, source: { type: 'test', id: 'r-2' } })),
      isApiError('insufficient_balance'),
    );
    const ok = await inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'COP', amount: 10_000_00n, source: { type: 'test', id: 'r-1' } }));
    assert.equal(ok.kind, 'refund');
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    // The database refuses it too, whatever the code does.
    await assert.rejects(
      sql`UPDATE ledger_accounts SET balance = -1 WHERE company_id = ${co.company.id} AND kind = 'company_available'`.execute(
        h.runtime.deps.database.db,
      ),
      /ledger_accounts_non_negative/,
    );
    await expectClean(h, co);
  });

  test('pending money: collected into pending, settled into available; settling more than pending is refused', async () => {
    const co = await h.company('Pendientes SAS');
    const s = scope(h, co);
    await inTrx(h, (trx) => recordCollection(trx, s, { currency: 'COP', amount: 5_000_00n, source: { type: 'test', id: 'p-1' }, pending: true }));
    assert.deepEqual(await balances(co), [{ currency: 'COP', available: 0, pending: 5000, held: 0 }]);
    await assert.rejects(
      inTrx(h, (trx) => recordRefund(trx, s, { currency: 'COP', amount: 1n, source: { type: 'test', id: 'p-r' } })),
      isApiError('insufficient_balance'),
    );
    await assert.rejects(
      inTrx(h, (trx) => settlePending(trx, s, { currency: 'COP', amount: 5_000_01n, source: { type: 'test', id: 'p-1' } })),
      isApiError('insufficient_balance'),
    );
    await assert.rejects(
      inTrx(h, (trx) =>
        recordCollection(trx, s, {
          currency: 'COP',
          amount: 1_00n,
          source: { type: 'test', id: 'p-2' },
          pending: true,
          splits: [{ walletCompanyId: b.company.id, amount: 1n }],
        }),
      ),
      /settlePending/,
    );
    const { settlement, split } = await inTrx(h, (trx) =>
      settlePending(trx, s, {
        currency: 'COP',
        amount: 5_000_00n,
        source: { type: 'test', id: 'p-1' },
        splits: [{ walletCompanyId: b.company.id, amount: 1_000_00n }],
      }),
    );
    assert.equal(settlement.kind, 'settlement');
    assert.equal(split?.kind, 'split');
    assert.deepEqual(await balances(co), [{ currency: 'COP', available: 4000, pending: 0, held: 0 }]);
    // A pending refund (money never settled) comes out of pending.
    await inTrx(h, (trx) => recordCollection(trx, s, { currency: 'COP', amount: 3_00n, source: { type: 'test', id: 'p-3' }, pending: true }));
    await inTrx(h, (trx) => recordRefund(trx, s, { currency: 'COP', amount: 3_00n, source: { type: 'test', id: 'p-3' }, pending: true }));
    assert.deepEqual(await balances(co), [{ currency: 'COP', available: 4000, pending: 0, held: 0 }]);
    await expectClean(h, co, b);
  });

  test("splits move money to the receiving company's wallet, in that company's books", async () => {
    const co = await h.company('Marketplace SAS');
    const c = await h.company('Tercero SAS');
    const beforeB = (await balances(b)).find((x) => x.currency === 'COP')!.available;
    const { collection, split } = await inTrx(h, (trx) =>
      recordCollection(trx, scope(h, co), {
        currency: 'COP',
        amount: 100_000_00n,
        source: { type: 'test', id: 's-1' },
        splits: [
          { walletCompanyId: b.company.id, amount: 20_000_00n },
          { walletCompanyId: c.company.id, amount: 5_000_50n },
          { walletCompanyId: 'cmp_ignored_zero', amount: 0n },
        ],
      }),
    );
    assert.equal(collection.kind, 'collection');
    assert.ok(split);
    assert.equal(split.source.id, 's-1');
    assert.equal(
      split.entries.reduce((sum, e) => sum + e.amount, 0n),
      0n,
    );
    assert.deepEqual(
      split.entries.map((e) => [e.account.companyId, e.account.kind, e.amount]).sort(),
      [
        [b.company.id, 'wallet', 20_000_00n],
        [c.company.id, 'wallet', 5_000_50n],
        [co.company.id, 'company_available', -25_000_50n],
      ].sort(),
    );
    assert.deepEqual(await balances(co), [{ currency: 'COP', available: 74999.5, pending: 0, held: 0 }]);
    assert.equal((await balances(b)).find((x) => x.currency === 'COP')!.available, beforeB + 20000);
    assert.deepEqual(await balances(c), [{ currency: 'COP', available: 5000.5, pending: 0, held: 0 }]);
    assert.equal((await accounts(h, c)).wallet, 5_000_50n, "the wallet is an account of the receiving company's books");
    // Refused: more than the amount, to oneself, twice to one wallet.
    const bad = (splits: { walletCompanyId: string; amount: bigint }[]) =>
      inTrx(h, (trx) =>
        recordCollection(trx, scope(h, co), { currency: 'COP', amount: 100n, source: { type: 'test', id: `s-bad-${Math.random()}` }, splits }),
      );
    await assert.rejects(bad([{ walletCompanyId: b.company.id, amount: 101n }]), /exceed/);
    await assert.rejects(bad([{ walletCompanyId: co.company.id, amount: 1n }]), /another company/);
    await assert.rejects(
      bad([
        { walletCompanyId: b.company.id, amount: 1n },
        { walletCompanyId: b.company.id, amount: 1n },
      ]),
      /one split per wallet/,
    );
    // The collecting company bears a refund; the wallets keep their shares.
    await assert.rejects(
      inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'COP', amount: 100_000_00n, source: { type: 'test', id: 's-1' } })),
      isApiError('insufficient_balance'),
    );
    // Reversing the split takes the shares back (the receiving wallets must still hold them).
    const reversal = await inTrx(h, (trx) => reverse(trx, scope(h, co), { kind: 'split', source: { type: 'test', id: 's-1' } }));
    assert.equal(reversal.kind, 'reversal');
    assert.deepEqual(reversal.source, { type: 'ledger_transaction', id: split.id });
    assert.deepEqual(await balances(c), [{ currency: 'COP', available: 0, pending: 0, held: 0 }]);
    await inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'COP', amount: 100_000_00n, source: { type: 'test', id: 's-1' } }));
    assert.deepEqual(await balances(co), [{ currency: 'COP', available: 0, pending: 0, held: 0 }]);
    await expectClean(h, co, b, c);
  });

  test('reverse: opposite entries, at most once, never of a reversal, never below zero', async () => {
    const co = await h.company('Reversos SAS');
    const s = scope(h, co);
    const { collection } = await inTrx(h, (trx) =>
      recordCollection(trx, s, { currency: 'COP', amount: 7_000_00n, source: { type: 'test', id: 'v-1' } }),
    );
    const reversal = await inTrx(h, (trx) => reverse(trx, s, { transactionId: collection.id }));
    assert.equal(reversal.created, true);
    assert.deepEqual(
      reversal.entries.map((e) => [e.account.kind, e.amount]).sort(),
      collection.entries.map((e) => [e.account.kind, -e.amount]).sort(),
    );
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    const again = await inTrx(h, (trx) => reverse(trx, s, { kind: 'collection', source: { type: 'test', id: 'v-1' } }));
    assert.equal(again.id, reversal.id);
    assert.equal(again.created, false);
    await assert.rejects(
      inTrx(h, (trx) => reverse(trx, s, { transactionId: reversal.id })),
      /not reversed/,
    );
    await assert.rejects(
      inTrx(h, (trx) => reverse(trx, s, { transactionId: 'ltx_nothere' })),
      /no such ledger transaction/,
    );
    // Another company cannot reverse it (its own books only).
    await assert.rejects(
      inTrx(h, (trx) => reverse(trx, scope(h, a), { transactionId: collection.id })),
      /no such ledger transaction/,
    );
    // A collection whose money was refunded cannot be reversed too.
    const second = await inTrx(h, (trx) => recordCollection(trx, s, { currency: 'COP', amount: 1_00n, source: { type: 'test', id: 'v-2' } }));
    await inTrx(h, (trx) => recordRefund(trx, s, { currency: 'COP', amount: 1_00n, source: { type: 'test', id: 'v-2' } }));
    await assert.rejects(
      inTrx(h, (trx) => reverse(trx, s, { transactionId: second.collection.id })),
      isApiError('insufficient_balance'),
    );
    await expectClean(h, co);
  });

  test('entries and transactions are immutable in the database; unbalanced entries are refused there too', async () => {
    const db = h.runtime.deps.database.db;
    const { collection } = await inTrx(h, (trx) =>
      recordCollection(trx, scope(h, a), { currency: 'COP', amount: 1_00n, source: { type: 'test', id: 'imm-1' } }),
    );
    await assert.rejects(sql`UPDATE ledger_entries SET currency = 'USD' WHERE transaction_id = ${collection.id}`.execute(db), /immutable/);
    await assert.rejects(sql`DELETE FROM ledger_entries WHERE transaction_id = ${collection.id}`.execute(db), /immutable/);
    await assert.rejects(sql`UPDATE ledger_transactions SET source_id = 'x' WHERE id = ${collection.id}`.execute(db), /immutable/);
    await assert.rejects(sql`DELETE FROM ledger_transactions WHERE id = ${collection.id}`.execute(db), /immutable/);
    await assert.rejects(sql`DELETE FROM ledger_accounts WHERE company_id = ${a.company.id}`.execute(db), /immutable/);
    const account = collection.entries[0].account_id;
    await assert.rejects(
      sql`INSERT INTO ledger_entries (company_id, environment, id, transaction_id, account_id, amount, currency, created_at) VALUES (${a.company.id}, 'test', 'len_forged', ${collection.id}, ${account}, 5, 'COP', now())`.execute(
        db,
      ),
      /not balanced/,
    );
    await assert.rejects(
      sql`INSERT INTO ledger_entries (company_id, environment, id, transaction_id, account_id, amount, currency, created_at) VALUES (${a.company.id}, 'test', 'len_f1', ${collection.id}, ${account}, 5, 'USD', now()), (${a.company.id}, 'test', 'len_f2', ${collection.id}, ${account}, -5, 'USD', now())`.execute(
        db,
      ),
      /does not match/,
    );
    await expectClean(h, a);
  });

  test('accounts are per company, environment and currency; GET /balances is environment-scoped', async () => {
    const co = await h.company('Entornos SAS');
    await inTrx(h, (trx) => recordCollection(trx, scope(h, co, 'live'), { currency: 'USD', amount: 250n, source: { type: 'test', id: 'e-1' } }));
    await inTrx(h, (trx) => recordCollection(trx, scope(h, co), { currency: 'MXN', amount: 999n, source: { type: 'test', id: 'e-1' } }));
    assert.deepEqual(await balances(co, 'live'), [
      { currency: 'COP', available: 0, pending: 0, held: 0 },
      { currency: 'USD', available: 2.5, pending: 0, held: 0 },
    ]);
    assert.deepEqual(await balances(co), [
      { currency: 'COP', available: 0, pending: 0, held: 0 },
      { currency: 'MXN', available: 9.99, pending: 0, held: 0 },
    ]);
    const fresh = await h.company('Nueva SAS');
    assert.deepEqual(await balances(fresh), [{ currency: 'COP', available: 0, pending: 0, held: 0 }]);
    // Live money cannot pay a test refund.
    await assert.rejects(
      inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'USD', amount: 1n, source: { type: 'test', id: 'e-r' } })),
      isApiError('insufficient_balance'),
    );
    await expectClean(h, co);
  });

  test('GET /balances: auth matrix', async () => {
    const url = '/v1/balances';
    expectError(await send(h.app, { url, key: null }), 401, 'unauthenticated', 10000);
    expectError(await send(h.app, { url, key: 'sk_test_doesnotexist0000000000000000000000' }), 404, 'record_not_found', 10002);
    expectError(await send(h.app, { url, key: a.publishable_keys.test }), 404, 'record_not_found', 10002);
    assert.equal((await a.req({ url, env: 'live' })).status, 200);
    // Unknown query parameters are ignored.
    assert.equal((await a.req({ url: `${url}?currency=COP` })).status, 200);
    const doc = await send(h.app, { url: '/v1/openapi.json', key: null });
    assert.ok(doc.body.paths['/v1/balances']?.get, 'documented in OpenAPI');
  });
});

describe('ledger: payments post their money', () => {
  let h: Harness;
  let co: Company;
  let partner: Company;
  let third: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Cobros SAS');
    partner = await h.company('Socio SAS');
    third = await h.company('Tercero Billetera SAS');
  });
  after(() => h.close());

  const resolve = (id: string, body: Record<string, unknown> = { action: 'approve' }) => co.req({ url: `/v1/payments/${id}/resolve`, body });
  const cop = async (c: Company) => (await balances(c)).find((b) => b.currency === 'COP')!;

  test('a resolved test payment credits the company once, in the same transaction as the approval', async () => {
    const start = await cop(co);
    const p = await createPayment(co, { amount: 80000 });
    assert.deepEqual(await cop(co), start, 'nothing before it is paid');
    const rejected = await resolve(p.id, { action: 'reject', remarks: 'INSUFFICIENT_FUNDS' });
    assert.equal(rejected.body.status, 'declined');
    assert.deepEqual(await cop(co), start, 'a declined attempt moves nothing');
    const res = await resolve(p.id);
    assert.equal(res.body.status, 'approved', res.raw);
    assert.deepEqual(await cop(co), { currency: 'COP', available: start.available + 80000, pending: 0, held: 0 });
    const intent = (await co.req({ url: `/v1/payments/${p.id}/intents` })).body.data.find((i: any) => i.status === 'approved');
    const tx = await findTransaction(h.runtime.deps.database.db, scope(h, co), {
      kind: 'collection',
      source: { type: 'payment_intent', id: intent.id },
    });
    assert.ok(tx);
    assert.equal(tx.currency, 'COP');
    // The approval and the collection commit together: no approved payment without its money.
    const usd = await createPayment(co, { amount: 12.5, currency: 'USD' });
    await resolve(usd.id);
    assert.deepEqual(
      (await balances(co)).find((b) => b.currency === 'USD'),
      { currency: 'USD', available: 12.5, pending: 0, held: 0 },
    );
    await expectClean(h, co);
  });

  test('splits (by WALLET account or balance id) and a target wallet move shares to the other companies', async () => {
    const wallet = await activeWallet(h, co, partner);
    const [c0, p0, t0] = [await cop(co), await cop(partner), await cop(third)];
    const p = await createPayment(co, {
      amount: 100000,
      splits: [
        { account_id: wallet, amount: 10000 },
        { wallet_id: third.company.id, percentage: 12.5 },
      ],
    });
    await resolve(p.id);
    assert.equal((await cop(co)).available, c0.available + 100000 - 10000 - 12500);
    assert.equal((await cop(partner)).available, p0.available + 10000);
    assert.equal((await cop(third)).available, t0.available + 12500);
    // Everything to another balance: the target wallet takes what the splits leave.
    const t = await createPayment(co, {
      amount: 50000,
      target_wallet_id: partner.company.id,
      splits: [{ wallet_id: third.company.id, amount: 1000 }],
    });
    await resolve(t.id);
    assert.equal((await cop(co)).available, c0.available + 100000 - 10000 - 12500, 'the collecting company keeps nothing of it');
    assert.equal((await cop(partner)).available, p0.available + 10000 + 49000);
    assert.equal((await cop(third)).available, t0.available + 12500 + 1000);
    await expectClean(h, co, partner, third);
  });

  test('partial payments: each part is a collection; split shares add up exactly over the parts', async () => {
    const minor = async (c: Company) => {
      const a = await accounts(h, c);
      return (a.company_available ?? 0n) + (a.wallet ?? 0n);
    };
    const p = await createPayment(co, {
      amount: 10000.01,
      partial_payment_config: { enabled: true, minimum_amount: 1000 },
      splits: [
        { wallet_id: third.company.id, amount: 3333.33 },
        { wallet_id: partner.company.id, percentage: 33.33 },
      ],
    });
    const [c0, p0, t0] = [await minor(co), await minor(partner), await minor(third)];
    const scopeP = scopeOf(h, co);
    const { startIntent, settleIntent } = await import('../payments/intents.ts');
    for (const part of [3000_00n, 1234_56n, 5765_45n]) {
      const intent = await startIntent(scopeP, p.id, { method: 'card', amount: part });
      await settleIntent(scopeP, intent.id, { status: 'approved' });
    }
    const got = (await co.req({ url: `/v1/payments/${p.id}` })).body;
    assert.equal(got.status, 'approved');
    assert.equal(await minor(third), t0 + 3333_33n, 'the fixed share, exactly');
    assert.equal(await minor(partner), p0 + 3333_00n, '33.33 % of 10000.01, rounded down');
    assert.equal(await minor(co), c0 + 10000_01n - 3333_33n - 3333_00n);
    const intents = (await co.req({ url: `/v1/payments/${p.id}/intents` })).body.data.map((i: any) => i.id);
    const posted = await h.runtime.deps.database.db
      .selectFrom('ledger_transactions')
      .select('kind')
      .where('company_id', '=', co.company.id)
      .where('source_type', '=', 'payment_intent')
      .where('source_id', 'in', intents)
      .execute();
    assert.deepEqual(posted.map((c) => c.kind).sort(), ['collection', 'collection', 'collection', 'split', 'split', 'split']);
    await expectClean(h, co, partner, third);
  });

  test('a refund of a payment debits everything paid; refused (and the payment unchanged) when the balance is short', async () => {
    const solo = await h.company('Solo Reembolso SAS');
    const p = await createPayment(solo, { amount: 20000 });
    await solo.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } });
    assert.equal((await cop(solo)).available, 20000);
    const refunded = await transitionPayment(scopeOf(h, solo), p.id, 'refund');
    assert.equal(refunded.status, 'refunded');
    assert.equal((await cop(solo)).available, 0);
    assert.ok(await findTransaction(h.runtime.deps.database.db, scope(h, solo), { kind: 'refund', source: { type: 'payment', id: p.id } }));
    // A dispute holds the amount when the rail opens it; a lost one pays it out from the hold, once
    // (docs/disputes.md "Money"; the payment's dispute_lost transition posts no refund of its own).
    const d = await createPayment(solo, { amount: 3000 });
    await solo.req({ url: `/v1/payments/${d.id}/resolve`, body: { action: 'approve' } });
    const dispute = (await solo.req({ url: `/v1/payments/${d.id}/dispute`, body: {} })).body;
    const whileOpen = await cop(solo);
    assert.deepEqual([whileOpen.available, whileOpen.held], [0, 3000], 'held, not gone');
    await solo.req({ url: `/v1/disputes/${dispute.id}/resolve`, body: { outcome: 'lost' } });
    assert.equal((await solo.req({ url: `/v1/payments/${d.id}` })).body.status, 'refunded');
    assert.equal((await cop(solo)).available, 0);
    assert.equal((await cop(solo)).held, 0, 'out once, from the hold');
    // The split left: the company cannot give back what it no longer holds.
    const s = await createPayment(solo, { amount: 10000, splits: [{ wallet_id: partner.company.id, percentage: 50 }] });
    await solo.req({ url: `/v1/payments/${s.id}/resolve`, body: { action: 'approve' } });
    await assert.rejects(transitionPayment(scopeOf(h, solo), s.id, 'refund'), isApiError('insufficient_balance'));
    assert.equal((await solo.req({ url: `/v1/payments/${s.id}` })).body.status, 'approved');
    const events = await h.runtime.deps.database.db
      .selectFrom('events')
      .select('type')
      .where('company_id', '=', solo.company.id)
      .where('type', '=', 'payment.refunded')
      .execute();
    assert.equal(events.length, 2, 'no event for the refused refund');
    await expectClean(h, solo, partner);
  });
});

describe(`ledger: concurrency (${ENGINE})`, () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  const N = 50;

  test('50 parallel refunds of one source: exactly one posted, all get it', async () => {
    const co = await h.company('Paralelo SAS');
    await inTrx(h, (trx) => recordCollection(trx, scope(h, co), { currency: 'COP', amount: 100_00n, source: { type: 'charge', id: 'ch_1' } }));
    const results = await Promise.all(
      Array.from({ length: N }, () =>
        inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'COP', amount: 100_00n, source: { type: 'charge', id: 'ch_1' } })),
      ),
    );
    assert.equal(new Set(results.map((r) => r.id)).size, 1);
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    assert.equal(await transactionsOf(h, co), 2);
    await expectClean(h, co);
  });

  test('50 parallel reversals of one collection: exactly one reversal', async () => {
    const co = await h.company('Reverso Paralelo SAS');
    const { collection } = await inTrx(h, (trx) =>
      recordCollection(trx, scope(h, co), { currency: 'COP', amount: 100_00n, source: { type: 'charge', id: 'ch_2' } }),
    );
    const results = await Promise.all(
      Array.from({ length: N }, () => inTrx(h, (trx) => reverse(trx, scope(h, co), { transactionId: collection.id }))),
    );
    assert.equal(new Set(results.map((r) => r.id)).size, 1);
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    await expectClean(h, co);
  });

  test('50 parallel distinct refunds against a balance for 10: exactly 10 pass, never below zero', async () => {
    const co = await h.company('Saldo Justo SAS');
    await inTrx(h, (trx) => recordCollection(trx, scope(h, co), { currency: 'COP', amount: 10_000_00n, source: { type: 'test', id: 'funds' } }));
    const settled = await Promise.allSettled(
      Array.from({ length: N }, (_, i) =>
        inTrx(h, (trx) => recordRefund(trx, scope(h, co), { currency: 'COP', amount: 1_000_00n, source: { type: 'refund', id: `re_${i}` } })),
      ),
    );
    const ok = settled.filter((r) => r.status === 'fulfilled');
    const refused = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(ok.length, 10);
    assert.ok(
      refused.every((r) => isApiError('insufficient_balance')(r.reason)),
      String(refused.find((r) => !isApiError('insufficient_balance')(r.reason))?.reason),
    );
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    await expectClean(h, co);
  });

  test('50 parallel first collections and splits create each account once (get-or-create under concurrency)', async () => {
    const co = await h.company('Cuentas Nuevas SAS');
    const others = [await h.company('Billetera Uno SAS'), await h.company('Billetera Dos SAS')];
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        inTrx(h, (trx) =>
          recordCollection(trx, scope(h, i % 2 ? co : others[0]), {
            currency: 'USD',
            amount: 10_00n,
            source: { type: 'test', id: `first-${i}` },
            splits: [{ walletCompanyId: i % 2 ? others[i % 4 === 1 ? 0 : 1].company.id : others[1].company.id, amount: 1_00n }],
          }),
        ),
      ),
    );
    const rows = await h.runtime.deps.database.db
      .selectFrom('ledger_accounts')
      .select(['company_id', 'kind'])
      .where(
        'company_id',
        'in',
        [co, ...others].map((c) => c.company.id),
      )
      .where('currency', '=', 'USD')
      .execute();
    const keys = rows.map((r) => `${r.company_id}/${r.kind}`);
    assert.equal(new Set(keys).size, keys.length, 'one account per company, kind and currency');
    assert.equal((await accounts(h, co, 'USD')).company_available, 25n * 9_00n);
    assert.equal((await accounts(h, others[1], 'USD')).wallet, 25n * 1_00n + 12n * 1_00n);
    await expectClean(h, co, ...others);
  });

  test('50 parallel refunds of one payment: one refund, one ledger posting', async () => {
    const co = await h.company('Pago Paralelo SAS');
    const p = await createPayment(co, { amount: 5000 });
    await co.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } });
    const settled = await Promise.allSettled(Array.from({ length: N }, () => transitionPayment(scopeOf(h, co), p.id, 'refund')));
    assert.equal(settled.filter((r) => r.status === 'fulfilled').length, 1);
    assert.deepEqual(await accounts(h, co), { company_available: 0n, external_clearing: 0n });
    const refunds = await h.runtime.deps.database.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('company_id', '=', co.company.id)
      .where('kind', '=', 'refund')
      .execute();
    assert.equal(refunds.length, 1);
    await expectClean(h, co);
  });
});
