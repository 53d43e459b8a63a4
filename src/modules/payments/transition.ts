import type { Insertable, Transaction, Updateable } from 'kysely';
import type { ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { onPaymentRefunded } from './ledger.ts';
import { recordMessage } from './messages.ts';
import { PAYMENT_MACHINE, type PaymentAction, type PaymentTransition } from './lifecycle.ts';
import { toPaymentResponse } from './present.ts';
import { lockPayment, type PaymentRow } from './queries.ts';
import type { PaymentStatus, PaymentsTable } from './tables.ts';

export { TransitionNotAllowed } from '../../platform/state-machine.ts';
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
 * THE one place a payment changes status, on the platform's engine: inside `trx` it locks the row,
 * applies the table's transition (conditional update, events in the same transaction, other
 * modules' listeners such as invoices), and posts a refund to the ledger when the payment becomes
 * `refunded`. `patch` carries the columns that change with the transition (amount_paid,
 * cancel_notify...).
 */
export async function applyPaymentTransition(
  trx: Transaction<DB>,
  scope: ServiceScope,
  paymentId: string,
  action: PaymentAction,
  patch: Updateable<PaymentsTable> = {},
): Promise<PaymentRow> {
  const row = await lockPayment(trx, scope, paymentId);
  if (!row) throw new ApiError('record_not_found');
  const now = scope.deps.clock.now();
  const { row: updated, transition } = await applyTransition(trx, scope, PAYMENT_MACHINE, {
    table: 'payments',
    row,
    action,
    now,
    set: (t) => ({ ...patch, ...entering(t, row, now) }),
    present: (r) => toPaymentResponse(r, scope.deps.config.baseUrl),
  });
  // Money leaves with the refund, in this transaction (collections are posted by settleIntentIn).
  // A lost dispute's money left the held balance with the dispute (docs/disputes.md), not here.
  if (transition.to === 'refunded' && action === 'refund') await onPaymentRefunded(trx, scope, updated);
  // Paid through Recaudo: the payer's receipt, recorded with the change (sent after commit).
  if (action === 'attempt_approved' && updated.receipts !== false) await recordMessage(trx, scope, updated, 'receipt', null);
  return updated;
}

/** A new payment enters the table through its `create` row, with the row's event, in `trx`. */
export async function insertPayment(
  trx: Transaction<DB>,
  scope: ServiceScope,
  values: Omit<Insertable<PaymentsTable>, 'status' | 'company_id' | 'environment'>,
): Promise<PaymentRow> {
  return insertWithTransition<PaymentRow>(trx, scope, PAYMENT_MACHINE, {
    table: 'payments',
    action: 'create',
    values,
    present: (r) => toPaymentResponse(r, scope.deps.config.baseUrl),
  });
}

/** applyPaymentTransition in its own transaction (or the caller's, when it already has one). */
export async function transitionPayment(
  scope: ServiceScope,
  paymentId: string,
  action: PaymentAction,
  patch?: Updateable<PaymentsTable>,
): Promise<PaymentRow> {
  return inTransaction(scope.db, (trx) => applyPaymentTransition(trx, scope, paymentId, action, patch));
}
