import type { Insertable, Transaction, Updateable } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { onPaymentRefunded } from './ledger.ts';
import { paymentTransition, type PaymentAction, type PaymentTransition } from './lifecycle.ts';
import { toPaymentResponse } from './present.ts';
import { lockPayment, type PaymentRow } from './queries.ts';
import type { PaymentStatus, PaymentsTable } from './tables.ts';


/**
 * What the payment services need: the caller's scope, an executor and the process dependencies.
 * A RequestContext is one; jobs and the payer pages build one from AppDeps.
 */
export interface PaymentScope {
  companyId: string;
  environment: Environment;
  db: Executor;
  deps: AppDeps;
  /** A request context wakes this process's workers once its transaction commits. */
  notifyWorkers?: () => void;
}

/**
 * Another module's reaction to a payment status change, run inside the transition's transaction
 * after the payment's own event (invoices: paid, cancelled, refunded). Registered once at start.
 */
export type PaymentTransitionHook = (trx: Transaction<DB>, scope: PaymentScope, payment: PaymentRow, transition: PaymentTransition) => Promise<void>;
const transitionHooks: PaymentTransitionHook[] = [];
export function onPaymentTransition(hook: PaymentTransitionHook): void {
  if (!transitionHooks.includes(hook)) transitionHooks.push(hook);
}

/** The table forbids `action` from the payment's current status. */
export class TransitionNotAllowed extends Error {
  constructor(
    readonly from: PaymentStatus,
    readonly action: PaymentAction,
  ) {
    super(`payment transition ${action} is not allowed from ${from}`);
    this.name = 'TransitionNotAllowed';
  }
}

export type { PaymentRow };

/** The SPEC.md error for an action the payment's state refuses (cancel, a new attempt). */
export function stateError(status: PaymentStatus): ApiError {
  switch (status) {
    case 'approved':
    case 'paid_externally':
    case 'refunded':
    case 'disputed':
      return new ApiError('payment_already_paid', { message: `The payment is already paid (${status}).` });
    case 'cancelled':
      return new ApiError('payment_cancelled');
    case 'in_progress':
      return new ApiError('payment_charge_in_progress');
    default:
      return validationError({ status: [`the payment is ${status}`] });
  }
}

/** Columns a status sets on entering it. */
function entering(t: PaymentTransition, row: PaymentRow, now: Date): Updateable<PaymentsTable> {
  if ((t.to === 'approved' || t.to === 'paid_externally') && !row.paid_at) return { paid_at: now };
  if (t.to === 'cancelled') return { cancelled_at: now };
  return {};
}

/**
 * THE one place a payment changes status. Inside `trx`: locks the row, checks the transition
 * table, updates conditionally on the status it read (so a transition happens at most once even
 * if two callers race), posts a refund to the ledger when the payment becomes `refunded`, and
 * writes the table's event into the outbox in the same transaction.
 * `patch` carries the columns that change with the transition (amount_paid, cancel_notify...).
 */
export async function applyPaymentTransition(
  trx: Transaction<DB>,
  scope: PaymentScope,
  paymentId: string,
  action: PaymentAction,
  patch: Updateable<PaymentsTable> = {},
): Promise<PaymentRow> {
  const row = await lockPayment(trx, scope, paymentId);
  if (!row) throw new ApiError('record_not_found');
  const t = paymentTransition(row.status, action);
  if (!t) throw new TransitionNotAllowed(row.status, action);
  const now = scope.deps.clock.now();
  const updated = await trx
    .updateTable('payments')
    .set({ ...patch, ...entering(t, row, now), status: t.to, updated_at: now })
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('id', '=', paymentId)
    .where('status', '=', row.status)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw new TransitionNotAllowed(row.status, action);
  // Money leaves with the refund, in this transaction (collections are posted by settleIntentIn).
  if (t.to === 'refunded') await onPaymentRefunded(trx, scope, updated);
  if (t.event) await emitEvent({ ...scope, db: trx }, t.event, toPaymentResponse(updated, scope.deps.config.baseUrl), now);
  for (const hook of transitionHooks) await hook(trx, scope, updated, t);
  return updated;
}

/**
 * A new payment enters the table through its `create` row: inserted with that status, and the
 * row's event written in the same transaction.
 */
export async function insertPayment(
  trx: Transaction<DB>,
  scope: PaymentScope,
  values: Omit<Insertable<PaymentsTable>, 'status' | 'company_id' | 'environment'>,
): Promise<PaymentRow> {
  const t = paymentTransition(null, 'create')!;
  const row = await trx
    .insertInto('payments')
    .values({ ...values, company_id: scope.companyId, environment: scope.environment, status: t.to })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (t.event) await emitEvent({ ...scope, db: trx }, t.event, toPaymentResponse(row, scope.deps.config.baseUrl), row.created_at);
  return row;
}

/** applyPaymentTransition in its own transaction (or the caller's, when it already has one). */
export async function transitionPayment(scope: PaymentScope, paymentId: string, action: PaymentAction, patch?: Updateable<PaymentsTable>): Promise<PaymentRow> {
  return inTransaction(scope.db, (trx) => applyPaymentTransition(trx, scope, paymentId, action, patch));
}
