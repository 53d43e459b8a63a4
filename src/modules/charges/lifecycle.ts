import type { ChargeStatus } from './tables.ts';

/**
 * The charge state machine (docs/charges.md). Every status change of a charge goes through this
 * table, via applyChargeTransition (transition.ts), which also emits the event named here, in the
 * same transaction, exactly once. A (from, action) pair has at most one row.
 */
export const CHARGE_ACTIONS = ['create', 'submit', 'approve', 'decline', 'cancel', 'expire', 'refund'] as const;
export type ChargeAction = (typeof CHARGE_ACTIONS)[number];

export interface ChargeTransition {
  from: readonly ChargeStatus[] | null;
  action: ChargeAction;
  to: ChargeStatus;
  /** The SPEC.md event the transition emits. */
  event: string;
}

export const CHARGE_TRANSITIONS: readonly ChargeTransition[] = [
  // Recorded (and committed) before the rail is called.
  { from: null, action: 'create', to: 'created', event: 'charge.created' },
  // The rail took the debit (or its outcome arrived: every charge passes through processing).
  { from: ['created'], action: 'submit', to: 'processing', event: 'charge.processing' },
  { from: ['processing'], action: 'approve', to: 'paid', event: 'charge.paid' },
  // Rejected by the bank, the card network or risk rules: `remarks` carries the reason.
  { from: ['processing'], action: 'decline', to: 'failed', event: 'charge.failed' },
  // POST /charges/{id}/cancel: a charge that is not settled yet fails with remarks CANCELLED.
  { from: ['created', 'processing'], action: 'cancel', to: 'failed', event: 'charge.failed' },
  // A banklink, rtkey or walletb charge nobody completed in time (the charges.expire job, or the
  // first request that finds it overdue): remarks EXPIRED.
  { from: ['created', 'processing'], action: 'expire', to: 'failed', event: 'charge.failed' },
  // The refund the rail confirmed (requested by POST /charges/{id}/refund).
  { from: ['paid'], action: 'refund', to: 'refunded', event: 'charge.refunded' },
];

/** The transition for `action` from `from`, or null when the table forbids it. */
export function chargeTransition(from: ChargeStatus | null, action: ChargeAction): ChargeTransition | null {
  return CHARGE_TRANSITIONS.find((t) => t.action === action && (t.from === null ? from === null : from !== null && t.from.includes(from))) ?? null;
}

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
