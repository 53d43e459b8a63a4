import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { BILL_CYCLE_JOB, CHECK_CYCLE_JOB, runBillCycle, runCheckCycle, runStart, START_JOB } from './billing.ts';

/**
 * Plans and subscriptions over HTTP (docs/subscriptions.md). Time moves through the harness's
 * manual clock and the billing jobs run in order as it passes them (runUntil), never by sleeping.
 */

const KINDS = [BILL_CYCLE_JOB, CHECK_CYCLE_JOB, START_JOB];
const DAY = 86_400_000;

/** Runs this company's billing jobs due up to `target`, in time order, moving the clock to each. */
async function runUntil(h: Harness, co: Company, target: Date): Promise<void> {
  const db = h.runtime.deps.database.db;
  for (let round = 0; round < 500; round++) {
    const next = await db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', 'in', KINDS)
      .where(sql<string>`payload->>'company_id'`, '=', co.company.id)
      .where('run_at', '<=', target)
      .orderBy('run_at')
      .orderBy('id')
      .executeTakeFirst();
    if (!next) break;
    const at = new Date(next.run_at).getTime();
    if (at > h.clock.now().getTime()) h.clock.advance(at - h.clock.now().getTime());
    const claimed = await db.deleteFrom('jobs').where('id', '=', next.id).returning('id').executeTakeFirst();
    if (!claimed) continue;
    const deps = h.runtime.deps;
    if (next.kind === BILL_CYCLE_JOB) await runBillCycle(deps, next.payload);
    else if (next.kind === CHECK_CYCLE_JOB) await runCheckCycle(deps, next.payload);
    else await runStart(deps, next.payload);
  }
  if (target.getTime() > h.clock.now().getTime()) h.clock.advance(target.getTime() - h.clock.now().getTime());
}

async function subscriptionEvents(h: Harness, co: Company, id: string) {
  const rows = await h.runtime.deps.database.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('company_id', '=', co.company.id)
    .where(sql<string>`data->>'id'`, '=', id)
    .execute();
  return rows
    .map((r) => r.data as { version: number; status: string; previous_status: string | null })
    .map((d, i) => ({ type: rows[i].type, ...d }))
    .sort((a, b) => a.version - b.version || KINDS_ORDER(a.type) - KINDS_ORDER(b.type));
}
const KINDS_ORDER = (type: string) => (type === 'subscription.paid' ? 0 : 1);

async function cyclePayments(h: Harness, co: Company, subscriptionId: string) {
  const res = await co.req({ url: `/v1/payments?per_page=100` });
  assert.equal(res.status, 200, res.raw);
  return (res.body.data as { id: string; subscription_id: string | null; cycle: number | null; amount: number; status: string; source: string }[])
    .filter((p) => p.subscription_id === subscriptionId)
    .sort((a, b) => a.cycle! - b.cycle!);
}

async function pay(co: Company, paymentId: string): Promise<void> {
  const res = await co.req({ url: `/v1/payments/${paymentId}/resolve`, body: { action: 'approve' } });
  assert.equal(res.status, 200, res.raw);
}

/** Bogotá midnight of a date. */
const bogota = (date: string, time = '00:00') => new Date(`${date}T${time}:00-05:00`);

