import { atClock, type RequestContext, type ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { inTenant, loadInScope, requireUuid } from '../../platform/scope.ts';
import { insertWithTransition } from '../../platform/state-machine.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import { loadCustomer } from '../customers/service.ts';
import {
  hasDebitMethod,
  lockSubscription,
  moveSubscription,
  nowFor,
  offsetAfterFreeze,
  scheduleFor,
  scheduleNextCycle,
  START_JOB,
} from './billing.ts';
import { clockOf } from '../test-clocks/service.ts';
import { addPeriod, formatLocalDate, localDateOf, localInstant, parseLocalDate } from './calendar.ts';
import { SUBSCRIPTION_MACHINE, type SubscriptionAction } from './lifecycle.ts';
import { complexPaymentsOf, cyclesOf, loadPlan, referencePriceOf } from './plans.ts';
import { toSubscriptionResponse } from './present.ts';
import type { CreateSubscriptionBody, SubscriptionResponse, UpdateSubscriptionBody } from './schemas.ts';
import { SUBSCRIPTION_STATUSES, type PlanRow, type SubscriptionRow } from './tables.ts';
import './tables.ts';

export const SUBSCRIPTION_ID = /^sub_[0-9a-z]{26}$/;

export const subscriptionList: ListSpec<'status' | 'customer_id' | 'plan_id' | 'internal_id', 'created_at'> = {
  filters: ['status', 'customer_id', 'plan_id', 'internal_id'],
  sorts: ['created_at'],
};

/**
 * POST /subscriptions (docs/subscriptions.md): from a plan (its fields, overridable) or inline. The
 * first cycle is due on start_date, or after the trial; a trial makes it active at its start.
 * auto_debit needs a card or an authorized ACTIVE account of the customer to charge.
 */
export async function createSubscription(ctx: RequestContext, body: CreateSubscriptionBody): Promise<SubscriptionResponse> {
  // Ids in the body that name nothing in this environment are field errors (422), as in POST /charges.
  const customer = await orFieldError('customer_id', 'no such customer in this environment', () => loadCustomer(ctx, body.customer_id));
  const plan: PlanRow | null = body.plan_id
    ? await orFieldError('plan_id', 'no such plan in this environment', () => loadPlan(ctx.db, ctx, body.plan_id!))
    : null;
  const errors: FieldErrors = {};
  const name = body.name ?? plan?.name;
  const amount = body.amount_in_cents ?? (plan ? Number(plan.amount) : undefined);
  const frequency = body.cicle_frequency ?? plan?.frequency;
  if (!name) errors.name = ['is required without plan_id'];
  if (amount === undefined) errors.amount_in_cents = ['is required without plan_id'];
  if (!frequency) errors.cicle_frequency = ['is required without plan_id'];
  if (body.payment_mode === 'auto_debit' && !(await hasDebitMethod(ctx.db, ctx, customer.id)))
    errors.payment_mode = ['auto_debit needs a card or an ACTIVE bank account of the customer with authorization true'];
  // A customer on a test clock lives in its time: the start date, the schedule and the events.
  const clock = await clockOf(ctx.db, ctx, customer.test_clock);
  const now = clock ? clock.now : ctx.deps.clock.now();
  const deps = clock ? atClock(ctx.deps, { now: () => new Date(now) }) : ctx.deps;
  const today = localDateOf(now);
  let start = today;
  if (body.start_date != null) {
    const parsed = parseLocalDate(body.start_date);
    if (!parsed) errors.start_date = ['must be a date YYYY-MM-DD'];
    else if (formatLocalDate(parsed) < formatLocalDate(today)) errors.start_date = ['must be today (Bogotá) or later'];
    else start = parsed;
  }
  if (!customer.phone && !customer.email) errors.customer_id = ['the customer needs a phone or an e-mail to receive the cycle links'];
  if (Object.keys(errors).length) throw validationError(errors);

  const trialDays = body.trial ? (body.trial.has_trial === false ? 0 : (body.trial.trial_days ?? 0)) : (plan?.trial_days ?? 0);
  const anchor = addPeriod(start, 'daily', trialDays);
  const metadata = normalizeMetadata(body.metadata) ?? plan?.metadata ?? null;
  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx, deps };
    let row = await insertWithTransition<SubscriptionRow>(trx, scope, SUBSCRIPTION_MACHINE, {
      table: 'subscriptions',
      action: 'create',
      values: {
        id: prefixedId('sub', now.getTime()),
        customer_id: customer.id,
        plan_id: plan?.id ?? null,
        version: 1,
        name: name!,
        description: body.description ?? plan?.description ?? null,
        internal_id: body.internal_id ?? null,
        currency: body.currency ?? plan?.currency ?? 'COP',
        amount: BigInt(amount!),
        reference_price:
          body.reference_price_in_cents !== undefined ? referencePriceOf(body.reference_price_in_cents) : (plan?.reference_price ?? null),
        frequency: frequency!,
        cycles: body.cicles !== undefined ? cyclesOf(body.cicles) : (plan?.cycles ?? null),
        payment_mode: body.payment_mode ?? 'request',
        anchor_date: formatLocalDate(anchor),
        start_date: formatLocalDate(start),
        trial_days: trialDays,
        trial_ends_at: trialDays > 0 ? localInstant(anchor) : null,
        remember_to_pay_before: body.remember_to_pay_before ?? 3,
        cancel_after_no_payment_before: body.cancel_after_no_payment_before ?? 2,
        complex_payments: JSON.stringify(body.complex_payments ? complexPaymentsOf(body.complex_payments) : (plan?.complex_payments ?? [])),
        allows: JSON.stringify(body.allows ?? plan?.allows ?? null),
        metadata: metadata ? JSON.stringify(metadata) : null,
        created_at: now,
        updated_at: now,
        canceled_at: null,
        finished_at: null,
        frozen_at: null,
        test_clock: customer.test_clock ?? null,
      },
      present: (created) => ({ ...toSubscriptionResponse(created), previous_status: null }),
    });
    if (trialDays > 0) {
      const startsAt = localInstant(start);
      if (startsAt.getTime() <= now.getTime()) row = await moveSubscription(trx, scope, row, 'start');
      else await scheduleFor(trx, deps, row, START_JOB, {}, startsAt);
    }
    await scheduleNextCycle(trx, deps, row);
    ctx.notifyWorkers();
    return toSubscriptionResponse(row);
  });
}

