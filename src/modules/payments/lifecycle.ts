import type { PaymentStatus } from './tables.ts';

/**
 * The payment state machine (docs/payments.md). Every status change of a payment goes through
 * this table, via applyPaymentTransition (transition.ts), which also emits the event named here,
 * in the same transaction, exactly once. A (from, action) pair has at most one row.
 */
export const PAYMENT_ACTIONS = [
  'create',
  'start_attempt',
  'attempt_approved',
  'attempt_partial',
  'attempt_declined',
  'attempt_declined_partial',
  'cancel',
  'expire',
  'mark_paid_externally',
  'refund',
  'dispute',
  'dispute_won',
  'dispute_lost',
] as const;
export type PaymentAction = (typeof PAYMENT_ACTIONS)[number];

export interface PaymentTransition {
  from: readonly PaymentStatus[] | null;
  action: PaymentAction;
  to: PaymentStatus;
  /** The SPEC.md event the transition emits, or null when SPEC.md names none for it. */
  event: string | null;
}

const PAYABLE = ['pending', 'declined', 'partially_paid'] as const;

export const PAYMENT_TRANSITIONS: readonly PaymentTransition[] = [
  { from: null, action: 'create', to: 'pending', event: 'payment.created' },
  // A payer (or a rail) starts an attempt; one attempt at a time.
  { from: PAYABLE, action: 'start_attempt', to: 'in_progress', event: null },
  // The attempt's outcome. "partial": approved, but the total is not reached yet.
  { from: ['in_progress'], action: 'attempt_approved', to: 'approved', event: 'payment.approved' },
  { from: ['in_progress'], action: 'attempt_partial', to: 'partially_paid', event: 'payment.partially_paid' },
  { from: ['in_progress'], action: 'attempt_declined', to: 'declined', event: 'payment.rejected' },
  // A declined attempt after earlier partial payments leaves the payment partially paid.
  { from: ['in_progress'], action: 'attempt_declined_partial', to: 'partially_paid', event: 'payment.rejected' },
  { from: PAYABLE, action: 'cancel', to: 'cancelled', event: 'payment.deleted' },
  { from: ['pending', 'declined'], action: 'expire', to: 'expired', event: 'payment.expired' },
  { from: ['partially_paid'], action: 'expire', to: 'expired', event: 'payment.partial_expired' },
  // The company collected the money outside Recaudo (PUT status: paid_externally).
  { from: PAYABLE, action: 'mark_paid_externally', to: 'paid_externally', event: null },
  { from: ['approved'], action: 'refund', to: 'refunded', event: 'payment.refunded' },
  { from: ['approved'], action: 'dispute', to: 'disputed', event: 'payment.disputed' },
  { from: ['disputed'], action: 'dispute_won', to: 'approved', event: null },
  { from: ['disputed'], action: 'dispute_lost', to: 'refunded', event: 'payment.refunded' },
];

/** The transition for `action` from `from`, or null when the table forbids it. */
export function paymentTransition(from: PaymentStatus | null, action: PaymentAction): PaymentTransition | null {
  return (
    PAYMENT_TRANSITIONS.find((t) => t.action === action && (t.from === null ? from === null : from !== null && t.from.includes(from))) ?? null
  );
}

/** States SPEC.md names for the rules of the endpoints (docs/payments.md). */
export const UPDATE_REFUSED: readonly PaymentStatus[] = ['approved', 'paid_externally', 'cancelled', 'expired', 'refunded', 'disputed'];
export const RESENDABLE: readonly PaymentStatus[] = ['pending', 'in_progress', 'declined', 'partially_paid'];
export const RESOLVABLE: readonly PaymentStatus[] = ['pending', 'in_progress', 'declined'];
/** Statuses in which money was received through Recaudo or outside it. */
export const PAID: readonly PaymentStatus[] = ['approved', 'paid_externally', 'refunded', 'disputed'];
