import type { AccountStatus } from '../../platform/db/schema.ts';
import { StateMachine } from '../../platform/state-machine.ts';

/**
 * The account state machine (docs/accounts.md), applied by the platform's engine
 * (src/platform/state-machine.ts). Every status change goes through this table, which also names
 * the events the change emits, in order.
 */
export type AccountAction = 'create' | 'create_destination' | 'enrollment_approved' | 'enrollment_rejected' | 'holder_validated' | 'delete';

export const ACCOUNT_MACHINE = new StateMachine<AccountStatus, AccountAction>('account', [
  { from: null, action: 'create', to: 'PENDING', events: ['account.pending'] },
  // authorization false: no debit enrollment is asked, so nothing waits: a payout destination at once.
  { from: null, action: 'create_destination', to: 'ACTIVE', events: ['account.connected'] },
  { from: ['PENDING'], action: 'enrollment_approved', to: 'ACTIVE', events: ['account.connected'] },
  { from: ['PENDING'], action: 'enrollment_rejected', to: 'REJECTED', events: ['account.uncompleted'] },
  { from: ['PENDING'], action: 'holder_validated', to: 'ACTIVE', events: ['account.validated', 'account.connected'] },
  { from: ['PENDING', 'ACTIVE', 'REJECTED'], action: 'delete', to: 'INACTIVE', events: ['account.disconnected'] },
]);
