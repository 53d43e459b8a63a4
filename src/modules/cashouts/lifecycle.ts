import { StateMachine } from '../../platform/state-machine.ts';
import type { CashoutStatus } from './tables.ts';

/**
 * The cash-out state machine (docs/cashouts.md), applied by the platform's engine. Money follows
 * the status: held at `create`, paid out at `complete`, released at `reject` and `cancel`, and
 * given back by `return` (a bank return of a completed cash-out: the one final state that may
 * change, once).
 */
export const CASHOUT_ACTIONS = ['create', 'require_approval', 'submit', 'approve', 'complete', 'reject', 'cancel', 'return'] as const;
export type CashoutAction = (typeof CASHOUT_ACTIONS)[number];

export const CASHOUT_MACHINE = new StateMachine<CashoutStatus, CashoutAction>('cashout', [
  { from: null, action: 'create', to: 'created', events: ['cashout.created'] },
  // Above the company's approval threshold: nothing is sent until someone approves.
  { from: ['created'], action: 'require_approval', to: 'require_approval', events: ['cashout.require_approval'] },
  // The payout rail took it (or answered at once).
  { from: ['created'], action: 'submit', to: 'processing', events: ['cashout.processing'] },
  { from: ['require_approval'], action: 'approve', to: 'processing', events: ['cashout.processing'] },
  { from: ['processing'], action: 'complete', to: 'completed', events: ['cashout.completed'] },
  // The rail refused it, or the approver did: remarks says why; the money is released.
  { from: ['processing', 'require_approval'], action: 'reject', to: 'rejected', events: ['cashout.rejected'] },
  // By the company, or 7 days without an approval decision: the money is released.
  { from: ['created', 'require_approval'], action: 'cancel', to: 'cancelled', events: ['cashout.cancelled'] },
  // The bank sent a completed payout back: remarks RETURNED, a reversing ledger transaction.
  { from: ['completed'], action: 'return', to: 'rejected', events: ['cashout.rejected'] },
]);

export const CANCELLABLE: readonly CashoutStatus[] = ['created', 'require_approval'];
/** How long a cash-out waits for an approval decision before it is cancelled. */
export const APPROVAL_WINDOW_MS = 7 * 86_400_000;
export const APPROVAL_EXPIRED_REMARKS = 'APPROVAL_EXPIRED';
export const RETURNED_REMARKS = 'RETURNED';
