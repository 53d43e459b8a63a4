import { sql, type Transaction } from 'kysely';
import type { RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { inTenant, loadInScope } from '../../platform/scope.ts';
import { onPaymentPaid } from './ledger.ts';
import { INTENT_MACHINE, PAYMENT_MACHINE } from './lifecycle.ts';
import { applyTransition, insertWithTransition, TransitionNotAllowed } from '../../platform/state-machine.ts';
import { MINIMUM_MINOR, formatPesos } from '../../platform/money.ts';
import { toIntentResponse } from './present.ts';
import { findOpenIntent, INTENT_ID, loadPayment, lockIntent, lockPayment, maxTransactionCop, type IntentRow, type PaymentRow } from './queries.ts';
import { intentList, paymentIntentsList, REJECTION_REASONS, type IntentResponse, type RejectionReason } from './schemas.ts';
import { INTENT_STATUSES, PAYMENT_METHODS, type IntentStatus, type PaymentMethod } from './tables.ts';
import { applyPaymentTransition, stateError } from './transition.ts';
import type { ProviderConsent } from '../../rails/debit.ts';

/**
 * Payment intents: one per attempt to pay a payment. The payer pages and the rails record
 * attempts through startIntent and settleIntent; both move the payment through the transition
 * table (transition.ts), so the events follow from the table.
 */

export interface StartIntentInput {
  /** A method the payment's `allows` offers; `sandbox` is the resolve endpoint's simulated payer. */
  method: PaymentMethod | 'sandbox';
  /** Minor units. Default: what is still due. Required for an open-amount link. */
  amount?: bigint;
  external_id?: string | null;
  network_id?: string | null;
  charge_id?: string | null;
  /** A payment page's attempt through a provider: the provider's contracts the payer accepted, and when. */
  consent?: ProviderConsent | null;
}

export type SettleIntentInput =
  { status: 'approved'; network_id?: string | null } | { status: 'declined'; remarks: RejectionReason | string; network_id?: string | null };

/** The amount an attempt may take, by the payment's kind (fixed, partial, open). */
async function attemptAmount(trx: Transaction<DB>, scope: ServiceScope, payment: PaymentRow, requested: bigint | undefined): Promise<bigint> {
  const min = MINIMUM_MINOR[payment.currency];
  if (payment.amount === null) {
    if (requested === undefined) throw validationError({ amount: ['is required for an open-amount link'] });
    if (requested < min) throw validationError({ amount: [`must be at least ${formatPesos(min, payment.currency)}`] });
    const max = (await maxTransactionCop(trx, scope.companyId)) * 100n;
    if (payment.currency === 'COP' && requested > max)
      throw validationError({ amount: [`exceeds the maximum per transaction of ${formatPesos(max, 'COP')}`] });
    return requested;
  }
  const due = payment.amount - payment.amount_paid;
  const amount = requested ?? due;
  if (!payment.partial_enabled) {
    if (amount !== due) throw validationError({ amount: [`must be the full amount due, ${formatPesos(due, payment.currency)}`] });
    return amount;
  }
  const floor = payment.partial_minimum !== null && payment.partial_minimum < due ? payment.partial_minimum : due;
  if (amount > due) throw validationError({ amount: [`must be at most the amount due, ${formatPesos(due, payment.currency)}`] });
  if (amount < floor) throw validationError({ amount: [`must be at least ${formatPesos(floor, payment.currency)}`] });
  return amount;
}

/** startIntent inside the caller's transaction. */
export async function startIntentIn(trx: Transaction<DB>, scope: ServiceScope, paymentId: string, input: StartIntentInput): Promise<IntentRow> {
  const payment = await lockPayment(trx, scope, paymentId);
  if (!payment) throw new ApiError('record_not_found');
  if (!PAYMENT_MACHINE.find(payment.status, 'start_attempt')) throw stateError(payment.status);
  const now = scope.deps.clock.now();
  if (payment.expires_at && new Date(payment.expires_at).getTime() <= now.getTime()) throw validationError({ status: ['the payment has expired'] });
  if (input.method !== 'sandbox' && !(PAYMENT_METHODS as readonly string[]).includes(input.method))
    throw validationError({ method: [`must be one of ${PAYMENT_METHODS.join(', ')}`] });
  if (input.method !== 'sandbox' && !payment.allows.includes(input.method))
    throw validationError({ method: [`the payment offers ${payment.allows.join(', ')}`] });
  const amount = await attemptAmount(trx, scope, payment, input.amount);
  const intent = await insertWithTransition<IntentRow>(trx, scope, INTENT_MACHINE, {
    table: 'payment_intents',
    action: 'start',
    values: {
      id: prefixedId('pi', now.getTime()),
      payment_id: payment.id,
      method: input.method,
      amount,
      currency: payment.currency,
      remarks: null,
      external_id: input.external_id ?? null,
      network_id: input.network_id ?? null,
      charge_id: input.charge_id ?? null,
      consent_terms_permalink: input.consent?.permalink ?? null,
      consent_personal_data_permalink: input.consent?.personalDataPermalink ?? null,
      consent_accepted_at: input.consent?.acceptedAt ?? null,
      created_at: now,
      updated_at: now,
      paid_at: null,
    },
  });
  await applyPaymentTransition(trx, scope, payment.id, 'start_attempt');
  return intent;
}

/**
 * Records a new attempt to pay a payment: the intent starts `in_progress` and the payment moves
 * to `in_progress` (one attempt at a time). Throws the SPEC.md errors when the payment's state
 * refuses an attempt (15003, 15004) and validation errors on `method` or `amount`.
 */
export async function startIntent(scope: ServiceScope, paymentId: string, input: StartIntentInput): Promise<IntentRow> {
  return inTransaction(scope.db, (trx) => startIntentIn(trx, { ...scope, db: trx }, paymentId, input));
}

/** settleIntent inside the caller's transaction. */
export async function settleIntentIn(trx: Transaction<DB>, scope: ServiceScope, intentId: string, outcome: SettleIntentInput): Promise<IntentRow> {
  // Lock order everywhere: the payment, then its intent (payment_id never changes).
  const found = await trx.selectFrom('payment_intents').select('payment_id').$call(inTenant(scope)).where('id', '=', intentId).executeTakeFirst();
  // A charge's intent (no payment) is settled by the charge, never here.
  if (!found?.payment_id) throw new ApiError('record_not_found');
  const payment = (await lockPayment(trx, scope, found.payment_id))!;
  const intent = (await lockIntent(trx, scope, intentId))!;
  if (intent.status !== 'in_progress') {
    // A rail retrying the same outcome gets the same answer; a different one is a conflict.
    if (intent.status === outcome.status) return intent;
    throw validationError({ status: [`the attempt is already ${intent.status}`] });
  }
  if (outcome.status === 'declined' && !(REJECTION_REASONS as readonly string[]).includes(outcome.remarks)) {
    throw validationError({ remarks: [`must be one of ${REJECTION_REASONS.join(', ')}`] });
  }
  const now = scope.deps.clock.now();
  const { row: settled } = await applyTransition(trx, scope, INTENT_MACHINE, {
    table: 'payment_intents',
    row: intent,
    action: outcome.status === 'approved' ? 'approve' : 'decline',
    now,
    set: () => ({
      remarks: outcome.status === 'declined' ? outcome.remarks : null,
      paid_at: outcome.status === 'approved' ? now : null,
      ...(outcome.network_id ? { network_id: outcome.network_id } : {}),
    }),
  });
  const paid = payment.amount_paid;
  if (outcome.status === 'approved') {
    const total = paid + intent.amount;
    const complete = payment.amount === null || total >= payment.amount;
    const updated = await applyPaymentTransition(trx, scope, payment.id, complete ? 'attempt_approved' : 'attempt_partial', { amount_paid: total });
    // The money received, in the same transaction: a ledger collection (and its splits).
    await onPaymentPaid(trx, scope, updated, { amount: intent.amount, intentId: intent.id });
  } else {
    await applyPaymentTransition(trx, scope, payment.id, paid > 0n ? 'attempt_declined_partial' : 'attempt_declined');
  }
  return settled;
}

/**
 * Settles an attempt: approved adds its amount to the payment's amount_paid and moves the payment
 * to approved (the total is reached) or partially_paid; declined (with a rejection reason of
 * docs/payments.md) moves it to declined, or back to partially_paid after earlier partial payments.
 * Settling again with the same outcome returns the intent unchanged.
 */
export async function settleIntent(scope: ServiceScope, intentId: string, outcome: SettleIntentInput): Promise<IntentRow> {
  return inTransaction(scope.db, (trx) => settleIntentIn(trx, { ...scope, db: trx }, intentId, outcome));
}

export { findOpenIntent };

/** The attempt of a charge (a charge is its own attempt, without a payment): opened in the charge's transaction. */
export async function openChargeIntent(
  trx: Transaction<DB>,
  scope: ServiceScope,
  charge: {
    id: string;
    intent_id: string;
    payment_method_type: string;
    amount: bigint;
    currency: IntentRow['currency'];
    external_id: string | null;
    created_at: Date;
  },
): Promise<void> {
  await insertWithTransition<IntentRow>(trx, scope, INTENT_MACHINE, {
    table: 'payment_intents',
    action: 'start',
    values: {
      id: charge.intent_id,
      // A charge is its own attempt: no payment (migrations/0008_charges.sql).
      payment_id: null,
      method: charge.payment_method_type as IntentRow['method'],
      amount: charge.amount,
      currency: charge.currency,
      remarks: null,
      external_id: charge.external_id,
      network_id: null,
      charge_id: charge.id,
      created_at: charge.created_at,
      updated_at: charge.created_at,
      paid_at: null,
    },
  });
}

/**
 * A charge's attempt follows the charge's outcome (the charge row is locked by the caller, so the
 * attempt cannot move meanwhile); an attempt already settled is left as it is.
 */
export async function settleChargeIntent(
  trx: Transaction<DB>,
  scope: ServiceScope,
  intentId: string,
  outcome: { status: 'approved' | 'declined'; remarks: string | null; network_id: string | null },
  now: Date,
): Promise<void> {
  // No read first: the engine's update is conditional on `in_progress`, so an attempt settled
  // already (or missing) is simply not matched — one round trip on the charge's hot path.
  try {
    await applyTransition(trx, scope, INTENT_MACHINE, {
      table: 'payment_intents',
      row: { id: intentId, status: 'in_progress' as const },
      action: outcome.status === 'approved' ? 'approve' : 'decline',
      now,
      set: () => ({ remarks: outcome.remarks, network_id: outcome.network_id, paid_at: outcome.status === 'approved' ? now : null }),
    });
  } catch (error) {
    if (!(error instanceof TransitionNotAllowed)) throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Reads

const nothing = sql<boolean>`false`;

/** GET /payment-intents: filters id, status, external_id, network_id; sort created_at, paid_at. */
export async function listIntents(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(intentList, query);
  let q = ctx.db.selectFrom('payment_intents').selectAll().$call(inTenant(ctx));
  const f = list.filters;
  if (f.id !== undefined) q = INTENT_ID.test(f.id) ? q.where('id', '=', f.id) : q.where(nothing);
  if (f.status !== undefined)
    q = (INTENT_STATUSES as readonly string[]).includes(f.status) ? q.where('status', '=', f.status as IntentStatus) : q.where(nothing);
  if (f.external_id !== undefined) q = q.where('external_id', '=', f.external_id);
  if (f.network_id !== undefined) q = q.where('network_id', '=', f.network_id);
  return paginate(q, list, { path, query, table: 'payment_intents', map: toIntentResponse });
}

/** GET /payment-intents/{id}: an intent id (pi_…) or the charge id of the attempt. */
export async function getIntent(ctx: RequestContext, id: string): Promise<IntentResponse> {
  if (id.length > 100) throw new ApiError('record_not_found');
  const row = await loadInScope(ctx, (scoped) =>
    ctx.db
      .selectFrom('payment_intents')
      .selectAll()
      .$call(scoped)
      .where((eb) => eb.or([eb('id', '=', id), eb('charge_id', '=', id)]))
      .orderBy('created_at', 'desc')
      .executeTakeFirst(),
  );
  return toIntentResponse(row);
}

/** GET /payments/{id}/intents: the payment's attempts, newest first. */
export async function listPaymentIntents(ctx: RequestContext, paymentId: string, query: Record<string, unknown>, path: string) {
  const payment = await loadPayment(ctx, paymentId);
  const list = parseListQuery(paymentIntentsList, query);
  const q = ctx.db.selectFrom('payment_intents').selectAll().$call(inTenant(ctx)).where('payment_id', '=', payment.id);
  return paginate(q, list, { path, query, table: 'payment_intents', map: toIntentResponse });
}
