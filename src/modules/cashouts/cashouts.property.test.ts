import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { chargeBody, createAccount, payer } from '../../../test/support/charges.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { auditLedger } from '../ledger/service.ts';
import {
  CASHOUT_APPROVAL_JOB,
  CASHOUT_RECONCILE_JOB,
  CASHOUT_SANDBOX_RETURN_JOB,
  runApprovalExpiry,
  runCashoutReconcile,
  runSandboxReturn,
} from './service.ts';

/**
 * Property test of money out (docs/cashouts.md): random sequences of collections, cash-outs (every
 * sandbox outcome), approvals, rejections, cancels, resolves, returns and the passing of time,
 * through the API. After every step: the ledger audits clean (every transaction balanced, cached
 * balances equal to their entries, nothing non-negative below zero); `held` is the sum of the
 * cash-outs still on their way; and no money is created: available + held = collected − what left
 * (completed and not returned).
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 15);

type Op =
  | { kind: 'fund'; pesos: number }
  | { kind: 'cashout'; pesos: number; scenario: string | null }
  | { kind: 'tick' }
  | { kind: 'decide'; pick: number; action: 'approve' | 'reject' | 'cancel' | 'complete' | 'fail' | 'return' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fund' as const), pesos: fc.integer({ min: 1000, max: 200_000 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('cashout' as const),
      pesos: fc.integer({ min: 1000, max: 150_000 }),
      scenario: fc.constantFrom(null, 'rejected', 'returned', 'pending', 'require_approval'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('decide' as const),
      pick: fc.nat(50),
      action: fc.constantFrom('approve' as const, 'reject' as const, 'cancel' as const, 'complete' as const, 'fail' as const, 'return' as const),
    }),
  },
);

const ON_THE_WAY = ['created', 'require_approval', 'processing'];

describe('cash-outs: money is never created (property)', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('random sequences keep the ledger balanced and the books closed', { timeout: 600_000 }, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 14 }), async (ops) => {
        const co: Company = await h.company(`Propiedad ${++run}`);
        const customer = await createCustomer(co, 'test', 'Ana');
        const account = await createAccount(h, co, customer);
        const p = await payer(h, co);
        let collected = 0n;
        const ids: string[] = [];
        const db = h.runtime.deps.database.db;
        const handlers: Record<string, typeof runCashoutReconcile> = {
          [CASHOUT_RECONCILE_JOB]: runCashoutReconcile,
          [CASHOUT_APPROVAL_JOB]: runApprovalExpiry,
          [CASHOUT_SANDBOX_RETURN_JOB]: runSandboxReturn,
        };
        for (const o of ops) {
          if (o.kind === 'fund') {
            const res = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: o.pesos }) });
            assert.equal(res.body.status, 'paid', res.raw);
            collected += BigInt(o.pesos) * 100n;
          } else if (o.kind === 'cashout') {
            const res = await co.req({
              url: '/v1/cashouts',
              body: { amount: o.pesos, customer_id: customer, account_id: account, ...(o.scenario ? { test_scenario: o.scenario } : {}) },
            });
            assert.ok(res.status === 200 || (res.status === 422 && res.body.code === 10501), res.raw);
            if (res.status === 200) ids.push(res.body.id);
          } else if (o.kind === 'tick') {
            h.clock.advance(h.config.sandboxCashoutDelayMs);
            if (ids.length) {
              const jobs = await db
                .selectFrom('jobs')
                .select(['id', 'kind', 'payload'])
                .where('kind', 'in', Object.keys(handlers))
                .where(sql<string>`payload->>'cashout_id'`, 'in', ids)
                .where('run_at', '<=', h.clock.now())
                .execute();
              for (const job of jobs) {
                await handlers[job.kind](h.runtime.deps, job.payload);
                await db.deleteFrom('jobs').where('id', '=', job.id).execute();
              }
            }
          } else if (ids.length) {
            const id = ids[o.pick % ids.length];
            const path = { approve: 'approve', reject: 'reject', cancel: 'cancel', complete: 'resolve', fail: 'resolve', return: 'resolve' }[
              o.action
            ];
            const body =
              o.action === 'complete'
                ? { action: 'complete' }
                : o.action === 'fail'
                  ? { action: 'reject' }
                  : o.action === 'return'
                    ? { action: 'return' }
                    : {};
            const res = await co.req({ url: `/v1/cashouts/${id}/${path}`, body });
            assert.ok(res.status === 200 || res.status === 422, res.raw);
          }
          // The books after every step.
          const audit = await auditLedger(db, [co.company.id]);
          assert.deepEqual(audit, { unbalanced: [], mismatched: [], negative: [] });
          const cop = (await co.req({ url: '/v1/balances' })).body.data.find((b: { currency: string }) => b.currency === 'COP');
          const list = await db.selectFrom('cashouts').select(['status', 'amount']).where('company_id', '=', co.company.id).execute();
          const sum = (statuses: string[]) => list.filter((c) => statuses.includes(c.status)).reduce((s, c) => s + BigInt(c.amount), 0n);
          const minor = (pesos: number) => BigInt(Math.round(pesos * 100));
          assert.equal(minor(cop.held), sum(ON_THE_WAY), 'held is what is on its way');
          assert.equal(minor(cop.available) + minor(cop.held), collected - sum(['completed']), 'no money created or lost');
          assert.ok(cop.available >= 0);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
