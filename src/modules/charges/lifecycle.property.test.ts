import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { inTransaction } from '../../platform/db/database.ts';
import { prefixedId } from '../../platform/ids.ts';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { CHARGE_ACTIONS, CHARGE_MACHINE, CHARGE_TRANSITIONS } from './lifecycle.ts';
import type { ChargeStatus } from './tables.ts';
import { applyChargeTransition, TransitionNotAllowed, insertCharge } from './transition.ts';
import { balance, chargeBody, chargeEvents, payer, runChargeJobs } from '../../../test/support/charges.ts';
import type { ServiceScope } from '../../platform/context.ts';

/**
 * Property tests of the charge state machine (docs/charges.md): over random sequences, a
 * transition the table forbids is never taken, every transition writes its event into the outbox
 * exactly once, and the public operations (create with every trigger, the reconciler, resolve,
 * cancel, refund) agree with a model of the table, of the errors and of the balance.
 */

// Every run drives the API against a database: 40 keeps the file well inside the per-file timeout
// on a loaded machine; PROPERTY_RUNS=500 for a deeper search.
const RUNS = Number(process.env.PROPERTY_RUNS ?? 40);
const DELAY = 1000;
const RECONCILE = 5000;

describe('charge state machine (property)', () => {
  let h: Harness;
  let co: Company;
  let p: { customer: string; card: string; account: string };
  const statusOf = async (id: string): Promise<ChargeStatus> =>
    (await h.runtime.deps.database.db.selectFrom('charges').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

  before(async () => {
    h = await createHarness({ SANDBOX_CHARGE_DELAY_MS: String(DELAY), CHARGE_RECONCILE_DELAY_MS: String(RECONCILE) });
    co = await h.company('Propiedades Cobros SAS');
    p = await payer(h, co);
  });
  after(() => h.close());

  test('the one transition function follows the table for any action from any state', async () => {
    const scope: ServiceScope = { companyId: co.company.id, environment: 'test', db: h.runtime.deps.database.db, deps: h.runtime.deps };
    const actions = CHARGE_ACTIONS.filter((a) => a !== 'create');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...actions), { minLength: 1, maxLength: 12 }), async (sequence) => {
        const now = h.clock.now();
        const charge = await inTransaction(scope.db, (trx) =>
          insertCharge(
            trx,
            { ...scope, db: trx },
            {
              id: prefixedId('ch', now.getTime()),
              intent_id: prefixedId('pi', now.getTime()),
              title: 'Propiedad',
              currency: 'COP',
              amount: 1000_00n,
              customer_id: p.customer,
              payment_method_type: 'card',
              account_id: null,
              card_id: p.card,
              external_id: null,
              idempotency_key: null,
              splits: '[]',
              metadata: null,
              test_scenario: null,
              remarks: null,
              network_id: null,
              paid_at: null,
              failed_at: null,
              cancelled_at: null,
              refunded_at: null,
              created_at: now,
              updated_at: now,
            },
          ),
        );
        let events = await chargeEvents(h, co, charge.id);
        assert.deepEqual(
          events.map((e) => e.type),
          ['charge.created'],
        );
        let everPaid = false;
        for (const action of sequence) {
          const from = await statusOf(charge.id);
          const expected = CHARGE_MACHINE.find(from, action);
          let refused = false;
          try {
            await inTransaction(scope.db, (trx) =>
              applyChargeTransition(trx, { ...scope, db: trx }, charge.id, action, action === 'decline' ? { remarks: 'RISK_CONTROL' } : {}),
            );
          } catch (error) {
            if (!(error instanceof TransitionNotAllowed)) throw error;
            refused = true;
          }
          const to = await statusOf(charge.id);
          const now = await chargeEvents(h, co, charge.id);
          const added = now.slice(events.length);
          if (!expected) {
            assert.ok(refused, `${action} from ${from} must be refused`);
            assert.equal(to, from);
            assert.deepEqual(added, []);
          } else {
            assert.ok(!refused, `${action} from ${from} is allowed`);
            assert.equal(to, expected.to);
            assert.deepEqual(
              added.map((e) => e.type),
              [...expected.events],
              `${from} -${action}-> ${to} emits its event exactly once`,
            );
            assert.equal(added[0].data.status, expected.to, 'the event carries the new state');
            if (expected.to === 'paid') everPaid = true;
          }
          events = now;
        }
        // Entering paid posted exactly one collection; never entering it posted none.
        const collections = await h.runtime.deps.database.db
          .selectFrom('ledger_transactions')
          .select('id')
          .where('kind', '=', 'collection')
          .where('source_type', '=', 'charge')
          .where('source_id', '=', charge.id)
          .execute();
        assert.equal(collections.length, everPaid ? 1 : 0);
      }),
      { numRuns: RUNS },
    );
  });

  test('the public operations agree with a model of the table, the errors and the balance', async () => {
    // Every pair of statuses one operation may move a charge between, by the table.
    const reachable = new Set<string>();
    for (const t of CHARGE_TRANSITIONS) for (const f of t.from ?? []) reachable.add(`${f}>${t.to}`);
    for (const t of CHARGE_TRANSITIONS.filter((x) => x.from?.includes('processing'))) reachable.add(`created>${t.to}`); // submit + outcome in one save

    type Op = { kind: 'tick' } | { kind: 'resolve'; approve: boolean } | { kind: 'cancel' } | { kind: 'refund' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 3, arbitrary: fc.constant({ kind: 'tick' as const }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('resolve' as const), approve: fc.boolean() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
      { weight: 2, arbitrary: fc.constant({ kind: 'refund' as const }) },
    );
    const method = fc.constantFrom('card' as const, 'account' as const);
    const scenario = fc.constantFrom(
      null,
      'approved',
      'pending',
      'persistence_lost',
      'INSUFFICIENT_FUNDS',
      'RISK_CONTROL',
      'CARD_EXPIRED',
      'TRANSACTION_REJECTED',
      'refundable',
    );
    const AMOUNT = 1234.5;
    const CENTS = 123450;

    await fc.assert(
      fc.asyncProperty(method, scenario, fc.array(op, { minLength: 1, maxLength: 8 }), async (m, sc, ops) => {
        const cents = async () => Math.round((await balance(co)).available * 100);
        let expectedCents = await cents();
        const externalId = randomUUID();
        const res = await co.req({
          url: '/v1/charges',
          body: chargeBody(p.customer, m === 'card' ? { card_id: p.card } : { account_id: p.account }, {
            amount: AMOUNT,
            test_scenario: sc ?? undefined,
            external_id: externalId,
          }),
        });
        // The model.
        const declines = sc !== null && !['approved', 'pending', 'persistence_lost', 'refundable'].includes(sc);
        let status: ChargeStatus;
        let events: string[];
        let resolved = false;
        if (sc === 'persistence_lost') {
          assert.equal(res.status, 503, res.raw);
          assert.equal(res.body.code, 90005);
          status = 'created';
          events = ['charge.created'];
        } else {
          assert.equal(res.status, 200, res.raw);
          if (declines) status = 'failed';
          else if (sc === 'pending' || m === 'account') status = 'processing';
          else status = 'paid';
          events = ['charge.created', 'charge.processing', ...(status === 'paid' ? ['charge.paid'] : status === 'failed' ? ['charge.failed'] : [])];
          assert.equal(res.body.status, status);
        }
        const found = await co.req({ url: `/v1/charges?filter[external_id]=${externalId}` });
        assert.equal(found.body.total, 1, 'the charge exists, whatever the answer was');
        const chargeId: string = found.body.data[0].id;
        if (status === 'paid') expectedCents += CENTS;

        for (const o of ops) {
          const before: ChargeStatus = status;
          let added: string[] = [];
          let error: { status: number; code?: number } | null = null;
          switch (o.kind) {
            case 'tick': {
              h.clock.advance(RECONCILE);
              await runChargeJobs(h, [chargeId]);
              // The rail settles what it can: a created charge is submitted; an approving debit pays.
              if (status === 'created' || status === 'processing') {
                if (sc !== 'pending') {
                  added = status === 'created' ? ['charge.processing', 'charge.paid'] : ['charge.paid'];
                  status = 'paid';
                  expectedCents += CENTS;
                } else if (status === 'created') {
                  added = ['charge.processing'];
                  status = 'processing';
                }
              }
              break;
            }
            case 'resolve': {
              const r = await co.req({ url: `/v1/charges/${chargeId}/resolve`, body: { action: o.approve ? 'approve' : 'reject' } });
              if (status === 'created' || status === 'processing') {
                assert.equal(r.status, 200, r.raw);
                added = [...(status === 'created' ? ['charge.processing'] : []), o.approve ? 'charge.paid' : 'charge.failed'];
                status = o.approve ? 'paid' : 'failed';
                resolved = true;
                if (o.approve) expectedCents += CENTS;
              } else {
                error = { status: 422 };
                assert.equal(r.status, 422, r.raw);
                assert.equal(r.body.code, undefined);
              }
              break;
            }
            case 'cancel': {
              const r = await co.req({ url: `/v1/charges/${chargeId}/cancel`, body: {} });
              if (status === 'created' || status === 'processing') {
                assert.equal(r.status, 200, r.raw);
                assert.equal(r.body.remarks, 'CANCELLED');
                added = ['charge.failed'];
                status = 'failed';
              } else {
                error = { status: 422, code: 10808 };
                assert.equal(r.body.code, 10808, r.raw);
              }
              break;
            }
            case 'refund': {
              const r = await co.req({ url: `/v1/charges/${chargeId}/refund`, body: {} });
              // SPEC.md: a paid test charge is 10806 (after 10807); only `refundable`, paid by the rail, refunds.
              const code: number | null = status === 'refunded' ? 10805 : status !== 'paid' ? 10807 : resolved || sc !== 'refundable' ? 10806 : null;
              if (code === null) {
                assert.equal(r.status, 200, r.raw);
                added = ['charge.refunded'];
                status = 'refunded';
                expectedCents -= CENTS;
              } else {
                error = { status: 422, code };
                assert.equal(r.body.code, code, r.raw);
              }
              break;
            }
          }
          const actual = await statusOf(chargeId);
          assert.equal(actual, status, `after ${JSON.stringify(o)} from ${before}`);
          if (before !== actual) assert.ok(reachable.has(`${before}>${actual}`), `${before} → ${actual} is not in the table`);
          if (error) assert.equal(actual, before, 'a refused operation changes nothing');
          events.push(...added);
          assert.deepEqual(
            (await chargeEvents(h, co, chargeId)).map((e) => e.type),
            events,
            `events after ${JSON.stringify(o)} from ${before}`,
          );
          assert.equal(await cents(), expectedCents, 'the balance follows paid and refunded charges');
        }
      }),
      { numRuns: RUNS },
    );
  });
});
