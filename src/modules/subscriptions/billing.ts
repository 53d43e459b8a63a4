import type { Transaction } from 'kysely';
import { atClock, backgroundContext, type AppDeps, type ServiceScope } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { CHARGE_MACHINE } from '../charges/lifecycle.ts';
import { createCharge } from '../charges/service.ts';
import type { Executor } from '../../platform/db/database.ts';
import { clockOf } from '../test-clocks/service.ts';
import type { DB } from '../../platform/db/schema.ts';
import { toPesos } from '../../platform/money.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { customerAsPayer } from '../customers/service.ts';
import { PAYMENT_MACHINE } from '../payments/lifecycle.ts';
import { createPaymentIn, remindPaymentIn } from '../payments/service.ts';
import type { PaymentRow } from '../payments/queries.ts';
import type { PaymentMethod } from '../payments/tables.ts';
import { cycleIndexAt, type Frequency } from './calendar.ts';
import { anchorOf, BILLING_STATUSES, cycleAmount, dueAt, nextCycle } from './cycles.ts';
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
export const DEBIT_CYCLE_JOB = 'subscriptions.debit_cycle';

const DAY_MS = 86_400_000;

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
  // A link goes out remember_to_pay_before days early; a debit is billed on its due date.
  const early = sub.payment_mode === 'auto_debit' ? 0 : sub.remember_to_pay_before * DAY_MS;
  const sendAt = new Date(Math.max(deps.clock.now().getTime(), due.getTime() - early));
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
    if (!sub || !BILLING_STATUSES.includes(sub.status)) return;
    const due = dueAt(sub, cycle);
    if (cycle !== sub.current_cycle + 1 || due.toISOString() !== payload.due_at) return;
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
    // auto_debit: the customer's card or account is charged at the due time, or now when that is
    // past (its own job, through the outside-call protocol); request: the cycle's link goes out now.
    const debitAt = new Date(Math.max(due.getTime(), deps.clock.now().getTime()));
    if (sub.payment_mode === 'auto_debit')
      await scheduleFor(trx, deps, sub, DEBIT_CYCLE_JOB, { cycle, attempt: 1, previous_charge_id: null }, debitAt);
    else await sendCycleLink(trx, scope, sub, cycle, amount);
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

/** Creates the cycle's payment link (delivered by the customer's channel) and links it to the cycle. */
async function sendCycleLink(trx: Transaction<DB>, scope: ServiceScope, sub: SubscriptionRow, cycle: number, amount: bigint): Promise<void> {
  const payer = await customerAsPayer(trx, scope, sub.customer_id);
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
    let sub = await lockSubscription(trx, tenant, String(payload.subscription_id));
    if (!sub || !BILLING_STATUSES.includes(sub.status)) return;
    const scope: ServiceScope = { ...tenant, db: trx, deps, clockBinding: bindingOf(sub) };
    const cycle = await trx
      .selectFrom('subscription_cycles')
      .select(['status', 'payment_id'])
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
    // The reminder: the cycle's link again by the customer's channel (held to the contact hours).
    if (cycle.payment_id) await remindPaymentIn(trx, scope, cycle.payment_id);
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
  await payCycle(trx, scope, payment.subscription_id, payment.cycle);
}

/** A cycle was paid (its link or its debit), in the payment's or the charge's transaction. */
async function payCycle(trx: Transaction<DB>, scope: ServiceScope, subscriptionId: string, cycle: number): Promise<void> {
  const sub = await lockSubscription(trx, scope, subscriptionId);
  if (!sub) return;
  const now = await nowFor(trx, scope.deps, sub);
  const paid = await trx
    .updateTable('subscription_cycles')
    .set({ status: 'paid', paid_at: now })
    .where('subscription_id', '=', sub.id)
    .where('cycle', '=', cycle)
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
  if (active.cycles !== null && cycle >= active.cycles) await moveSubscription(trx, scope, active, 'finish', { finished_at: now });
}

