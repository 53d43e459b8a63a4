import { StateMachine } from '../../platform/state-machine.ts';
import type { DisputeStatus } from './tables.ts';

/**
 * The dispute state machine (docs/disputes.md), applied by the platform's engine. The events are
 * the disputed object's: `charge.disputed` (the charges module) or `payment.disputed` (the
 * payment's own `dispute` transition), written in the same transaction as the `open` row; closing
 * emits nothing of its own (a lost payment dispute moves the payment to refunded: payment.refunded).
 */
export type DisputeAction = 'open' | 'win' | 'lose';

export const DISPUTE_MACHINE = new StateMachine<DisputeStatus, DisputeAction>('dispute', [
  { from: null, action: 'open', to: 'needs_response', events: [] },
  { from: ['needs_response'], action: 'win', to: 'won', events: [] },
  { from: ['needs_response'], action: 'lose', to: 'lost', events: [] },
]);
