import { StateMachine } from '../../platform/state-machine.ts';
import type { UtilityStatus } from './tables.ts';

/**
 * The utility (bill payment) machine (docs/utilities.md), applied by the platform's engine. Money
 * follows the status: held at `create`, paid out at `pay`, released at `reject`.
 * `create_rejected` records a bill payment refused before anything was held (a utility payment
 * link whose bill can no longer be paid from the balance), so the company still hears
 * utility.rejected.
 */
export const UTILITY_ACTIONS = ['create', 'create_rejected', 'submit', 'pay', 'reject'] as const;
export type UtilityAction = (typeof UTILITY_ACTIONS)[number];

export const UTILITY_MACHINE = new StateMachine<UtilityStatus, UtilityAction>('utility', [
  { from: null, action: 'create', to: 'created', events: [] },
  { from: null, action: 'create_rejected', to: 'rejected', events: ['utility.rejected'] },
  // The biller took it and has not answered yet.
  { from: ['created'], action: 'submit', to: 'processing', events: [] },
  { from: ['created', 'processing'], action: 'pay', to: 'paid', events: ['utility.paid'] },
  { from: ['created', 'processing'], action: 'reject', to: 'rejected', events: ['utility.rejected'] },
]);
