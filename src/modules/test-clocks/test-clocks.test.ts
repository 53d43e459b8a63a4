import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { cycleIndexAt, FREQUENCIES, parseLocalDate, type Frequency } from '../subscriptions/calendar.ts';
import { ADVANCE_JOB, runAdvance } from './service.ts';

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
