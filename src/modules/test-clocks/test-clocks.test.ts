import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { cycleIndexAt, FREQUENCIES, parseLocalDate, type Frequency } from '../subscriptions/calendar.ts';
import { ADVANCE_JOB, runAdvance } from './service.ts';
import { createCard, VISA_EXPIRED } from '../../../test/support/cards.ts';

const VISA_NO_FUNDS = '4000000000009995';

/**
 * Test clocks over HTTP (docs/subscriptions.md "Test clocks"): a customer on a clock, its
 * subscriptions billed as the clock is advanced, a year of cycles for every frequency.
 */

const bogota = (date: string, time = '00:00') => new Date(`${date}T${time}:00-05:00`);

describe('test clocks', () => {
  let h: Harness;
  let co: Company;
  let other: Company;

  before(async () => {
    h = await createHarness();
    co = await h.company('Academia');
    other = await h.company('Otra');
  });
  after(() => h.close());

  /** POST advance, then the background job (run here), then the clock is ready at the new time. */
  async function advance(clockId: string, to: Date): Promise<void> {
    const res = await co.req({ url: `/v1/test-clocks/${clockId}/advance`, body: { frozen_time: to.toISOString() } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'advancing');
    await h.runtime.deps.database.db
      .deleteFrom('jobs')
      .where('kind', '=', ADVANCE_JOB)
      .where(sql<string>`payload->>'clock_id'`, '=', clockId)
      .execute();
    await runAdvance(h.runtime.deps, { clock_id: clockId });
    const after = (await co.req({ url: `/v1/test-clocks/${clockId}` })).body;
    assert.deepEqual([after.status, after.frozen_time], ['ready', to.toISOString()]);
  }

  async function clockCustomer(frozen: Date, name = 'Reloj') {
    const clock = await co.req({ url: '/v1/test-clocks', body: { frozen_time: Math.floor(frozen.getTime() / 1000), name } });
    assert.equal(clock.status, 200, clock.raw);
    const customer = await co.req({
      url: '/v1/customers',
      body: { first_name: name, last_name: 'Pérez', email: 'reloj@example.com', phone: '+573001112233', test_clock: clock.body.id },
    });
    assert.equal(customer.status, 200, customer.raw);
    assert.equal(customer.body.test_clock, clock.body.id);
    return { clock: clock.body.id as string, customer: customer.body.id as string };
  }

  async function openPayments(subscriptionId: string) {
    const list = await co.req({ url: '/v1/payments?per_page=100&filter[status]=pending' });
    return (list.body.data as { id: string; subscription_id: string | null; cycle: number }[]).filter((p) => p.subscription_id === subscriptionId);
  }

  async function payAll(subscriptionId: string): Promise<number> {
    const open = await openPayments(subscriptionId);
    for (const p of open) {
      const res = await co.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } });
      assert.equal(res.status, 200, res.raw);
    }
    return open.length;
  }

  test('create, read, list, delete; validation, live keys and scoping', async () => {
    const created = await co.req({ url: '/v1/test-clocks', body: { frozen_time: '2027-05-01T10:00:00-05:00', name: 'Mayo' } });
    assert.equal(created.status, 200, created.raw);
    assert.deepEqual(
      [created.body.object, created.body.status, created.body.frozen_time, created.body.name],
      ['test_clock', 'ready', '2027-05-01T15:00:00.000Z', 'Mayo'],
    );
    assert.match(created.body.id, /^clock_[0-9a-z]{26}$/);
    assert.equal((await co.req({ url: '/v1/test-clocks' })).body.data.length >= 1, true);
    expectValidation(await co.req({ url: '/v1/test-clocks', body: { frozen_time: 'mañana' } }), 'frozen_time');
    expectValidation(
      await co.req({ url: `/v1/test-clocks/${created.body.id}/advance`, body: { frozen_time: '2027-04-01T00:00:00Z' } }),
      'frozen_time',
    );
    expectError(await co.req({ url: '/v1/test-clocks', body: { frozen_time: 1_800_000_000 }, env: 'live' }), 403);
    expectError(await other.req({ url: `/v1/test-clocks/${created.body.id}` }), 404, 'record_not_found', 10002);
    expectValidation(
      await co.req({ url: '/v1/customers', body: { first_name: 'Sin', test_clock: 'clock_00000000000000000000000000' } }),
      'test_clock',
    );
    expectValidation(await co.req({ url: '/v1/customers', body: { first_name: 'Vivo', test_clock: created.body.id }, env: 'live' }), 'test_clock');
    const del = await co.req({ method: 'DELETE', url: `/v1/test-clocks/${created.body.id}` });
    assert.equal(del.status, 204, del.raw);
    expectError(await co.req({ url: `/v1/test-clocks/${created.body.id}` }), 404, 'record_not_found', 10002);
  });

  test('a year of cycles for every frequency: each cycle one link, paid as it comes, always active', async () => {
    for (const frequency of FREQUENCIES) {
      const start = bogota('2028-01-31', '09:00');
      const { clock, customer } = await clockCustomer(start, `F${frequency}`);
      const sub = await co.req({
        url: '/v1/subscriptions',
        body: { customer_id: customer, name: `Plan ${frequency}`, amount_in_cents: 150_000, cicle_frequency: frequency, remember_to_pay_before: 0 },
      });
      assert.equal(sub.status, 200, sub.raw);
      assert.equal(sub.body.start_date, '2028-01-31', 'the start date is the clock’s day');
      // Daily: a quarter keeps the run short; the others go a whole year.
      const end = frequency === 'daily' ? bogota('2028-04-30', '09:00') : bogota('2029-01-30', '09:00');
      let paid = 0;
      let now = start;
      for (let step = 0; step < 400; step++) {
        const current = (await co.req({ url: `/v1/subscriptions/${sub.body.id}` })).body;
        assert.equal(current.status, current.current_cicle === 0 ? 'created' : 'active', `${frequency} step ${step}`);
        const next = new Date(current.next_due_date);
        if (next.getTime() > end.getTime()) break;
        now = new Date(Math.max(next.getTime(), now.getTime()) + 60_000);
        await advance(clock, now);
        paid += await payAll(sub.body.id);
      }
      const expected = cycleIndexAt(parseLocalDate('2028-01-31')!, frequency as Frequency, end);
      assert.equal(paid, expected, `${frequency}: cycles due by the end`);
      const final = (await co.req({ url: `/v1/subscriptions/${sub.body.id}` })).body;
      assert.deepEqual([final.status, final.current_cicle, final.unpaid_cycles], ['active', expected, 0], frequency);
    }
  });

  test('dunning on a clock: one advance of four months runs every cycle and check in order, to canceled', async () => {
    const { clock, customer } = await clockCustomer(bogota('2028-03-15', '10:00'), 'Moroso');
    const sub = await co.req({
      url: '/v1/subscriptions',
      body: { customer_id: customer, name: 'Mensual', amount_in_cents: 990_000, cicle_frequency: 'monthly', cancel_after_no_payment_before: 2 },
    });
    assert.equal(sub.status, 200, sub.raw);
    await advance(clock, bogota('2028-07-20'));
    const final = (await co.req({ url: `/v1/subscriptions/${sub.body.id}` })).body;
    assert.equal(final.status, 'canceled');
    assert.equal(final.canceled_at, bogota('2028-05-16').toISOString(), 'cancelled at the end of the third due day, in clock time');
    const events = await h.runtime.deps.database.db
      .selectFrom('events')
      .select(['type', 'created_at'])
      .where('company_id', '=', co.company.id)
      .where(sql<string>`data->>'id'`, '=', sub.body.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => [e.type, new Date(e.created_at).toISOString()]),
      [
        ['subscription.created', bogota('2028-03-15', '10:00').toISOString()],
        ['subscription.pass_due', bogota('2028-03-16').toISOString()],
        ['subscription.unpaid', bogota('2028-04-16').toISOString()],
        ['subscription.canceled', bogota('2028-05-16').toISOString()],
      ],
    );
  });

  async function cycleCharges(subscriptionId: string) {
    return h.runtime.deps.database.db
      .selectFrom('charges')
      .select(['id', 'status', 'remarks', 'external_id', 'amount', 'created_at'])
      .where('company_id', '=', co.company.id)
      .where('external_id', 'like', `${subscriptionId}-%`)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  async function autoDebit(name: string, card: string, extra: Record<string, unknown> = {}) {
    const { clock, customer } = await clockCustomer(bogota('2028-09-01', '08:00'), name);
    await createCard(co, customer, { card_number: card });
    const sub = await co.req({
      url: '/v1/subscriptions',
      body: {
        customer_id: customer,
        name: `Débito ${name}`,
        amount_in_cents: 4_500_000,
        cicle_frequency: 'monthly',
        payment_mode: 'auto_debit',
        ...extra,
      },
    });
    assert.equal(sub.status, 200, sub.raw);
    assert.equal(sub.body.payment_mode, 'auto_debit');
    return { clock, customer, sub: sub.body.id as string };
  }

  test('auto_debit over a year: the card is charged on each due date through the charges module; the last cycle paid finishes it', async () => {
    const { clock, sub } = await autoDebit('Cumplido', '4242424242424242', { cicles: 12 });
    await advance(clock, bogota('2029-09-02'));
    const charges = await cycleCharges(sub);
    const months = ['09', '10', '11', '12', '01', '02', '03', '04', '05', '06', '07', '08'];
    assert.deepEqual(
      charges.map((c) => [c.status, c.external_id, Number(c.amount), new Date(c.created_at).toISOString()]),
      months.map((m, i) => [
        'paid',
        `${sub}-${i + 1}-1`,
        4_500_000,
        (i === 0 ? bogota('2028-09-01', '08:00') : bogota(`${i < 4 ? 2028 : 2029}-${m}-01`)).toISOString(),
      ]),
    );
    const final = (await co.req({ url: `/v1/subscriptions/${sub}` })).body;
    assert.deepEqual([final.status, final.current_cicle], ['finished', 12]);
    assert.equal((await openPayments(sub)).length, 0, 'no link when the debit works');
  });

  test('daily auto_debit over a whole year in one advance: 366 charges, one per due date, all paid', async () => {
    const { clock, sub } = await autoDebit('Diario', '4242424242424242', { cicle_frequency: 'daily', amount_in_cents: 100_000 });
    await advance(clock, bogota('2029-09-01', '07:00'));
    const charges = await cycleCharges(sub);
    const expected = cycleIndexAt(parseLocalDate('2028-09-01')!, 'daily', bogota('2029-09-01', '07:00'));
    assert.equal(expected, 366);
    assert.equal(charges.length, expected);
    assert.ok(charges.every((c) => c.status === 'paid'));
    assert.equal(new Set(charges.map((c) => c.external_id)).size, expected, 'one charge per cycle');
    const final = (await co.req({ url: `/v1/subscriptions/${sub}` })).body;
    assert.deepEqual([final.status, final.current_cicle, final.unpaid_cycles], ['active', expected, 0]);
  });

  test('auto_debit: a retriable decline is retried at +1, +3 and +5 days, then the cycle goes by link; paying it brings the subscription back', async () => {
    const { clock, sub } = await autoDebit('Sin fondos', VISA_NO_FUNDS);
    await advance(clock, bogota('2028-09-08'));
    const charges = await cycleCharges(sub);
    assert.deepEqual(
      charges.map((c) => [c.status, c.remarks, c.external_id, new Date(c.created_at).toISOString()]),
      [
        ['failed', 'INSUFFICIENT_FUNDS', `${sub}-1-1`, bogota('2028-09-01', '08:00').toISOString()],
        ['failed', 'INSUFFICIENT_FUNDS', `${sub}-1-2`, bogota('2028-09-02').toISOString()],
        ['failed', 'INSUFFICIENT_FUNDS', `${sub}-1-3`, bogota('2028-09-04').toISOString()],
        ['failed', 'INSUFFICIENT_FUNDS', `${sub}-1-4`, bogota('2028-09-06').toISOString()],
      ],
    );
    const links = await openPayments(sub);
    assert.deepEqual(
      links.map((p) => p.cycle),
      [1],
    );
    assert.equal((await co.req({ url: `/v1/subscriptions/${sub}` })).body.status, 'pass_due');
    await payAll(sub);
    assert.equal((await co.req({ url: `/v1/subscriptions/${sub}` })).body.status, 'active');
  });

  test('auto_debit: CARD_EXPIRED goes to the link at once; without a card or account auto_debit is refused', async () => {
    const { clock, sub } = await autoDebit('Vencida', VISA_EXPIRED);
    await advance(clock, bogota('2028-09-01', '08:01'));
    assert.deepEqual(
      (await cycleCharges(sub)).map((c) => [c.status, c.remarks]),
      [['failed', 'CARD_EXPIRED']],
    );
    assert.deepEqual(
      (await openPayments(sub)).map((p) => p.cycle),
      [1],
    );
    const { customer } = await clockCustomer(bogota('2028-09-01', '08:00'), 'Sin tarjeta');
    expectValidation(
      await co.req({
        url: '/v1/subscriptions',
        body: { customer_id: customer, name: 'Débito', amount_in_cents: 1000, cicle_frequency: 'monthly', payment_mode: 'auto_debit' },
      }),
      'payment_mode',
    );
  });

  test('PUT /plans with update_existing_subscriptions: future cycles take the new amount, billed ones keep theirs', async () => {
    const { clock, customer } = await clockCustomer(bogota('2029-04-01', '09:00'), 'Tarifa');
    const plan = (await co.req({ url: '/v1/plans', body: { name: 'Plan tarifa', amount_in_cents: 1_000_000, cicle_frequency: 'monthly' } })).body;
    const other = (await co.req({ url: '/v1/plans', body: { name: 'Plan tarifa', amount_in_cents: 1_000_000, cicle_frequency: 'monthly' } })).body;
    const sub = (await co.req({ url: '/v1/subscriptions', body: { customer_id: customer, plan_id: plan.id, remember_to_pay_before: 0 } })).body;
    const untouched = (await co.req({ url: '/v1/subscriptions', body: { customer_id: customer, plan_id: other.id, remember_to_pay_before: 0 } }))
      .body;
    await advance(clock, bogota('2029-04-01', '09:01'));
    const put = await co.req({
      method: 'PUT',
      url: `/v1/plans/${plan.id}`,
      body: { amount_in_cents: 1_200_000, update_existing_subscriptions: true },
    });
    assert.equal(put.status, 200, put.raw);
    await co.req({ method: 'PUT', url: `/v1/plans/${other.id}`, body: { amount_in_cents: 1_200_000 } });
    await advance(clock, bogota('2029-05-01', '09:00'));
    const amounts = async (id: string) =>
      ((await co.req({ url: '/v1/payments?per_page=100' })).body.data as { subscription_id: string; cycle: number; amount: number }[])
        .filter((p) => p.subscription_id === id)
        .sort((a, b) => a.cycle - b.cycle)
        .map((p) => p.amount);
    assert.deepEqual(await amounts(sub.id), [10_000, 12_000]);
    assert.deepEqual(await amounts(untouched.id), [10_000, 10_000]);
  });

  test('complex payments, a dunning reminder by the channel, and a cancel that keeps the paid period', async () => {
    const { clock, customer } = await clockCustomer(bogota('2029-01-05', '10:00'), 'Compleja');
    const plan = await co.req({
      url: '/v1/plans',
      body: {
        name: 'Plan con descuento',
        amount_in_cents: 5_000_000,
        cicle_frequency: 'monthly',
        complex_payments: [{ amount_in_cents: 2_500_000, apply_on_cicle: 1, for_cicles: 2, label: 'Bienvenida' }],
      },
    });
    assert.equal(plan.status, 200, plan.raw);
    const sub = (await co.req({ url: '/v1/subscriptions', body: { customer_id: customer, plan_id: plan.body.id, remember_to_pay_before: 0 } })).body;
    await advance(clock, bogota('2029-01-05', '10:01'));
    await payAll(sub.id);
    await advance(clock, bogota('2029-02-05', '10:00'));
    await payAll(sub.id);
    // Cycle 3 (full price) is left unpaid: at the end of its due day the subscription is pass_due
    // and the link goes again by the customer's phone, within the contact hours.
    await advance(clock, bogota('2029-03-06', '12:00'));
    const payments = (await co.req({ url: '/v1/payments?per_page=100' })).body.data.filter(
      (p: { subscription_id: string | null }) => p.subscription_id === sub.id,
    ) as { id: string; cycle: number; amount: number; status: string; resend_count: number }[];
    assert.deepEqual(
      payments.sort((a, b) => a.cycle - b.cycle).map((p) => [p.cycle, p.amount, p.status, p.resend_count]),
      [
        [1, 25_000, 'approved', 0],
        [2, 25_000, 'approved', 0],
        [3, 50_000, 'pending', 1],
      ],
    );
    const messages = (await co.req({ url: `/v1/payments/${payments.find((p) => p.cycle === 3)!.id}/messages` })).body.data;
    assert.deepEqual(messages.map((m: { kind: string; channel: string }) => [m.kind, m.channel]).sort(), [
      ['link', 'messaging'],
      ['resend', 'messaging'],
    ]);
    assert.equal((await co.req({ url: `/v1/subscriptions/${sub.id}` })).body.status, 'pass_due');
    const canceled = await co.req({ url: `/v1/subscriptions/${sub.id}/cancel`, body: {} });
    assert.deepEqual(
      [canceled.status, canceled.body.status, canceled.body.canceled_at],
      [200, 'canceled', bogota('2029-03-06', '12:00').toISOString()],
    );
    await advance(clock, bogota('2029-08-01'));
    const after = (await co.req({ url: '/v1/payments?per_page=100' })).body.data.filter(
      (p: { subscription_id: string | null }) => p.subscription_id === sub.id,
    );
    assert.equal(after.length, 3, 'nothing billed after the cancel');
    assert.deepEqual(after.filter((p: { status: string }) => p.status === 'approved').length, 2, 'the paid cycles stay paid');
  });

  test('a deleted clock runs nothing more', async () => {
    const { clock, customer } = await clockCustomer(bogota('2028-06-01', '10:00'), 'Borrado');
    const sub = await co.req({
      url: '/v1/subscriptions',
      body: { customer_id: customer, name: 'Semanal', amount_in_cents: 10_000, cicle_frequency: 'weekly' },
    });
    assert.equal(sub.status, 200, sub.raw);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/test-clocks/${clock}` })).status, 204);
    const parked = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .select('id')
      .where(sql<string>`clock_id`, '=', clock)
      .execute();
    assert.equal(parked.length, 0);
    expectError(
      await co.req({ url: `/v1/test-clocks/${clock}/advance`, body: { frozen_time: '2028-07-01T00:00:00Z' } }),
      404,
      'record_not_found',
      10002,
    );
  });
});