async function orFieldError<T>(field: string, message: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw validationError({ [field]: [message] });
    throw error;
  }
}

async function loadSubscription(ctx: RequestContext, id: string): Promise<SubscriptionRow> {
  if (!SUBSCRIPTION_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('subscriptions').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

export async function getSubscription(ctx: RequestContext, id: string): Promise<SubscriptionResponse> {
  return toSubscriptionResponse(await loadSubscription(ctx, id));
}

export async function listSubscriptions(ctx: RequestContext, query: Record<string, unknown>, path: string, customerId?: string) {
  const list = parseListQuery(subscriptionList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('subscriptions').selectAll().$call(inTenant(ctx));
  if (customerId !== undefined) q = q.where('customer_id', '=', customerId);
  if (f.status !== undefined) {
    if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(f.status)) q = q.where('id', '=', '');
    else q = q.where('status', '=', f.status as SubscriptionRow['status']);
  }
  if (f.customer_id !== undefined) q = q.where('customer_id', '=', f.customer_id);
  if (f.plan_id !== undefined) q = q.where('plan_id', '=', f.plan_id);
  if (f.internal_id !== undefined) q = q.where('internal_id', '=', f.internal_id);
  return paginate(q, list, { path, query, table: 'subscriptions', map: toSubscriptionResponse });
}

export async function listCustomerSubscriptions(ctx: RequestContext, customerId: string, query: Record<string, unknown>, path: string) {
  const customer = await loadCustomer(ctx, requireUuid(customerId));
  return listSubscriptions(ctx, query, path, customer.id);
}

/** PUT /subscriptions/{id}: unsent fields keep their value; the amount applies to cycles not billed yet. */
export async function updateSubscription(ctx: RequestContext, id: string, body: UpdateSubscriptionBody): Promise<SubscriptionResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const current = await loadSubscription({ ...ctx, db: trx }, id);
    const set: Record<string, unknown> = { updated_at: ctx.deps.clock.now() };
    if (body.name != null) set.name = body.name;
    if (body.description !== undefined) set.description = body.description ?? null;
    if (body.internal_id !== undefined) set.internal_id = body.internal_id ?? null;
    if (body.amount_in_cents != null) set.amount = BigInt(body.amount_in_cents);
    if (body.remember_to_pay_before != null) set.remember_to_pay_before = body.remember_to_pay_before;
    if (body.cancel_after_no_payment_before != null) set.cancel_after_no_payment_before = body.cancel_after_no_payment_before;
    if (body.allows !== undefined) set.allows = JSON.stringify(body.allows ?? null);
    if (body.metadata !== undefined) {
      const metadata = normalizeMetadata(body.metadata);
      set.metadata = metadata ? JSON.stringify(metadata) : null;
    }
    const row = await trx
      .updateTable('subscriptions')
      .set(set)
      .$call(inTenant(ctx))
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toSubscriptionResponse(row);
  });
}

/**
 * cancel, freeze, unfreeze: a move of the machine (subscription_transition_not_allowed when the
 * status forbids it). Cancelling or freezing stops future cycles and never revokes a paid one; an
 * unfreeze skips the periods spent frozen and schedules the next cycle after now.
 */
export async function changeSubscription(ctx: RequestContext, id: string, action: Extract<SubscriptionAction, 'cancel' | 'freeze' | 'unfreeze'>) {
  const found = await loadSubscription(ctx, id);
  return inTransaction(ctx.db, async (trx) => {
    const row = (await lockSubscription(trx, ctx, found.id))!;
    const now = await nowFor(trx, ctx.deps, row);
    const deps = atClock(ctx.deps, { now: () => new Date(now) });
    const scope: ServiceScope = { ...ctx, db: trx, deps };
    if (!SUBSCRIPTION_MACHINE.find(row.status, action)) {
      throw new ApiError('subscription_transition_not_allowed', {
        message: `A ${row.status} subscription cannot be ${action === 'cancel' ? 'cancelled' : `${action}d`}.`,
      });
    }
    if (action === 'cancel') return toSubscriptionResponse(await moveSubscription(trx, scope, row, 'cancel', { canceled_at: now }));
    if (action === 'freeze') return toSubscriptionResponse(await moveSubscription(trx, scope, row, 'freeze', { frozen_at: now }));
    const moved = await moveSubscription(trx, scope, row, 'unfreeze', { frozen_at: null, period_offset: offsetAfterFreeze(row, now) });
    await scheduleNextCycle(trx, deps, moved);
    ctx.notifyWorkers();
    return toSubscriptionResponse(moved);
  });
}