/** Declines worth trying again later (the card or account may have funds then); others go to a link. */
export const RETRIABLE_REMARKS = ['INSUFFICIENT_FUNDS', 'TRANSACTION_REJECTED', 'TIMEOUT'];
/** Days after the due date of the debit retries (PRODUCT.md: +1, +3, +5). */
export const RETRY_DAYS = [1, 3, 5];

class StaleDebit extends Error {}

/** The customer's authorized payment method to debit: its newest card, else its newest ACTIVE authorized account. */
async function debitMethodOf(db: Executor, tenant: Tenant, customerId: string): Promise<{ card_id: string } | { account_id: string } | null> {
  const card = await db
    .selectFrom('cards')
    .select('id')
    .$call(inTenant(tenant))
    .where('customer_id', '=', customerId)
    .where('authorization', '=', true)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (card) return { card_id: card.id };
  const account = await db
    .selectFrom('accounts')
    .select('id')
    .$call(inTenant(tenant))
    .where('customer_id', '=', customerId)
    .where('status', '=', 'ACTIVE')
    .where('authorization', '=', true)
    .where('subtype', '!=', 'WALLET')
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return account ? { account_id: account.id } : null;
}

/** Whether the customer has something auto_debit can charge (checked at creation). */
export async function hasDebitMethod(db: Executor, tenant: Tenant, customerId: string): Promise<boolean> {
  return (await debitMethodOf(db, tenant, customerId)) !== null;
}

/**
 * The debit job (auto_debit): one charge per attempt, through the charges module (the outside-call
 * protocol: recorded, committed, rail called, settled). The cycle names the attempt's charge in the
 * charge's own record transaction, conditional on the attempt before: a second run records nothing.
 * The outcome reaches the subscription through followCharge.
 */
export async function runDebitCycle(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const db = deps.database.db;
  const cycle = Number(payload.cycle);
  const attempt = Number(payload.attempt);
  const previous = (payload.previous_charge_id as string | null) ?? null;
  const sub = await db
    .selectFrom('subscriptions')
    .selectAll()
    .$call(inTenant(tenant))
    .where('id', '=', String(payload.subscription_id))
    .executeTakeFirst();
  if (!sub || !BILLING_STATUSES.includes(sub.status)) return;
  const row = await db
    .selectFrom('subscription_cycles')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .where('cycle', '=', cycle)
    .executeTakeFirst();
  if (!row || row.status !== 'open' || row.charge_id !== previous || row.payment_id) return;
  const method = await debitMethodOf(db, tenant, sub.customer_id);
  if (!method) {
    await db.transaction().execute((trx) => fallToLink(trx, { ...tenant, db: trx, deps, clockBinding: bindingOf(sub) }, sub.id, cycle, previous));
    return;
  }
  try {
    await createCharge(
      backgroundContext(deps, tenant),
      {
        amount: toPesos(row.amount),
        title: `${sub.name} (${cycle}${sub.cycles ? `/${sub.cycles}` : ''})`.slice(0, 100).padEnd(5, '.'),
        customer_id: sub.customer_id,
        currency: sub.currency as 'COP',
        external_id: `${sub.id}-${cycle}-${attempt}`,
        ...method,
      },
      null,
      {
        onRecord: async (trx, charge) => {
          const r = await trx
            .updateTable('subscription_cycles')
            .set({ charge_id: charge.id, debit_attempts: attempt })
            .where('subscription_id', '=', sub.id)
            .where('cycle', '=', cycle)
            .where('status', '=', 'open')
            .where('charge_id', previous === null ? 'is' : '=', previous)
            .executeTakeFirst();
          if (Number(r.numUpdatedRows) === 0) throw new StaleDebit();
        },
      },
    );
  } catch (error) {
    if (error instanceof StaleDebit) return;
    // The method cannot be charged any more (a card deleted meanwhile...): the cycle goes by link.
    if (error instanceof ApiError && error.status === 422) {
      await db.transaction().execute((trx) => fallToLink(trx, { ...tenant, db: trx, deps, clockBinding: bindingOf(sub) }, sub.id, cycle, previous));
      return;
    }
    throw error;
  }
}

