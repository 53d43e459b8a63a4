import type { RequestContext } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { inTenant, iso, loadInScope, type Tenant } from '../../platform/scope.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import type { Frequency } from './calendar.ts';
import type { CreatePlanBody, PlanResponse, UpdatePlanBody } from './schemas.ts';
import type { ComplexPayment, PlanRow, SubscriptionRow } from './tables.ts';
import './tables.ts';

export const PLAN_ID = /^plan_[0-9a-z]{26}$/;

/** The public page where a payer subscribes (docs/subscriptions.md "Plan page"). */
export const planLink = (baseUrl: string, id: string) => `${baseUrl}/plan/${id}`;

export const planList: ListSpec<'internal_id' | 'cicle_frequency', 'created_at'> = {
  filters: ['internal_id', 'cicle_frequency'],
  sorts: ['created_at'],
};

/** OnePay's complex payments, stored with their defaults (for_cicles 1). */
export function complexPaymentsOf(input: CreatePlanBody['complex_payments']): ComplexPayment[] {
  return (input ?? []).map((c) => ({
    amount_in_cents: c.amount_in_cents,
    apply_on_cicle: c.apply_on_cicle,
    for_cicles: c.for_cicles ?? 1,
    label: c.label ?? null,
  }));
}

/** `cicles` 0 or null: unbounded (OnePay sends 0). */
export const cyclesOf = (cicles: number | null | undefined): number | null => (cicles ? cicles : null);

export const referencePriceOf = (v: number | string | null | undefined): bigint | null => (v === null || v === undefined ? null : BigInt(v));

/** The billing terms a plan and a subscription present alike (OnePay's spellings). */
export function billingTermsOf(row: PlanRow | SubscriptionRow) {
  return {
    currency: row.currency,
    amount_in_cents: Number(row.amount),
    reference_price_in_cents: row.reference_price === null ? null : String(row.reference_price),
    cicle_frequency: row.frequency as Frequency,
    cicles: row.cycles,
    trial: { has_trial: row.trial_days > 0, trial_days: row.trial_days },
    complex_payments: row.complex_payments,
    allows: row.allows ?? [],
    metadata: row.metadata ?? {},
  };
}

export function toPlanResponse(row: PlanRow, baseUrl: string): PlanResponse {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    internal_id: row.internal_id,
    ...billingTermsOf(row),
    link: planLink(baseUrl, row.id),
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function createPlan(ctx: RequestContext, body: CreatePlanBody): Promise<PlanResponse> {
  const now = ctx.deps.clock.now();
  const metadata = normalizeMetadata(body.metadata);
  const row = await ctx.db
    .insertInto('plans')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('plan', now.getTime()),
      name: body.name,
      description: body.description ?? null,
      internal_id: body.internal_id ?? null,
      currency: body.currency ?? 'COP',
      amount: BigInt(body.amount_in_cents),
      reference_price: referencePriceOf(body.reference_price_in_cents),
      frequency: body.cicle_frequency,
      cycles: cyclesOf(body.cicles),
      trial_days: body.trial?.has_trial === false ? 0 : (body.trial?.trial_days ?? 0),
      complex_payments: JSON.stringify(complexPaymentsOf(body.complex_payments)),
      allows: body.allows ? JSON.stringify(body.allows) : null,
      metadata: metadata ? JSON.stringify(metadata) : null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toPlanResponse(row, ctx.deps.config.baseUrl);
}

export async function loadPlan(db: Executor, scope: Tenant, id: string): Promise<PlanRow> {
  if (!PLAN_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(scope, (scoped) => db.selectFrom('plans').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

export async function getPlan(ctx: RequestContext, id: string): Promise<PlanResponse> {
  return toPlanResponse(await loadPlan(ctx.db, ctx, id), ctx.deps.config.baseUrl);
}

export async function listPlans(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(planList, query);
  let q = ctx.db.selectFrom('plans').selectAll().$call(inTenant(ctx));
  if (list.filters.internal_id !== undefined) q = q.where('internal_id', '=', list.filters.internal_id);
  if (list.filters.cicle_frequency !== undefined) q = q.where('frequency', '=', list.filters.cicle_frequency);
  return paginate(q, list, { path, query, table: 'plans', map: (row) => toPlanResponse(row, ctx.deps.config.baseUrl) });
}

/**
 * PUT /plans/{id}: unsent fields keep their value. With update_existing_subscriptions the
 * subscriptions of the plan take the new amount and complex payments for the cycles they have not
 * billed yet (a billed cycle keeps its amount); otherwise they keep theirs.
 */
export async function updatePlan(ctx: RequestContext, id: string, body: UpdatePlanBody): Promise<PlanResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const current = await loadPlan(trx, ctx, id);
    const now = ctx.deps.clock.now();
    const set: Record<string, unknown> = { updated_at: now };
    if (body.name != null) set.name = body.name;
    if (body.description !== undefined) set.description = body.description ?? null;
    if (body.internal_id !== undefined) set.internal_id = body.internal_id ?? null;
    if (body.currency != null) set.currency = body.currency;
    if (body.amount_in_cents != null) set.amount = BigInt(body.amount_in_cents);
    if (body.reference_price_in_cents !== undefined) set.reference_price = referencePriceOf(body.reference_price_in_cents);
    if (body.cicle_frequency != null) set.frequency = body.cicle_frequency;
    if (body.cicles !== undefined) set.cycles = cyclesOf(body.cicles);
    if (body.trial != null) set.trial_days = body.trial.has_trial === false ? 0 : (body.trial.trial_days ?? 0);
    if (body.complex_payments !== undefined) set.complex_payments = JSON.stringify(complexPaymentsOf(body.complex_payments));
    if (body.allows !== undefined) set.allows = body.allows ? JSON.stringify(body.allows) : null;
    if (body.metadata !== undefined) {
      const metadata = normalizeMetadata(body.metadata);
      set.metadata = metadata ? JSON.stringify(metadata) : null;
    }
    const row = await trx.updateTable('plans').set(set).$call(inTenant(ctx)).where('id', '=', current.id).returningAll().executeTakeFirstOrThrow();
    if (body.update_existing_subscriptions) {
      const future: Record<string, unknown> = { updated_at: now };
      if (set.amount !== undefined) future.amount = set.amount;
      if (set.complex_payments !== undefined) future.complex_payments = set.complex_payments;
      await trx
        .updateTable('subscriptions')
        .set(future)
        .$call(inTenant(ctx))
        .where('plan_id', '=', row.id)
        .where('status', 'not in', ['canceled', 'finished'])
        .execute();
    }
    return toPlanResponse(row, ctx.deps.config.baseUrl);
  });
}
