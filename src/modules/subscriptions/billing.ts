import type { Transaction } from 'kysely';
import { atClock, type AppDeps, type ServiceScope } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { clockOf } from '../test-clocks/service.ts';
import type { DB } from '../../platform/db/schema.ts';
import { toPesos } from '../../platform/money.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { customerAsPayer } from '../customers/service.ts';
import { PAYMENT_MACHINE } from '../payments/lifecycle.ts';
import { createPaymentIn } from '../payments/service.ts';
import type { PaymentRow } from '../payments/queries.ts';
import type { PaymentMethod } from '../payments/tables.ts';
import { cycleDueDate, cycleIndexAt, parseLocalDate, type Frequency, type LocalDate } from './calendar.ts';
import { SUBSCRIPTION_MACHINE, type SubscriptionAction } from './lifecycle.ts';
import { toSubscriptionResponse } from './present.ts';
import type { SubscriptionRow } from './tables.ts';
import './tables.ts';

/**
 * Cycle billing (docs/subscriptions.md "Cycles"): each cycle is one job at its send time (the due
 * date minus remember_to_pay_before days) that, in one transaction, claims the cycle's row (the
 * primary key (subscription, cycle) makes a second worker or a retry a no-op), creates its Payment
 * (delivered by the customer's channel) and schedules the next cycle and this cycle's due check.
 */
export const BILL_CYCLE_JOB = 'subscriptions.bill_cycle';
export const CHECK_CYCLE_JOB = 'subscriptions.check_cycle';
export const START_JOB = 'subscriptions.start';

const DAY_MS = 86_400_000;

export function anchorOf(sub: Pick<SubscriptionRow, 'anchor_date'>): LocalDate {
  const anchor = parseLocalDate(sub.anchor_date);
  if (!anchor) throw new Error(`subscription anchor ${sub.anchor_date} is not a date`);
  return anchor;
}

/** When cycle `cycle` (1-based) is due: from the anchor, skipping the periods spent frozen. */
export function dueAt(sub: Pick<SubscriptionRow, 'anchor_date' | 'frequency' | 'period_offset'>, cycle: number): Date {
  return cycleDueDate(anchorOf(sub), sub.frequency as Frequency, cycle - 1 + sub.period_offset);
}

/** The amount of a cycle: a complex payment covering it, else the subscription's amount. */
export function cycleAmount(sub: Pick<SubscriptionRow, 'amount' | 'complex_payments'>, cycle: number): bigint {
  const override = sub.complex_payments.find((c) => cycle >= c.apply_on_cicle && cycle < c.apply_on_cicle + c.for_cicles);
  return override ? BigInt(override.amount_in_cents) : sub.amount;
}

/** The next cycle ahead, or null when the bounded cycles are all billed. */
export function nextCycle(sub: Pick<SubscriptionRow, 'current_cycle' | 'cycles'>): number | null {
  const next = sub.current_cycle + 1;
  return sub.cycles !== null && next > sub.cycles ? null : next;
}

function payloadOf(sub: SubscriptionRow, extra: Record<string, unknown>): Record<string, unknown> {
  return { company_id: sub.company_id, environment: sub.environment, subscription_id: sub.id, ...extra };
}

/** Schedules a job of the subscription: in its customer's test clock's time when it has one. */
export function scheduleFor(trx: Transaction<DB>, deps: AppDeps, sub: SubscriptionRow, kind: string, extra: Record<string, unknown>, at: Date) {
  return deps.jobs.enqueue(trx, kind, payloadOf(sub, extra), at, sub.test_clock ? { clockId: sub.test_clock } : null);
}

/** "Now" for a subscription: its test clock's time, else the process clock. */
export async function nowFor(db: Executor, deps: AppDeps, sub: Pick<SubscriptionRow, 'company_id' | 'environment' | 'test_clock'>): Promise<Date> {
  const clock = await clockOf(db, { companyId: sub.company_id, environment: sub.environment }, sub.test_clock);
  return clock ? clock.now : deps.clock.now();
}

/** Schedules the billing of the next cycle at its send time (never before now). */
export async function scheduleNextCycle(trx: Transaction<DB>, deps: AppDeps, sub: SubscriptionRow): Promise<void> {
  const cycle = nextCycle(sub);
  if (cycle === null) return;
  const due = dueAt(sub, cycle);
  const sendAt = new Date(Math.max(deps.clock.now().getTime(), due.getTime() - sub.remember_to_pay_before * DAY_MS));
  await scheduleFor(trx, deps, sub, BILL_CYCLE_JOB, { cycle, due_at: due.toISOString() }, sendAt);
}

