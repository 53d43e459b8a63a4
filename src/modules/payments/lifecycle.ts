import { StateMachine, type Transition } from '../../platform/state-machine.ts';
import type { IntentStatus, PaymentMessageStatus, PaymentStatus } from './tables.ts';

/**
 * The payment state machine (docs/payments.md). Every status change of a payment goes through
 * this table, applied by the platform's engine (src/platform/state-machine.ts) through
 * applyPaymentTransition (transition.ts), which emits the events named here in the same
 * transaction, exactly once. A (from, action) pair has at most one row.
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

export type PaymentTransition = Transition<PaymentStatus, PaymentAction>;

const PAYABLE = ['pending', 'declined', 'partially_paid'] as const;

export const PAYMENT_MACHINE = new StateMachine<PaymentStatus, PaymentAction>('payment', [
  { from: null, action: 'create', to: 'pending', events: ['payment.created'] },
  // A payer (or a rail) starts an attempt; one attempt at a time.
  { from: PAYABLE, action: 'start_attempt', to: 'in_progress', events: [] },
  // The attempt's outcome. "partial": approved, but the total is not reached yet.
  { from: ['in_progress'], action: 'attempt_approved', to: 'approved', events: ['payment.approved'] },
  { from: ['in_progress'], action: 'attempt_partial', to: 'partially_paid', events: ['payment.partially_paid'] },
  { from: ['in_progress'], action: 'attempt_declined', to: 'declined', events: ['payment.rejected'] },
  // A declined attempt after earlier partial payments leaves the payment partially paid.
  { from: ['in_progress'], action: 'attempt_declined_partial', to: 'partially_paid', events: ['payment.rejected'] },
  { from: PAYABLE, action: 'cancel', to: 'cancelled', events: ['payment.deleted'] },
  { from: ['pending', 'declined'], action: 'expire', to: 'expired', events: ['payment.expired'] },
  { from: ['partially_paid'], action: 'expire', to: 'expired', events: ['payment.partial_expired'] },
  // The company collected the money outside Recaudo (PUT status: paid_externally).
  { from: PAYABLE, action: 'mark_paid_externally', to: 'paid_externally', events: [] },
  { from: ['approved'], action: 'refund', to: 'refunded', events: ['payment.refunded'] },
  { from: ['approved'], action: 'dispute', to: 'disputed', events: ['payment.disputed'] },
  { from: ['disputed'], action: 'dispute_won', to: 'approved', events: [] },
  { from: ['disputed'], action: 'dispute_lost', to: 'refunded', events: ['payment.refunded'] },
]);
export const PAYMENT_TRANSITIONS = PAYMENT_MACHINE.transitions;

/** States SPEC.md names for the rules of the endpoints (docs/payments.md). */
export const UPDATE_REFUSED: readonly PaymentStatus[] = ['approved', 'paid_externally', 'cancelled', 'expired', 'refunded', 'disputed'];
export const RESENDABLE: readonly PaymentStatus[] = ['pending', 'in_progress', 'declined', 'partially_paid'];
export const RESOLVABLE: readonly PaymentStatus[] = ['pending', 'in_progress', 'declined'];
/** Statuses in which money was received through Recaudo or outside it. */
export const PAID: readonly PaymentStatus[] = ['approved', 'paid_externally', 'refunded', 'disputed'];

/**
 * A payment intent (one attempt to pay, or a charge's own attempt): it starts in progress and
 * settles once. Its events are the payment's or the charge's; the intent emits none itself.
 */
export type IntentAction = 'start' | 'approve' | 'decline';
export const INTENT_MACHINE = new StateMachine<IntentStatus, IntentAction>('payment_intent', [
  { from: null, action: 'start', to: 'in_progress', events: [] },
  { from: ['in_progress'], action: 'approve', to: 'approved', events: [] },
  { from: ['in_progress'], action: 'decline', to: 'declined', events: [] },
]);

/**
 * A message that carries a payment to its payer (docs/payments.md "Delivery channel"): recorded
 * pending, handed to the rail (sent; an e-mail accepted by the SMTP server counts as delivered),
 * then the provider's reports. A reply may come at any time, and again with a new text.
 */
export type MessageAction = 'create' | 'hand_over' | 'deliver' | 'fail' | 'reply';
export const MESSAGE_MACHINE = new StateMachine<PaymentMessageStatus, MessageAction>('payment_message', [
  { from: null, action: 'create', to: 'pending', events: [] },
  { from: ['pending'], action: 'hand_over', to: 'sent', events: [] },
  { from: ['pending', 'sent'], action: 'deliver', to: 'delivered', events: ['payment.message.delivered'] },
  { from: ['pending', 'sent'], action: 'fail', to: 'failed', events: ['payment.message.failed'] },
  { from: ['pending', 'sent', 'delivered', 'failed', 'replied'], action: 'reply', to: 'replied', events: ['payment.message.replied'] },
]);
