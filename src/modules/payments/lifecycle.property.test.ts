import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { settleIntent, startIntent } from './intents.ts';
import { PAYMENT_ACTIONS, PAYMENT_MACHINE, PAYMENT_TRANSITIONS, type PaymentAction } from './lifecycle.ts';
import { runExpiration } from './service.ts';
import type { PaymentStatus } from './tables.ts';
import { transitionPayment, TransitionNotAllowed } from './transition.ts';
import { createPayment, paymentEvents, scopeOf } from '../../../test/support/payments.ts';

/**
 * Property tests of the payment state machine (docs/payments.md): over random sequences of
 * actions, a transition the table forbids is never taken, and every transition writes its event
 * into the outbox exactly once (counted in the `events` table).
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);

async function statusOf(h: Harness, id: string): Promise<PaymentStatus> {
  const row = await h.runtime.deps.database.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow();
  return row.status;
}

describe('payment state machine (property)', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Propiedades SAS');
  });
  after(() => h.close());

  test('the one transition function follows the table for any action from any state', async () => {
    const actions = PAYMENT_ACTIONS.filter((a) => a !== 'create');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...actions), { minLength: 1, maxLength: 20 }), async (sequence) => {
        const p = await createPayment(co);
        let events = await paymentEvents(h, co, p.id);
        assert.deepEqual(
          events.map((e) => e.type),
          [...PAYMENT_MACHINE.find(null, 'create')!.events],
          'create emits its event once',
        );
        for (const action of sequence) {
          const from = await statusOf(h, p.id);
          const expected = PAYMENT_MACHINE.find(from, action);
          let refused = false;
          try {
            await transitionPayment(scopeOf(h, co), p.id, action);
          } catch (error) {
            if (!(error instanceof TransitionNotAllowed)) throw error;
            refused = true;
          }
          const to = await statusOf(h, p.id);
          const now = await paymentEvents(h, co, p.id);
          const added = now.slice(events.length);
          if (!expected) {
            assert.ok(refused, `${action} from ${from} must be refused`);
            assert.equal(to, from, `${action} from ${from} changed nothing`);
            assert.deepEqual(added, [], `${action} from ${from} emitted nothing`);
          } else {
            assert.ok(!refused, `${action} from ${from} is allowed`);
            assert.equal(to, expected.to);
            assert.deepEqual(
              added.map((e) => e.type),
              [...expected.events],
              `${from} -${action}-> ${to} emits its event exactly once`,
            );
            for (const e of added) assert.equal(e.data.status, expected.to, 'the event carries the new state');
          }
          events = now;
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('the public operations (attempts, resolve, cancel, expiry, paid externally, refunds) agree with a model of the table', async () => {
    // Pairs a single operation may produce: one table row, or resolve's start + settle through in_progress.
    const single = new Set(PAYMENT_TRANSITIONS.filter((t) => t.from).flatMap((t) => t.from!.map((f) => `${f}>${t.to}`)));
    const viaAttempt = new Set(
      PAYMENT_TRANSITIONS.filter((t) => t.action === 'start_attempt').flatMap((s) =>
        s.from!.flatMap((f) =>
          PAYMENT_TRANSITIONS.filter((t) => t.from?.includes('in_progress') && t.action.startsWith('attempt_')).map((t) => `${f}>${t.to}`),
        ),
      ),
    );

    type Op =
      | { kind: 'start'; fraction: number }
      | { kind: 'settle'; approve: boolean }
      | { kind: 'resolve'; approve: boolean }
      | { kind: 'cancel' }
      | { kind: 'expire' }
      | { kind: 'paid_externally' }
      | { kind: 'table'; action: PaymentAction };
    // Attempts and their outcomes are frequent; operations that end the payment are rarer, so
    // sequences reach the deeper states (partial payments, declines after them, disputes).
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('start' as const), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('settle' as const), approve: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('resolve' as const), approve: fc.boolean() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'paid_externally' as const }) },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('table' as const),
          action: fc.constantFrom<PaymentAction>('refund', 'dispute', 'dispute_won', 'dispute_lost'),
        }),
      },
    );
    const shape = fc.constantFrom('fixed' as const, 'partial' as const, 'open' as const);

    await fc.assert(
      fc.asyncProperty(shape, fc.array(op, { minLength: 1, maxLength: 16 }), async (kind, ops) => {
        const AMOUNT = 100_000_00n;
        const MIN = 10_000_00n;
        const body =
          kind === 'open'
            ? { amount: undefined, open_amount: true }
            : kind === 'partial'
              ? { amount: 100000, partial_payment_config: { enabled: true, minimum_amount: 10000 } }
              : { amount: 100000 };
        const p = await createPayment(co, body);
        const scope = scopeOf(h, co);
        // The model: status, money received, the open attempt.
        let status: PaymentStatus = 'pending';
        let paid = 0n;
        let open: { id: string; amount: bigint } | null = null;
        let seen = (await paymentEvents(h, co, p.id)).length;
        const payable = () => ['pending', 'declined', 'partially_paid'].includes(status);
        const settleModel = (approve: boolean, amount: bigint): string[] => {
          if (approve) {
            paid += amount;
            status = kind === 'open' || paid >= AMOUNT ? 'approved' : 'partially_paid';
            return [status === 'approved' ? 'payment.approved' : 'payment.partially_paid'];
          }
          status = paid > 0n ? 'partially_paid' : 'declined';
          return ['payment.rejected'];
        };

        for (const o of ops) {
          const before: PaymentStatus = status;
          let expected: string[] = [];
          let error: { status?: number; code_name?: string } | null = null;
          switch (o.kind) {
            case 'start': {
              const due = AMOUNT - paid;
              const amount =
                kind === 'open'
                  ? MIN + BigInt(Math.floor(o.fraction * 1_000_000))
                  : kind === 'partial'
                    ? due <= MIN
                      ? due
                      : MIN + ((due - MIN) * BigInt(Math.floor(o.fraction * 1000))) / 1000n
                    : due;
              const ok = payable();
              try {
                const intent = await startIntent(scope, p.id, { method: 'card', amount });
                assert.ok(ok, `start from ${before} must be refused`);
                open = { id: intent.id, amount };
                status = 'in_progress';
              } catch (e) {
                if (ok) throw e;
              }
              break;
            }
            case 'settle': {
              if (!open) break;
              await settleIntent(scope, open.id, o.approve ? { status: 'approved' } : { status: 'declined', remarks: 'TRANSACTION_REJECTED' });
              expected = settleModel(o.approve, open.amount);
              open = null;
              break;
            }
            case 'resolve': {
              const res = await co.req({
                url: `/v1/payments/${p.id}/resolve`,
                body: {
                  ...(o.approve ? { action: 'approve' } : { action: 'reject', remarks: 'RISK_CONTROL' }),
                  amount: kind === 'open' && !open ? 5000 : undefined,
                },
              });
              if (['pending', 'in_progress', 'declined'].includes(status)) {
                assert.equal(res.status, 200, res.raw);
                const amount = open ? open.amount : kind === 'open' ? 5000_00n : AMOUNT - paid;
                expected = settleModel(o.approve, amount);
                open = null;
              } else {
                error = { status: 422 };
                assert.equal(res.status, 422, res.raw);
                assert.equal(res.body.code, undefined);
              }
              break;
            }
            case 'cancel': {
              const res = await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}` });
              if (payable()) {
                assert.equal(res.status, 200, res.raw);
                status = 'cancelled';
                expected = ['payment.deleted'];
              } else {
                const name: string = ['approved', 'paid_externally', 'refunded', 'disputed'].includes(status)
                  ? 'payment_already_paid'
                  : status === 'cancelled'
                    ? 'payment_cancelled'
                    : status === 'in_progress'
                      ? 'payment_charge_in_progress'
                      : 'validation_error';
                error = { status: 422, code_name: name };
                assert.equal(res.status, 422, res.raw);
                assert.equal(res.body.code_name, name);
              }
              break;
            }
            case 'expire': {
              const db = h.runtime.deps.database.db;
              await db.updateTable('payments').set({ expires_at: h.clock.now() }).where('id', '=', p.id).execute();
              await runExpiration(h.runtime.deps, { company_id: co.company.id, environment: 'test', payment_id: p.id });
              await db.updateTable('payments').set({ expires_at: null }).where('id', '=', p.id).execute();
              if (['pending', 'declined'].includes(status)) expected = ['payment.expired'];
              if (status === 'partially_paid') expected = ['payment.partial_expired'];
              if (expected.length) status = 'expired';
              break;
            }
            case 'paid_externally': {
              const res = await co.req({ method: 'PUT', url: `/v1/payments/${p.id}`, body: { status: 'paid_externally' } });
              if (payable()) {
                assert.equal(res.status, 200, res.raw);
                status = 'paid_externally';
              } else {
                error = { status: 422, code_name: status === 'in_progress' ? 'payment_charge_in_progress' : 'cant_update_payment' };
                assert.equal(res.body.code_name, error.code_name, res.raw);
              }
              break;
            }
            case 'table': {
              const t = PAYMENT_MACHINE.find(status, o.action);
              try {
                await transitionPayment(scope, p.id, o.action);
                assert.ok(t, `${o.action} from ${status} must be refused`);
                status = t.to;
                expected = [...t.events];
              } catch (e) {
                if (!(e instanceof TransitionNotAllowed) || t) throw e;
              }
              break;
            }
          }
          const actual = await statusOf(h, p.id);
          assert.equal(actual, status, `after ${JSON.stringify(o)} from ${before}`);
          if (before !== actual)
            assert.ok(single.has(`${before}>${actual}`) || viaAttempt.has(`${before}>${actual}`), `${before} → ${actual} is not in the table`);
          if (error) assert.equal(actual, before, 'a refused operation changes nothing');
          const events = await paymentEvents(h, co, p.id);
          assert.deepEqual(
            events.slice(seen).map((e) => e.type),
            expected,
            `events of ${JSON.stringify(o)} from ${before}`,
          );
          seen = events.length;
          const row = await h.runtime.deps.database.db.selectFrom('payments').select('amount_paid').where('id', '=', p.id).executeTakeFirstOrThrow();
          assert.equal(row.amount_paid, paid, 'money received follows the approved attempts');
        }
      }),
      { numRuns: RUNS },
    );
  });
});