const bindingOf = (sub: SubscriptionRow) => (sub.test_clock ? { clockId: sub.test_clock } : null);

/** The debit could not be made (declined for good, no method): the cycle's link goes out instead. */
async function fallToLink(trx: Transaction<DB>, scope: ServiceScope, subscriptionId: string, cycle: number, chargeId: string | null): Promise<void> {
  const sub = await lockSubscription(trx, scope, subscriptionId);
  if (!sub) return;
  const row = await trx
    .selectFrom('subscription_cycles')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .where('cycle', '=', cycle)
    .forUpdate()
    .executeTakeFirst();
  if (!row || row.status !== 'open' || row.payment_id || row.charge_id !== chargeId) return;
  await sendCycleLink(trx, scope, sub, cycle, row.amount);
}

/**
 * A charge of a cycle settled (a listener of the charge machine, in the charge's transaction):
 * paid pays the cycle; a retriable decline is tried again at +1, +3 and +5 days after the due date;
 * any other decline (CARD_EXPIRED at once) or the last retry sends the cycle's link instead.
 */
export async function followCharge(
  trx: Transaction<DB>,
  scope: ServiceScope,
  charge: { id: string; remarks: string | null; external_id: string | null },
  to: string,
): Promise<void> {
  // Only a cycle's debit carries `<subscription>-<cycle>-<attempt>`: other charges cost no query.
  if ((to !== 'paid' && to !== 'failed') || !charge.external_id?.startsWith('sub_')) return;
  const row = await trx.selectFrom('subscription_cycles').selectAll().where('charge_id', '=', charge.id).executeTakeFirst();
  if (!row) return;
  if (to === 'paid') return payCycle(trx, scope, row.subscription_id, row.cycle);
  const sub = await lockSubscription(trx, scope, row.subscription_id);
  if (!sub || row.status !== 'open') return;
  const nowAt = await nowFor(trx, scope.deps, sub);
  const deps = atClock(scope.deps, { now: () => new Date(nowAt) });
  const retryIn = RETRY_DAYS[row.debit_attempts - 1];
  if (charge.remarks && RETRIABLE_REMARKS.includes(charge.remarks) && retryIn !== undefined) {
    const at = new Date(Math.max(nowAt.getTime(), new Date(row.due_at).getTime() + retryIn * DAY_MS));
    await scheduleFor(trx, deps, sub, DEBIT_CYCLE_JOB, { cycle: row.cycle, attempt: row.debit_attempts + 1, previous_charge_id: charge.id }, at);
    return;
  }
  await fallToLink(trx, { ...scope, db: trx, deps, clockBinding: bindingOf(sub) }, sub.id, row.cycle, charge.id);
}

export function registerSubscriptionJobs(deps: AppDeps): void {
  // A job of a customer on a test clock runs with that clock's time as its "now".
  deps.jobs.register(BILL_CYCLE_JOB, (payload, job) => runBillCycle(atClock(deps, job.clock), payload));
  deps.jobs.register(CHECK_CYCLE_JOB, (payload, job) => runCheckCycle(atClock(deps, job.clock), payload));
  deps.jobs.register(START_JOB, (payload, job) => runStart(atClock(deps, job.clock), payload));
  deps.jobs.register(DEBIT_CYCLE_JOB, (payload, job) => runDebitCycle(atClock(deps, job.clock), payload));
  deps.transitions.on(PAYMENT_MACHINE, (trx, scope, payment, t) => followPayment(trx, scope, payment, t.to));
  deps.transitions.on(CHARGE_MACHINE, (trx, scope, charge, t) => followCharge(trx, scope, charge, t.to));
}
