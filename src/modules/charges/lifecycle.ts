import { StateMachine, type Transition } from '../../platform/state-machine.ts';
import type { ChargeStatus } from './tables.ts';

/**
 * The charge state machine (docs/charges.md). Every status change of a charge goes through this
 * table, applied by the platform's engine (src/platform/state-machine.ts) through
 * applyChargeTransition (transition.ts), which emits the events named here in the same
 * transaction, exactly once. A (from, action) pair has at most one row.
 */
export const CHARGE_ACTIONS = ['create', 'submit', 'approve', 'decline', 'cancel', 'expire', 'late_approve', 'refund'] as const;
export type ChargeAction = (typeof CHARGE_ACTIONS)[number];

export type ChargeTransition = Transition<ChargeStatus, ChargeAction>;

export const CHARGE_MACHINE = new StateMachine<ChargeStatus, ChargeAction>('charge', [
  // Recorded (and committed) before the rail is called.
  { from: null, action: 'create', to: 'created', events: ['charge.created'] },
  // The rail took the debit (or its outcome arrived: every charge passes through processing).
  { from: ['created'], action: 'submit', to: 'processing', events: ['charge.processing'] },
  { from: ['processing'], action: 'approve', to: 'paid', events: ['charge.paid'] },
  // Rejected by the bank, the card network or risk rules: `remarks` carries the reason.
  { from: ['processing'], action: 'decline', to: 'failed', events: ['charge.failed'] },
  // POST /charges/{id}/cancel: a charge that is not settled yet fails with remarks CANCELLED.
  { from: ['created', 'processing'], action: 'cancel', to: 'failed', events: ['charge.failed'] },
  // A banklink, rtkey or walletb charge nobody completed in time (the charges.expire job, or the
  // first request that finds it overdue): remarks EXPIRED.
  { from: ['created', 'processing'], action: 'expire', to: 'failed', events: ['charge.failed'] },
  // A provider-backed charge expired (or cancelled) here that the provider approved after all: the
  // payer paid, so the money is kept (collection posted, refundable) and remarks say LATE_APPROVAL.
  { from: ['failed'], action: 'late_approve', to: 'paid', events: ['charge.paid'] },
  // The refund the rail confirmed (requested by POST /charges/{id}/refund).
  { from: ['paid'], action: 'refund', to: 'refunded', events: ['charge.refunded'] },
]);
export const CHARGE_TRANSITIONS = CHARGE_MACHINE.transitions;

/** SPEC.md: cancel only from created or processing; a test charge resolves only from the same two. */
export const CANCELLABLE: readonly ChargeStatus[] = ['created', 'processing'];
export const RESOLVABLE: readonly ChargeStatus[] = ['created', 'processing'];
/** Statuses no rail outcome changes any more. */
export const FINAL: readonly ChargeStatus[] = ['paid', 'failed', 'refunded'];

/** remarks of a charge cancelled by the company. */
export const CANCELLED_REMARKS = 'CANCELLED';
/** remarks of a charge that expired open (banklink session, rtkey QR, walletb request). */
export const EXPIRED_REMARKS = 'EXPIRED';
/** remarks of a walletb request whose OTP was wrong (10136): it takes no other OTP. */
export const OTP_INVALID_REMARKS = 'OTP_INVALID';

/** remarks of a charge the provider approved after it had expired or been cancelled here. */
export const LATE_APPROVAL_REMARKS = 'LATE_APPROVAL';

/**
 * A charge refund: recorded before the rail is asked, settled once when the rail confirms it, or
 * failed when the rail refuses it definitively (the money goes back to the balance;
 * charge.refund_failed, emitted with the charge in the same transaction).
 */
export const REFUND_MACHINE = new StateMachine<'pending' | 'succeeded' | 'failed', 'create' | 'succeed' | 'fail'>('charge_refund', [
  { from: null, action: 'create', to: 'pending', events: [] },
  // charge.refunded is the charge's event (CHARGE_MACHINE refund), in the same transaction.
  { from: ['pending'], action: 'succeed', to: 'succeeded', events: [] },
  { from: ['pending'], action: 'fail', to: 'failed', events: [] },
]);