describe('subscriptions', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customerId: string;

  before(async () => {
    h = await createHarness();
    h.clock.freeze();
    // 2027-01-29 09:00 Bogotá.
    h.clock.advance(bogota('2027-01-29', '09:00').getTime() - h.clock.now().getTime());
    co = await h.company('Gimnasio');
    other = await h.company('Otra');
    const c = await co.req({
      url: '/v1/customers',
      body: { first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com', phone: '+573001234567' },
    });
    assert.equal(c.status, 200, c.raw);
    customerId = c.body.id;
  });
  after(() => h.close());

  test('plans: create, read, list, update; validation and scoping', async () => {
    const created = await co.req({
      url: '/v1/plans',
      body: { name: 'Plan mensual', amount_in_cents: 5_000_000, cicle_frequency: 'monthly', cicles: 0, trial: { has_trial: true, trial_days: 7 } },
    });
    assert.equal(created.status, 200, created.raw);
    const plan = created.body;
    assert.match(plan.id, /^plan_[0-9a-z]{26}$/);
    assert.deepEqual(
      [plan.amount_in_cents, plan.cicle_frequency, plan.cicles, plan.trial, plan.currency],
      [5_000_000, 'monthly', null, { has_trial: true, trial_days: 7 }, 'COP'],
    );
    assert.deepEqual((await co.req({ url: `/v1/plans/${plan.id}` })).body, plan);
    const listed = await co.req({ url: '/v1/plans?filter[cicle_frequency]=monthly' });
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id),
      [plan.id],
    );
    const updated = await co.req({ method: 'PUT', url: `/v1/plans/${plan.id}`, body: { amount_in_cents: 6_000_000 } });
    assert.equal(updated.status, 200, updated.raw);
    assert.equal(updated.body.amount_in_cents, 6_000_000);
    assert.equal(updated.body.name, 'Plan mensual');
    expectValidation(await co.req({ url: '/v1/plans', body: { name: 'Sin frecuencia', amount_in_cents: 100 } }), 'cicle_frequency');
    expectValidation(await co.req({ url: '/v1/plans', body: { name: 'Mala', amount_in_cents: 100, cicle_frequency: 'hourly' } }), 'cicle_frequency');
    await expectScoped(co, other, { url: `/v1/plans/${plan.id}` });
  });

  test('request mode, anchor on the 31st: one link per cycle, paid → active, unpaid → pass_due, last cycle paid → finished', async () => {
    const res = await co.req({
      url: '/v1/subscriptions',
      body: {
        customer_id: customerId,
        name: 'Membresía',
        amount_in_cents: 8_000_000,
        cicle_frequency: 'monthly',
        cicles: 3,
        start_date: '2027-01-31',
      },
    });
    assert.equal(res.status, 200, res.raw);
    const sub = res.body;
    assert.equal(sub.status, 'created');
    assert.equal(sub.next_due_date, bogota('2027-01-31').toISOString());
    assert.equal(sub.end_date, bogota('2027-03-31').toISOString());

    await runUntil(h, co, h.clock.now());
    let payments = await cyclePayments(h, co, sub.id);
    assert.deepEqual(
      payments.map((p) => [p.cycle, p.amount, p.source, p.status]),
      [[1, 80_000, 'subscription', 'pending']],
    );
    await pay(co, payments[0].id);
    assert.equal((await co.req({ url: `/v1/subscriptions/${sub.id}` })).body.status, 'active');

    // Cycle 2 is due on Feb 28 (clamped) and sent 3 days before; unpaid at the end of its day → pass_due.
    await runUntil(h, co, bogota('2027-03-01', '12:00'));
    payments = await cyclePayments(h, co, sub.id);
    assert.deepEqual(
      payments.map((p) => p.cycle),
      [1, 2],
    );
    let now = (await co.req({ url: `/v1/subscriptions/${sub.id}` })).body;
    assert.deepEqual([now.status, now.unpaid_cycles, now.current_cicle, now.next_due_date], ['pass_due', 1, 2, bogota('2027-03-31').toISOString()]);
    await pay(co, payments[1].id);
    now = (await co.req({ url: `/v1/subscriptions/${sub.id}` })).body;
    assert.deepEqual([now.status, now.unpaid_cycles], ['active', 0]);

    // Cycle 3 returns to the anchor day (Mar 31); paying it finishes the subscription.
    await runUntil(h, co, bogota('2027-03-29'));
    payments = await cyclePayments(h, co, sub.id);
    assert.equal(payments.length, 3);
    const third = await h.runtime.deps.database.db
      .selectFrom('subscription_cycles')
      .select('due_at')
      .where('subscription_id', '=', sub.id)
      .where('cycle', '=', 3)
      .executeTakeFirstOrThrow();
    assert.equal(new Date(third.due_at).toISOString(), bogota('2027-03-31').toISOString());
    await pay(co, payments[2].id);
    now = (await co.req({ url: `/v1/subscriptions/${sub.id}` })).body;
    assert.deepEqual([now.status, now.next_due_date], ['finished', null]);
    await runUntil(h, co, bogota('2027-06-01'));
    assert.equal((await cyclePayments(h, co, sub.id)).length, 3, 'nothing is billed after the last cycle');

    const events = await subscriptionEvents(h, co, sub.id);
    assert.deepEqual(
      events.map((e) => [e.version, e.type, e.previous_status, e.status]),
      [
        [1, 'subscription.created', null, 'created'],
        [2, 'subscription.paid', 'created', 'active'],
        [2, 'subscription.active', 'created', 'active'],
        [3, 'subscription.pass_due', 'active', 'pass_due'],
        [4, 'subscription.paid', 'pass_due', 'active'],
        [4, 'subscription.active', 'pass_due', 'active'],
        [5, 'subscription.paid', 'active', 'active'],
        [6, 'subscription.finished', 'active', 'finished'],
      ],
    );
  });

  test('dunning: never paid → pass_due, unpaid after cancel_after_no_payment_before cycles, then canceled', async () => {
    const start = '2027-07-10';
    h.clock.advance(bogota('2027-07-01').getTime() - h.clock.now().getTime());
    const res = await co.req({
      url: '/v1/subscriptions',
      body: {
        customer_id: customerId,
        name: 'Semanal',
        amount_in_cents: 1_000_000,
        cicle_frequency: 'weekly',
        start_date: start,
        cancel_after_no_payment_before: 2,
      },
    });
    assert.equal(res.status, 200, res.raw);
    await runUntil(h, co, new Date(bogota(start).getTime() + 30 * DAY));
    const sub = (await co.req({ url: `/v1/subscriptions/${res.body.id}` })).body;
    assert.equal(sub.status, 'canceled');
    assert.equal((await cyclePayments(h, co, sub.id)).length, 3, 'billing stops at the cancellation');
    const events = await subscriptionEvents(h, co, sub.id);
    assert.deepEqual(
      events.map((e) => [e.type, e.previous_status]),
      [
        ['subscription.created', null],
        ['subscription.pass_due', 'created'],
        ['subscription.unpaid', 'pass_due'],
        ['subscription.canceled', 'unpaid'],
      ],
    );
    expectError(await co.req({ url: `/v1/subscriptions/${sub.id}/cancel`, body: {} }), 422, 'subscription_transition_not_allowed', 10600);
  });

  test('trial from a plan: active at once, first cycle after the trial; freeze pauses billing, unfreeze skips the frozen periods', async () => {
    h.clock.advance(bogota('2027-09-01', '10:00').getTime() - h.clock.now().getTime());
    const plan = (
      await co.req({
        url: '/v1/plans',
        body: { name: 'Con prueba', amount_in_cents: 2_000_000, cicle_frequency: 'monthly', trial: { has_trial: true, trial_days: 14 } },
      })
    ).body;
    const res = await co.req({ url: '/v1/subscriptions', body: { customer_id: customerId, plan_id: plan.id } });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual([res.body.status, res.body.next_due_date, res.body.plan_id], ['active', bogota('2027-09-15').toISOString(), plan.id]);
    const frozen = await co.req({ url: `/v1/subscriptions/${res.body.id}/freeze`, body: {} });
    assert.equal(frozen.status, 200, frozen.raw);
    assert.equal(frozen.body.status, 'frozen');
    await runUntil(h, co, bogota('2027-11-20'));
    assert.equal((await cyclePayments(h, co, res.body.id)).length, 0, 'nothing billed while frozen');
    const thawed = await co.req({ url: `/v1/subscriptions/${res.body.id}/unfreeze`, body: {} });
    assert.equal(thawed.status, 200, thawed.raw);
    assert.deepEqual([thawed.body.status, thawed.body.next_due_date], ['active', bogota('2027-12-15').toISOString()]);
    await runUntil(h, co, bogota('2027-12-13'));
    const payments = await cyclePayments(h, co, res.body.id);
    assert.deepEqual(
      payments.map((p) => [p.cycle, p.amount]),
      [[1, 20_000]],
    );
  });

  test('contact hours: a cycle link billed on a Sunday is held to Monday 07:00 Bogotá, visible on the message', async () => {
    h.clock.advance(bogota('2027-12-26', '10:00').getTime() - h.clock.now().getTime()); // a Sunday
    const res = await co.req({
      url: '/v1/subscriptions',
      body: { customer_id: customerId, name: 'Domingo', amount_in_cents: 400_000, cicle_frequency: 'monthly' },
    });
    assert.equal(res.status, 200, res.raw);
    await runUntil(h, co, h.clock.now());
    const [payment] = await cyclePayments(h, co, res.body.id);
    const messages = await co.req({ url: `/v1/payments/${payment.id}/messages` });
    assert.equal(messages.status, 200, messages.raw);
    assert.deepEqual(
      messages.body.data.map((m: { channel: string; status: string; held_until: string | null }) => [m.channel, m.status, m.held_until]),
      [['messaging', 'pending', bogota('2027-12-27', '07:00').toISOString()]],
    );
    const job = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .select('run_at')
      .where('kind', '=', 'payments.send_message')
      .where(sql<string>`payload->>'payment_id'`, '=', payment.id)
      .executeTakeFirstOrThrow();
    assert.equal(new Date(job.run_at).toISOString(), bogota('2027-12-27', '07:00').toISOString());
  });

  test('a cycle is billed once: the same job run twice at once gives one payment', async () => {
    h.clock.advance(bogota('2028-01-10').getTime() - h.clock.now().getTime());
    const res = await co.req({
      url: '/v1/subscriptions',
      body: { customer_id: customerId, name: 'Doble', amount_in_cents: 300_000, cicle_frequency: 'daily' },
    });
    assert.equal(res.status, 200, res.raw);
    const job = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', '=', BILL_CYCLE_JOB)
      .where(sql<string>`payload->>'subscription_id'`, '=', res.body.id)
      .executeTakeFirstOrThrow();
    await Promise.all([runBillCycle(h.runtime.deps, job.payload), runBillCycle(h.runtime.deps, job.payload)]);
    assert.equal((await cyclePayments(h, co, res.body.id)).length, 1);
  });

  test('validation, auto_debit refused without a card or account, customer lists and scoping', async () => {
    expectValidation(await co.req({ url: '/v1/subscriptions', body: { customer_id: customerId } }), 'name', 'amount_in_cents', 'cicle_frequency');
    expectValidation(
      await co.req({
        url: '/v1/subscriptions',
        body: { customer_id: '01890000-0000-7000-8000-000000000000', plan_id: 'plan_00000000000000000000000000' },
      }),
      'customer_id',
    );
    expectValidation(
      await co.req({ url: '/v1/subscriptions', body: { customer_id: customerId, plan_id: 'plan_00000000000000000000000000' } }),
      'plan_id',
    );
    expectValidation(
      await co.req({
        url: '/v1/subscriptions',
        body: { customer_id: customerId, name: 'Débito', amount_in_cents: 1000, cicle_frequency: 'monthly', payment_mode: 'auto_debit' },
      }),
      'payment_mode',
    );
    expectValidation(
      await co.req({
        url: '/v1/subscriptions',
        body: { customer_id: customerId, name: 'Pasado', amount_in_cents: 1000, cicle_frequency: 'monthly', start_date: '2020-01-01' },
      }),
      'start_date',
    );
    const list = await co.req({ url: `/v1/customers/${customerId}/subscriptions?filter[status]=canceled` });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.data.length, 1);
    const any = (await co.req({ url: '/v1/subscriptions' })).body.data[0];
    await expectScoped(co, other, { url: `/v1/subscriptions/${any.id}` });
  });
});
