import { sql, type Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { prefixedId } from '../../platform/ids.ts';
import type { Tenant } from '../../platform/scope.ts';
import { inTenant } from '../../platform/scope.ts';
import type { Currency } from '../../platform/money.ts';
import { cardExpiredAt } from '../../platform/clock.ts';
import { findCard } from '../cards/service.ts';
import { EXPIRE_JOB, jobPayload, RECONCILE_JOB } from './jobs.ts';
import { EXPIRED_REMARKS } from './lifecycle.ts';
import type { ChargeRow } from './present.ts';
import { lockCharge } from './queries.ts';
import { chargeRail } from './rails.ts';
import { insertCharge, applyChargeTransition } from './transition.ts';

/**
 * Charges held for the payer's approval (the payer session, docs/session.md): recorded `created`
 * with an `expires_at`, never sent to the rail until the payer approves. Approval clears the
 * expiry and hands the charge to the reconciler, which debits it through the rail exactly as it
 * debits a charge whose request died (idempotent by the charge id); rejection or the expire job
 * fail it without touching the rail. A card charge carries `expires_at` only while it is held.
 */

/** remarks of a held charge the payer declined. */
export const APPROVAL_REJECTED_REMARKS = 'APPROVAL_REJECTED';

export interface HeldChargeInput {
  customerId: string;
  cardId: string;
  amount: bigint;
  currency: Currency;
  title: string;
  expiresAt: Date;
  idempotencyKey: string | null;
}

/** A held charge of the customer still waiting for approval (open and not past its expiry). */
export async function openHeldCharge(db: Transaction<DB> | RequestContext['db'], scope: Tenant, customerId: string, now: Date) {
  return db
    .selectFrom('charges')
    .select(['id', 'expires_at'])
    .$call(inTenant(scope))
    .where('customer_id', '=', customerId)
    .where('status', '=', 'created')
    .where('payment_method_type', '=', 'card')
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/**
 * Records a held card charge in the request's transaction: the rail is checked first (a live key
 * without a card connector is refused, nothing recorded); one open held charge per customer
 * (serialised by a transaction-scoped advisory lock on the customer), else 422 with `pending`.
 * The card must be the customer's, authorized and not expired: otherwise 422 on `card`.
 */
export async function recordHeldCharge(
  ctx: RequestContext,
  trx: Transaction<DB>,
  input: HeldChargeInput,
): Promise<{ row: ChargeRow } | { problem: 'card_not_found' | 'card_expired' | 'pending' }> {
  await chargeRail(ctx.deps, ctx, 'card');
  const now = ctx.deps.clock.now();
  const card = await findCard(trx, ctx, input.cardId);
  if (!card || card.customer_id !== input.customerId || !card.authorization) return { problem: 'card_not_found' };
  if (cardExpiredAt(card, now)) return { problem: 'card_expired' };
  await sql`select pg_advisory_xact_lock(hashtextextended(${`held-charge:${ctx.companyId}:${input.customerId}`}, 0))`.execute(trx);
  if (await openHeldCharge(trx, ctx, input.customerId, now)) return { problem: 'pending' };
  const row = await insertCharge(trx, scopeOf(ctx, trx), {
    id: prefixedId('ch', now.getTime()),
    intent_id: prefixedId('pi', now.getTime()),
    title: input.title,
    currency: input.currency,
    amount: input.amount,
    customer_id: input.customerId,
    payment_method_type: 'card',
    account_id: null,
    card_id: card.id,
    external_id: null,
    idempotency_key: input.idempotencyKey,
    splits: JSON.stringify([]),
    metadata: null,
    test_scenario: null,
    installments: null,
    remarks: null,
    network_id: null,
    paid_at: null,
    failed_at: null,
    cancelled_at: null,
    refunded_at: null,
    expires_at: input.expiresAt,
    created_at: now,
    updated_at: now,
  });
  await ctx.deps.jobs.enqueue(trx, EXPIRE_JOB, jobPayload(row, {}), input.expiresAt);
  return { row };
}

function scopeOf(ctx: RequestContext, trx: Transaction<DB>): ServiceScope {
  return { companyId: ctx.companyId, environment: ctx.environment, notifyWorkers: ctx.notifyWorkers, db: trx, deps: ctx.deps };
}

/**
 * The payer approved: in `trx`, a held charge still open and not past its expiry stops being held
 * (no expiry any more) and gets a reconcile job due now, which debits it through the rail. Returns
 * false when it is no longer waiting (expired, rejected, already approved).
 */
export async function approveHeldCharge(trx: Transaction<DB>, scope: ServiceScope, chargeId: string): Promise<boolean> {
  const row = await lockCharge(trx, scope, chargeId);
  const now = scope.deps.clock.now();
  if (!row || row.status !== 'created' || !row.expires_at || new Date(row.expires_at).getTime() <= now.getTime()) return false;
  await trx.updateTable('charges').set({ expires_at: null, updated_at: now }).$call(inTenant(scope)).where('id', '=', row.id).execute();
  await scope.deps.jobs.enqueue(trx, RECONCILE_JOB, jobPayload(row, {}), now);
  scope.notifyWorkers?.();
  return true;
}

/** The payer declined: a held charge still waiting fails with remarks APPROVAL_REJECTED (charge.failed). */
export async function rejectHeldCharge(trx: Transaction<DB>, scope: ServiceScope, chargeId: string): Promise<ChargeRow | null> {
  const row = await lockCharge(trx, scope, chargeId);
  if (!row || row.status !== 'created' || !row.expires_at) return null;
  return applyChargeTransition(trx, scope, row.id, 'cancel', { remarks: APPROVAL_REJECTED_REMARKS }, row);
}

/**
 * The expire job's part for a held charge: under the row lock, only a charge still held (created,
 * with an expiry) and past its expiry fails with remarks EXPIRED. An approval that committed first
 * cleared the expiry, so the debit it queued is never undone by a late expiry.
 */
export async function expireHeldCharge(deps: AppDeps, scope: Tenant, chargeId: string): Promise<void> {
  await deps.database.db.transaction().execute(async (trx) => {
    const s: ServiceScope = { ...scope, db: trx, deps, notifyWorkers: () => deps.jobs.wake() };
    const row = await lockCharge(trx, s, chargeId);
    const now = deps.clock.now();
    if (!row || row.status !== 'created' || !row.expires_at || new Date(row.expires_at).getTime() > now.getTime()) return;
    await applyChargeTransition(trx, s, row.id, 'expire', { remarks: EXPIRED_REMARKS }, row);
  });
}

/** A held charge's approval or rejection from a background context (a payer's reply), in its own transaction. */
export async function answerHeldCharge(deps: AppDeps, scope: Tenant, chargeId: string, approve: boolean): Promise<boolean> {
  return deps.database.db.transaction().execute(async (trx) => {
    const s: ServiceScope = { ...scope, db: trx, deps, notifyWorkers: () => deps.jobs.wake() };
    return approve ? approveHeldCharge(trx, s, chargeId) : (await rejectHeldCharge(trx, s, chargeId)) !== null;
  });
}
