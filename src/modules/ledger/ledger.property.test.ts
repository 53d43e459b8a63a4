import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { createPayment, scopeOf } from '../../../test/support/payments.ts';
import { transitionPayment, TransitionNotAllowed } from '../payments/transition.ts';
import {
  auditLedger,
  recordCollection,
  recordRefund,
  reverse,
  settlePending,
  type LedgerScope,
  type PostedTransaction,
  type SplitShare,
} from './service.ts';
import { NON_NEGATIVE, type AccountKind } from './tables.ts';

/**
 * Property test of the ledger (docs/ledger.md): random sequences of collections (with splits,
 * pending or not), settlements, refunds, reversals, repeated postings, and payments resolved and
 * refunded through the payments module, over three companies. After every operation: every
 * transaction balances, every cached balance equals the sum of its entries, no company's
 * available, pending or wallet balance is below zero, the balances are those of a model that
 * applies each operation (or predicts its refusal), and money is conserved (the three companies'
 * accounts, clearing included, sum to zero per currency).
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);
const CURRENCIES = ['COP', 'USD'] as const;
type Cur = (typeof CURRENCIES)[number];

type SplitGen = { to: number; permille: number }[];
type Op =
  | { kind: 'collect'; c: number; currency: Cur; amount: bigint; pending: boolean; splits: SplitGen }
  | { kind: 'settle'; c: number; currency: Cur; amount: bigint; splits: SplitGen }
  | { kind: 'refund'; c: number; currency: Cur; amount: bigint; pending: boolean }
  | { kind: 'reverse'; pick: number }
  | { kind: 'repeat'; pick: number }
  | { kind: 'pay'; c: number; pesos: number; percentages: { to: number; pct: number }[] }
  | { kind: 'pay_refund'; pick: number };

const amount = fc.bigInt({ min: 1n, max: 50_000_00n });
const splitGen = fc.array(fc.record({ to: fc.nat(2), permille: fc.nat(1000) }), { maxLength: 2 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('collect' as const),
      c: fc.nat(2),
      currency: fc.constantFrom(...CURRENCIES),
      amount,
      pending: fc.boolean(),
      splits: splitGen,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('settle' as const), c: fc.nat(2), currency: fc.constantFrom(...CURRENCIES), amount, splits: splitGen }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      c: fc.nat(2),
      currency: fc.constantFrom(...CURRENCIES),
      amount,
      pending: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('repeat' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      c: fc.nat(2),
      pesos: fc.integer({ min: 1000, max: 60_000 }),
      percentages: fc.array(fc.record({ to: fc.nat(2), pct: fc.integer({ min: 1, max: 50 }) }), { maxLength: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pay_refund' as const), pick: fc.nat() }) },
);

describe('ledger (property)', () => {
  let h: Harness;
  let cos: Company[];
  let run = 0;
  before(async () => {
    h = await createHarness();
    cos = [await h.company('Propiedad Uno SAS'), await h.company('Propiedad Dos SAS'), await h.company('Propiedad Tres SAS')];
  });
  after(() => h.close());

  const ids = () => cos.map((c) => c.company.id);
  const key = (companyId: string, kind: AccountKind, currency: string) => `${companyId}|${kind}|${currency}`;
  const scope = (c: number): LedgerScope => ({ companyId: cos[c].company.id, environment: 'test', deps: h.runtime.deps });

  async function actual(): Promise<Map<string, bigint>> {
    // The exact balances (cached part + entries not rolled up yet), as every reader sees them.
    const rows = await h.runtime.deps.database.db
      .selectFrom('ledger_account_balances')
      .select(['company_id', 'kind', 'currency', 'balance'])
      .where('company_id', 'in', ids())
      .where('environment', '=', 'test')
      .execute();
    return new Map(rows.filter((r) => r.balance !== 0n).map((r) => [key(r.company_id, r.kind, r.currency), BigInt(r.balance)]));
  }

  /** The shares a split generator asks for (distinct other companies, together at most `total`). */
  function shares(c: number, total: bigint, splits: SplitGen): SplitShare[] {
    const out: SplitShare[] = [];
    for (const s of splits) {
      const to = cos[s.to].company.id;
      if (s.to === c || out.some((o) => o.walletCompanyId === to)) continue;
      out.push({ walletCompanyId: to, amount: (total * BigInt(s.permille)) / 1000n / 2n });
    }
    return out;
  }

  test('random collections, splits, settlements, refunds, reversals and payments keep the books balanced', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        run += 1;
        const model = await actual();
        const posted: { tx: PostedTransaction; c: number; replay?: () => Promise<unknown> }[] = [];
        const reversed = new Set<string>();
        const payments: { c: number; id: string; paid: bigint; currency: Cur; refunded: boolean }[] = [];
        const db = h.runtime.deps.database.db;

        /** Applies entries to the model, or reports that a non-negative account would go below zero. */
        const applies = (moves: { companyId: string; kind: AccountKind; currency: string; amount: bigint }[]): boolean => {
          const next = new Map(model);
          for (const m of moves) next.set(key(m.companyId, m.kind, m.currency), (next.get(key(m.companyId, m.kind, m.currency)) ?? 0n) + m.amount);
          for (const m of moves) if (NON_NEGATIVE.includes(m.kind) && next.get(key(m.companyId, m.kind, m.currency))! < 0n) return false;
          model.clear();
          for (const [k, v] of next) if (v !== 0n) model.set(k, v);
          return true;
        };
        /** Runs an operation the model expects to pass (ok) or to be refused with insufficient_balance. */
        const expect = async <T>(ok: boolean, fn: () => Promise<T>, label: string): Promise<T | null> => {
          try {
            const value = await fn();
            assert.ok(ok, `${label}: expected insufficient_balance`);
            return value;
          } catch (error) {
            if (ok || !(error instanceof ApiError) || error.def.codeName !== 'insufficient_balance') throw error;
            return null;
          }
        };

        for (const [i, o] of ops.entries()) {
          const label = `${i}: ${JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`;
          const source = { type: 'prop', id: `${run}-${i}` };
          switch (o.kind) {
            case 'collect': {
              const id = cos[o.c].company.id;
              const split = o.pending ? [] : shares(o.c, o.amount, o.splits);
              const input = { currency: o.currency, amount: o.amount, source, pending: o.pending, splits: split };
              const target: AccountKind = o.pending ? 'company_pending' : 'company_available';
              const total = split.reduce((s, x) => s + x.amount, 0n);
              const ok = applies([
                { companyId: id, kind: 'external_clearing', currency: o.currency, amount: -o.amount },
                { companyId: id, kind: target, currency: o.currency, amount: o.amount - total },
                ...split.map((s) => ({ companyId: s.walletCompanyId, kind: 'wallet' as const, currency: o.currency, amount: s.amount })),
              ]);
              assert.ok(ok, 'a collection always passes');
              const replay = () => db.transaction().execute((trx) => recordCollection(trx, scope(o.c), input));
              const r = await replay();
              posted.push({ tx: r.collection, c: o.c, replay });
              if (r.split) posted.push({ tx: r.split, c: o.c });
              assert.equal(r.split === null, total === 0n);
              break;
            }
            case 'settle': {
              const id = cos[o.c].company.id;
              const split = shares(o.c, o.amount, o.splits);
              const total = split.reduce((s, x) => s + x.amount, 0n);
              const ok = applies([
                { companyId: id, kind: 'company_pending', currency: o.currency, amount: -o.amount },
                { companyId: id, kind: 'company_available', currency: o.currency, amount: o.amount - total },
                ...split.map((s) => ({ companyId: s.walletCompanyId, kind: 'wallet' as const, currency: o.currency, amount: s.amount })),
              ]);
              const r = await expect(
                ok,
                () =>
                  db
                    .transaction()
                    .execute((trx) => settlePending(trx, scope(o.c), { currency: o.currency, amount: o.amount, source, splits: split })),
                label,
              );
              if (r) posted.push({ tx: r.settlement, c: o.c }, ...(r.split ? [{ tx: r.split, c: o.c }] : []));
              break;
            }
            case 'refund': {
              const id = cos[o.c].company.id;
              const ok = applies([
                { companyId: id, kind: o.pending ? 'company_pending' : 'company_available', currency: o.currency, amount: -o.amount },
                { companyId: id, kind: 'external_clearing', currency: o.currency, amount: o.amount },
              ]);
              const r = await expect(
                ok,
                () =>
                  db
                    .transaction()
                    .execute((trx) => recordRefund(trx, scope(o.c), { currency: o.currency, amount: o.amount, source, pending: o.pending })),
                label,
              );
              if (r) posted.push({ tx: r, c: o.c });
              break;
            }
            case 'reverse': {
              const candidates = posted.filter((p) => p.tx.kind !== 'reversal');
              if (!candidates.length) break;
              const { tx, c } = candidates[o.pick % candidates.length];
              const again = reversed.has(tx.id);
              const ok =
                again ||
                applies(tx.entries.map((e) => ({ companyId: e.account.companyId, kind: e.account.kind, currency: tx.currency, amount: -e.amount })));
              const r = await expect(ok, () => db.transaction().execute((trx) => reverse(trx, scope(c), { transactionId: tx.id })), label);
              if (r) {
                assert.equal(r.created, !again, 'a transaction is reversed once');
                assert.equal(
                  r.entries.reduce((s, e) => s + e.amount, 0n),
                  0n,
                );
                reversed.add(tx.id);
                if (!again) posted.push({ tx: r, c });
              }
              break;
            }
            case 'repeat': {
              const candidates = posted.filter((p) => p.replay);
              if (!candidates.length) break;
              const p = candidates[o.pick % candidates.length];
              const r = (await p.replay!()) as { collection: PostedTransaction };
              assert.equal(r.collection.id, p.tx.id);
              assert.equal(r.collection.created, false, 'the same event posts once');
              break;
            }
            case 'pay': {
              const owner = cos[o.c];
              const pcts = o.percentages.filter((s, j, all) => s.to !== o.c && all.findIndex((x) => x.to === s.to) === j);
              const p = await createPayment(owner, {
                amount: o.pesos,
                splits: pcts.map((s) => ({ wallet_id: cos[s.to].company.id, percentage: s.pct })),
              });
              const total = BigInt(o.pesos) * 100n;
              const split = pcts.map((s) => ({ companyId: cos[s.to].company.id, amount: (total * BigInt(s.pct * 100)) / 10_000n }));
              applies([
                { companyId: owner.company.id, kind: 'external_clearing', currency: 'COP', amount: -total },
                { companyId: owner.company.id, kind: 'company_available', currency: 'COP', amount: total - split.reduce((s, x) => s + x.amount, 0n) },
                ...split.map((s) => ({ companyId: s.companyId, kind: 'wallet' as const, currency: 'COP', amount: s.amount })),
              ]);
              const res = await owner.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } });
              assert.equal(res.body.status, 'approved', res.raw);
              payments.push({ c: o.c, id: p.id, paid: total, currency: 'COP', refunded: false });
              break;
            }
            case 'pay_refund': {
              if (!payments.length) break;
              const p = payments[o.pick % payments.length];
              const id = cos[p.c].company.id;
              if (p.refunded) {
                await assert.rejects(transitionPayment(scopeOf(h, cos[p.c]), p.id, 'refund'), TransitionNotAllowed);
                break;
              }
              const ok = applies([
                { companyId: id, kind: 'company_available', currency: p.currency, amount: -p.paid },
                { companyId: id, kind: 'external_clearing', currency: p.currency, amount: p.paid },
              ]);
              const r = await expect(ok, () => transitionPayment(scopeOf(h, cos[p.c]), p.id, 'refund'), label);
              if (r) p.refunded = true;
              break;
            }
          }

          // The books after every operation.
          const audit = await auditLedger(db, ids());
          assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] }, `after ${label}`);
          assert.deepEqual(await actual(), model, `balances after ${label}`);
          for (const currency of CURRENCIES) {
            const sum = [...model].filter(([k]) => k.endsWith(`|${currency}`)).reduce((s, [, v]) => s + v, 0n);
            assert.equal(sum, 0n, `money is conserved in ${currency}`);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});
