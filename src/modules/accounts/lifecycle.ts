import type { AccountStatus } from '../../platform/db/schema.ts';

/**
 * The account state machine (docs/accounts.md). Every status change goes through this table,
 * which also names the events the change emits, in order.
 */
export type AccountAction = 'create' | 'enrollment_approved' | 'enrollment_rejected' | 'holder_validated' | 'delete';

interface Transition {
  from: AccountStatus[] | null;
  action: AccountAction;
  to: AccountStatus;
  events: string[];
}

export const ACCOUNT_TRANSITIONS: readonly Transition[] = [
  { from: null, action: 'create', to: 'PENDING', events: ['account.pending'] },
  { from: ['PENDING'], action: 'enrollment_approved', to: 'ACTIVE', events: ['account.connected'] },
  { from: ['PENDING'], action: 'enrollment_rejected', to: 'REJECTED', events: ['account.uncompleted'] },
  { from: ['PENDING'], action: 'holder_validated', to: 'ACTIVE', events: ['account.validated', 'account.connected'] },
  { from: ['PENDING', 'ACTIVE', 'REJECTED'], action: 'delete', to: 'INACTIVE', events: ['account.disconnected'] },
];

/** The transition for `action` from `from`, or null when the action is not allowed there. */
export function accountTransition(from: AccountStatus | null, action: AccountAction): { to: AccountStatus; events: string[] } | null {
  const t = ACCOUNT_TRANSITIONS.find((x) => x.action === action && (x.from === null ? from === null : from !== null && x.from.includes(from)));
  return t ? { to: t.to, events: t.events } : null;
}
