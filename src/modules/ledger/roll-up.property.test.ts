import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { sql, type Transaction } from 'kysely';
import { ENGINE, createHarness, type Company, type Harness } from '../../../test/harness.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { runRollUp } from './balance-events.ts';
import { ROLL_UP_JOB, rollUp } from './roll-up.ts';
import { chargeSource, postChargeRefund } from '../charges/ledger.ts';
import {
  auditLedger,
  depositToCustomerWallet,
  findTransaction,
  getBalances,
  holdPayout,
  postPayout,
  postTransaction,
  recordCollection,
  recordRefund,
  releaseHold,
  returnPayout,
  reverse,
  settlePending,
  type HoldSource,
  type LedgerScope,
  type LedgerSource,
  type PostedTransaction,
} from './service.ts';

/**
 * Property test of the roll-up (docs/ledger.md "Hot accounts: credits without a lock"): random
 * batches of postings (collections with and without splits, pending money, settlements, refunds,
 * cash-out holds from the company or a customer's wallet and their payouts, releases and returns,
 * customer-wallet deposits and spends, reversals of any earlier posting — a split's reversal
 * debits the partner's wallet and credits the company unrolled — and charge refunds, which
 * reverse a split and its collection together), roll-ups of one currency or all, the roll-up
 * jobs postings enqueue, and audits. On PostgreSQL each batch runs at once, on separate
 * connections, so postings, roll-ups and reads interleave; PGlite runs them one after another.
 * At any moment (an audit inside a batch) and after every batch: every account's balance read is
 * the sum of its entries, no unrolled row is anything but one of its account's entries, nothing
 * is below zero; after every batch the balances read (the view and GET /balances' figures) are
 * those of a model fed with the entries of the postings that passed, and money is conserved.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 30);
const CURRENCIES = ['COP', 'USD'] as const;
type Cur = (typeof CURRENCIES)[number];
const CUSTOMER = 'cus_roll_up_property';

type Op =
  | { kind: 'collect'; c: number; currency: Cur; amount: bigint; pending: boolean; split: { to: number; permille: number } | null }
  | { kind: 'settle'; c: number; currency: Cur; amount: bigint; split: { to: number; permille: number } | null }
  | { kind: 'refund'; c: number; currency: Cur; amount: bigint; pending: boolean }
  | { kind: 'hold'; c: number; currency: Cur; amount: bigint; from: 'company' | 'wallet' }
  | { kind: 'hold_end'; pick: number; action: 'payout' | 'release' | 'return' }
  | { kind: 'reverse'; pick: number }
  | { kind: 'charge_refund'; pick: number }
  | { kind: 'deposit'; c: number; currency: Cur; amount: bigint }
  | { kind: 'spend'; c: number; currency: Cur; amount: bigint }
  | { kind: 'roll_up'; c: number; currency: Cur | null }
  | { kind: 'jobs' }
  | { kind: 'audit' };

const amount = fc.bigInt({ min: 1n, max: 20_000_00n });
const company = fc.nat(2);
const currency = fc.constantFrom(...CURRENCIES);
const split = fc.option(fc.record({ to: fc.nat(2), permille: fc.nat(1000) }), { nil: null });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('collect' as const), c: company, currency, amount, pending: fc.boolean(), split }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), c: company, currency, amount, split }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('refund' as const), c: company, currency, amount, pending: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('hold' as const),
      c: company,
      currency,
      amount,
      from: fc.constantFrom('company' as const, 'wallet' as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('hold_end' as const),
      pick: fc.nat(),
      action: fc.constantFrom('payout' as const, 'release' as const, 'return' as const),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('charge_refund' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deposit' as const), c: company, currency, amount }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('spend' as const), c: company, currency, amount }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('roll_up' as const), c: company, currency: fc.option(currency, { nil: null }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'jobs' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'audit' as const }) },
);

describe(`ledger roll-up (property, ${ENGINE})`, () => {
  let h: Harness;
  let cos: Company[];
  before(async () => {
    h = await createHarness();
    h.clock.freeze();
    cos = [await h.company('Rollo Uno SAS'), await h.company('Rollo Dos SAS'), await h.company('Rollo Tres SAS')];
  });
  after(() => h.close());

  const db = () => h.runtime.deps.database.db;
  const ids = () => cos.map((c) => c.company.id);
  const scope = (c: number): LedgerScope => ({ companyId: cos[c].company.id, environment: 'test', deps: h.runtime.deps });
  const key = (companyId: string, kind: string, holder: string, cur: string) => `${companyId}|${kind}|${holder}|${cur}`;
  const clean = { unbalanced: [], mismatched: [], negative: [] };
  const inTrx = <T>(fn: (trx: Transaction<DB>) => Promise<T>) => db().transaction().execute(fn);

  /** Every account's balance as readers see it (the view: cached + unrolled), zeros left out. */
  async function read(): Promise<Map<string, bigint>> {
    const rows = await db()
      .selectFrom('ledger_account_balances')
      .select(['company_id', 'kind', 'holder', 'currency', 'balance'])
      .where('company_id', 'in', ids())
      .where('environment', '=', 'test')
      .execute();
    return new Map(rows.filter((r) => r.balance !== 0n).map((r) => [key(r.company_id, r.kind, r.holder, r.currency), BigInt(r.balance)]));
  }

  /** The roll-up jobs the postings of these companies enqueued, run as the worker would (whenever due). */
  async function runRollUpJobs(): Promise<void> {
    const jobs = await db()
      .deleteFrom('jobs')
      .where('kind', '=', ROLL_UP_JOB)
      .where(sql<string>`payload->>'company_id'`, 'in', ids())
      .returning('payload')
      .execute();
    for (const job of jobs) await runRollUp(h.runtime.deps, job.payload as Record<string, unknown>);
  }

  /**
   * What later ops act on (committed postings only; kept across runs, as the books are): transactions
   * to reverse, charges to refund, holds to end.
   */
  const posted: PostedTransaction[] = [];
  const charges: { c: number; id: string }[] = [];
  const holds: { c: number; currency: Cur; amount: bigint; source: LedgerSource; from: HoldSource; paid: boolean }[] = [];
  const pick = <T>(list: T[], n: number): T | undefined => list[n % Math.max(list.length, 1)];
  const companyOf = (tx: PostedTransaction) => cos.findIndex((co) => co.company.id === tx.company_id);
  /** Transactions the model has taken in, by id (any run): a charge refund also finds reversals another op made. */
  const seen = new Set<string>();

  test('random interleavings of postings, roll-ups and reads: the balance read is always the sum of the entries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 }), async (batches) => {
        const model = await read();
        const credit = (tx: PostedTransaction | null) => {
          if (!tx || !tx.created || seen.has(tx.id)) return;
          seen.add(tx.id);
          // A payout comes back only as returnPayout (hold_end), whose reversal has other entries.
          if (tx.kind !== 'reversal' && tx.kind !== 'payout') posted.push(tx);
          for (const e of tx.entries) {
            const k = key(e.account.companyId, e.account.kind, e.account.holder, tx.currency);
            const v = (model.get(k) ?? 0n) + e.amount;
            if (v === 0n) model.delete(k);
            else model.set(k, v);
          }
        };
        /** A debit may be refused for want of money (which depends on the interleaving), nothing else. */
        const mayRefuse = async (fn: () => Promise<void>) => {
          try {
            await fn();
          } catch (error) {
            if (!(error instanceof ApiError && error.def.codeName === 'insufficient_balance')) throw error;
          }
        };
        const shareOf = (c: number, total: bigint, s: { to: number; permille: number } | null) =>
          s && s.to !== c ? [{ walletCompanyId: cos[s.to].company.id, amount: (total * BigInt(s.permille)) / 1000n }] : [];

        const run = async (o: Op): Promise<void> => {
          const source = { type: 'prop', id: randomUUID() };
          switch (o.kind) {
            case 'collect': {
              // As a charge's (its refund is charge_refund), with a source of the charge's shape.
              const charge = { id: `ch_${randomUUID()}` };
              const splits = o.pending ? [] : shareOf(o.c, o.amount, o.split);
              const r = await inTrx((t) =>
                recordCollection(t, scope(o.c), { currency: o.currency, amount: o.amount, source: chargeSource(charge), pending: o.pending, splits }),
              );
              credit(r.collection);
              credit(r.split);
              if (!o.pending) charges.push({ c: o.c, id: charge.id });
              return;
            }
            case 'settle':
              return mayRefuse(async () => {
                const splits = shareOf(o.c, o.amount, o.split);
                const r = await inTrx((t) => settlePending(t, scope(o.c), { currency: o.currency, amount: o.amount, source, splits }));
                credit(r.settlement);
                credit(r.split);
              });
            case 'refund':
              return mayRefuse(async () =>
                credit(await inTrx((t) => recordRefund(t, scope(o.c), { currency: o.currency, amount: o.amount, source, pending: o.pending }))),
              );
            case 'hold':
              return mayRefuse(async () => {
                const from: HoldSource = o.from === 'company' ? { kind: 'company_available' } : { kind: 'customer_wallet', holder: CUSTOMER };
                credit(await inTrx((t) => holdPayout(t, scope(o.c), { currency: o.currency, amount: o.amount, source, from })));
                holds.push({ c: o.c, currency: o.currency, amount: o.amount, source, from, paid: false });
              });
            case 'hold_end': {
              // A cash-out's end, as the cashouts module posts it: paid out, released back to where it
              // was held from (a customer's wallet too), or — once paid — returned by the bank.
              const hold = pick(holds, o.pick);
              if (!hold) return;
              const money = { currency: hold.currency, amount: hold.amount, source: hold.source };
              return mayRefuse(async () => {
                if (o.action === 'release' && !hold.paid) {
                  credit(await inTrx((t) => releaseHold(t, scope(hold.c), { ...money, to: hold.from })));
                } else if (o.action === 'return' && hold.paid) {
                  credit(await inTrx((t) => returnPayout(t, scope(hold.c), { ...money, to: hold.from })));
                } else {
                  credit(await inTrx((t) => postPayout(t, scope(hold.c), money)));
                  hold.paid = true;
                }
              });
            }
            case 'reverse': {
              // Any earlier posting undone: a split's reversal locks the partner's wallet and credits
              // the company unrolled; a collection's, a hold's or a deposit's debits its target.
              const tx = pick(posted, o.pick);
              if (!tx) return;
              return mayRefuse(async () => credit(await inTrx((t) => reverse(t, scope(companyOf(tx)), { transactionId: tx.id }))));
            }
            case 'charge_refund': {
              // The charges module's refund: the split's reversal and the collection's in one call.
              const charge = pick(charges, o.pick);
              if (!charge) return;
              return mayRefuse(async () => {
                const source = chargeSource(charge);
                const [split, collection] = await inTrx(async (t) => {
                  await postChargeRefund(t, scope(charge.c), charge);
                  const reversalOf = async (kind: 'split' | 'collection') => {
                    const original = await findTransaction(t, scope(charge.c), { kind, source });
                    return (
                      original && findTransaction(t, scope(charge.c), { kind: 'reversal', source: { type: 'ledger_transaction', id: original.id } })
                    );
                  };
                  return [await reversalOf('split'), await reversalOf('collection')];
                });
                // Committed now: whichever op made each reversal, the model takes it in once.
                for (const r of [split, collection]) if (r) credit({ ...r, created: true });
              });
            }
            case 'deposit':
              return mayRefuse(async () =>
                credit(
                  await inTrx((t) =>
                    depositToCustomerWallet(t, scope(o.c), { currency: o.currency, amount: o.amount, source, customerId: CUSTOMER }),
                  ),
                ),
              );
            case 'spend':
              // A customer's wallet out to the world: no company figure moves, so the posting
              // enqueues a roll-up job of its own (the clearing credit is unrolled).
              return mayRefuse(async () =>
                credit(
                  await inTrx((t) =>
                    postTransaction(t, scope(o.c), {
                      kind: 'payout',
                      currency: o.currency,
                      source,
                      entries: [
                        { account: { kind: 'customer_wallet', holder: CUSTOMER }, amount: -o.amount },
                        { account: { kind: 'external_clearing' }, amount: o.amount },
                      ],
                    }),
                  ),
                ),
              );
            case 'roll_up':
              await rollUp(db(), scope(o.c), { now: h.clock.now(), ...(o.currency ? { currency: o.currency } : {}) });
              return;
            case 'jobs':
              return runRollUpJobs();
            case 'audit':
              assert.deepEqual(await auditLedger(db(), ids()), clean, 'an audit in the middle of a batch');
              return;
          }
        };

        for (const batch of batches) {
          await Promise.all(batch.map(run));
          assert.deepEqual(await auditLedger(db(), ids()), clean);
          assert.deepEqual(await read(), model, 'the balances read are the sums of the entries that passed');
          for (const cur of CURRENCIES) {
            const sum = [...model].filter(([k]) => k.endsWith(`|${cur}`)).reduce((s, [, v]) => s + v, 0n);
            assert.equal(sum, 0n, `money is conserved in ${cur}`);
          }
          for (const [c, co] of cos.entries()) {
            const figure = (kinds: string[], cur: string) => kinds.reduce((s, kind) => s + (model.get(key(co.company.id, kind, '', cur)) ?? 0n), 0n);
            for (const b of await getBalances(db(), scope(c)))
              assert.deepEqual(b, {
                currency: b.currency,
                available: figure(['company_available', 'wallet'], b.currency),
                pending: figure(['company_pending'], b.currency),
                held: figure(['company_held'], b.currency),
              });
          }
        }
        // Everything rolled up: the cached balances alone are the balances.
        await runRollUpJobs();
        for (const c of cos.keys()) await rollUp(db(), scope(c), { now: h.clock.now() });
        const left = await db().selectFrom('ledger_unrolled_entries').select('entry_id').where('company_id', 'in', ids()).execute();
        assert.equal(left.length, 0, 'nothing left unrolled');
        assert.deepEqual(await read(), model);
      }),
      { numRuns: RUNS },
    );
  });
});