/** After an unfreeze: cycles not billed while frozen are skipped; the next one is due after now. */
export function offsetAfterFreeze(sub: SubscriptionRow, now: Date): number {
  const firstAhead = cycleIndexAt(anchorOf(sub), sub.frequency as Frequency, now);
  return Math.max(sub.period_offset, firstAhead - sub.current_cycle);
}

export async function lockSubscription(trx: Transaction<DB>, scope: Tenant, id: string): Promise<SubscriptionRow | undefined> {
  return trx.selectFrom('subscriptions').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * Applies a move of the subscription machine: the version goes up by one, and the event carries the
 * subscription with `previous_status` (receivers order events by `version`).
 */
export async function moveSubscription(
  trx: Transaction<DB>,
  scope: ServiceScope,
  row: SubscriptionRow,
  action: SubscriptionAction,
  set: Record<string, unknown> = {},
): Promise<SubscriptionRow> {
  const { row: moved } = await applyTransition(trx, scope, SUBSCRIPTION_MACHINE, {
    table: 'subscriptions',
    row,
    action,
    set: () => ({ ...set, version: row.version + 1 }),
    present: (updated) => ({ ...toSubscriptionResponse(updated), previous_status: row.status }),
  });
  return moved;
}

function tenantOf(payload: Record<string, unknown>): Tenant {
  return { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
}

/** The bill job: one payment for the cycle, exactly once. */
export async function runBillCycle(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const cycle = Number(payload.cycle);
  await deps.database.db.transaction().execute(async (trx) => {
    const sub = await lockSubscription(trx, tenant, String(payload.subscription_id));
    const scope: ServiceScope = { ...tenant, db: trx, deps, clockBinding: sub?.test_clock ? { clockId: sub.test_clock } : null };
    // Stale: cancelled, finished or frozen since, or a schedule replaced by an unfreeze.
    if (!sub || !['created', 'active', 'pass_due', 'unpaid'].includes(sub.status)) return;
    if (cycle !== sub.current_cycle + 1 || dueAt(sub, cycle).toISOString() !== payload.due_at) return;
    const due = dueAt(sub, cycle);
    const amount = cycleAmount(sub, cycle);
    const claimed = await trx
      .insertInto('subscription_cycles')
      .values({
        ...rowTenant(sub),
        subscription_id: sub.id,
        cycle,
        due_at: due,
        amount,
        payment_id: null,
        status: 'open',
        paid_at: null,
        created_at: deps.clock.now(),
      })
      .onConflict((oc) => oc.doNothing())
      .returning('cycle')
      .executeTakeFirst();
    if (!claimed) return;
    const payer = await customerAsPayer(trx, tenant, sub.customer_id);
    const payment = await createPaymentIn(
      trx,
      scope,
      {
        title: `${sub.name} (${cycle}${sub.cycles ? `/${sub.cycles}` : ''})`.slice(0, 255),
        amount: toPesos(amount),
        currency: sub.currency as 'COP',
        phone: payer?.phone ?? null,
        email: payer?.phone ? null : (payer?.email ?? null),
        allows: (sub.allows as PaymentMethod[] | null) ?? null,
        description: sub.description && sub.description.length >= 4 ? sub.description.slice(0, 2000) : null,
      },
      { subscriptionId: sub.id, cycle },
    );
    await trx
      .updateTable('subscription_cycles')
      .set({ payment_id: payment.id })
      .where('subscription_id', '=', sub.id)
      .where('cycle', '=', cycle)
      .execute();
    const billed = await trx
      .updateTable('subscriptions')
      .set({ current_cycle: cycle, updated_at: deps.clock.now() })
      .$call(inTenant(tenant))
      .where('id', '=', sub.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    // The cycle is checked at the end of its due day (Bogotá): unpaid by then, it counts.
    await scheduleFor(trx, deps, sub, CHECK_CYCLE_JOB, { cycle }, new Date(due.getTime() + DAY_MS));
    await scheduleNextCycle(trx, deps, billed);
  });
}

const rowTenant = (sub: SubscriptionRow) => ({ company_id: sub.company_id, environment: sub.environment });

/**
 * The due check (dunning): an open cycle at the end of its due day makes the subscription pass_due;
 * `cancel_after_no_payment_before` consecutive unpaid cycles make it unpaid; a further unpaid cycle
 * cancels it. A frozen, cancelled or finished subscription is left alone.
 */
export async function runCheckCycle(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  await deps.database.db.transaction().execute(async (trx) => {
    const scope: ServiceScope = { ...tenant, db: trx, deps };
    let sub = await lockSubscription(trx, tenant, String(payload.subscription_id));
    if (!sub || !['created', 'active', 'pass_due', 'unpaid'].includes(sub.status)) return;
    const cycle = await trx
      .selectFrom('subscription_cycles')
      .select('status')
      .where('subscription_id', '=', sub.id)
      .where('cycle', '=', Number(payload.cycle))
      .executeTakeFirst();
    if (!cycle || cycle.status !== 'open') return;
    const unpaid = sub.unpaid_cycles + 1;
    const set = { unpaid_cycles: unpaid };
    if (sub.status === 'unpaid') {
      await moveSubscription(trx, scope, sub, 'cancel', { ...set, canceled_at: deps.clock.now() });
      return;
    }
    if (sub.status !== 'pass_due') sub = await moveSubscription(trx, scope, sub, 'overdue', set);
    else
      sub = await trx.updateTable('subscriptions').set(set).$call(inTenant(tenant)).where('id', '=', sub.id).returningAll().executeTakeFirstOrThrow();
    if (unpaid >= sub.cancel_after_no_payment_before) await moveSubscription(trx, scope, sub, 'give_up');
  });
}

/** The start job: a trial (or a future start) begins; the subscription is active until its first due cycle. */
export async function runStart(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  await deps.database.db.transaction().execute(async (trx) => {
    const sub = await lockSubscription(trx, tenant, String(payload.subscription_id));
    if (sub?.status === 'created') await moveSubscription(trx, { ...tenant, db: trx, deps }, sub, 'start');
  });
}

/**
 * A payment of a billed cycle was approved (a listener of the payment machine, in the payment's
 * transaction): the cycle is paid, the unpaid count resets, the subscription is paid (and active
 * again), and the last bounded cycle paid finishes it. A late payment of a cancelled or frozen
 * subscription pays its cycle without moving the subscription.
 */
export async function followPayment(trx: Transaction<DB>, scope: ServiceScope, payment: PaymentRow, to: string): Promise<void> {
  if (to !== 'approved' || !payment.subscription_id || payment.cycle === null) return;
  const sub = await lockSubscription(trx, scope, payment.subscription_id);
  if (!sub) return;
  const now = await nowFor(trx, scope.deps, sub);
  const paid = await trx
    .updateTable('subscription_cycles')
    .set({ status: 'paid', paid_at: now })
    .where('subscription_id', '=', sub.id)
    .where('cycle', '=', payment.cycle)
    .where('status', '=', 'open')
    .returning('cycle')
    .executeTakeFirst();
  if (!paid) return;
  const stillOpen = await trx
    .selectFrom('subscription_cycles')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('subscription_id', '=', sub.id)
    .where('status', '=', 'open')
    .where('due_at', '<', now)
    .executeTakeFirstOrThrow();
  const unpaid = Number(stillOpen.n);
  if (!SUBSCRIPTION_MACHINE.find(sub.status, 'pay')) return;
  // Still behind on an older cycle: paid, but not back in good standing.
  if (unpaid > 0 && sub.status !== 'active') {
    await trx.updateTable('subscriptions').set({ unpaid_cycles: unpaid, updated_at: now }).where('id', '=', sub.id).execute();
    return;
  }
  const active = await moveSubscription(trx, scope, sub, 'pay', { unpaid_cycles: 0 });
  if (active.cycles !== null && payment.cycle >= active.cycles) await moveSubscription(trx, scope, active, 'finish', { finished_at: now });
}

export function registerSubscriptionJobs(deps: AppDeps): void {
  // A job of a customer on a test clock runs with that clock's time as its "now".
  deps.jobs.register(BILL_CYCLE_JOB, (payload, job) => runBillCycle(atClock(deps, job.clock), payload));
  deps.jobs.register(CHECK_CYCLE_JOB, (payload, job) => runCheckCycle(atClock(deps, job.clock), payload));
  deps.jobs.register(START_JOB, (payload, job) => runStart(atClock(deps, job.clock), payload));
  deps.transitions.on(PAYMENT_MACHINE, (trx, scope, payment, t) => followPayment(trx, scope, payment, t.to));
}
