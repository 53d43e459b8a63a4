import { StateMachine } from '../../platform/state-machine.ts';
import type { DeliveryStatus } from './tables.ts';

/**
 * A webhook delivery (docs/webhooks.md): pending until it succeeds, runs out of attempts or its
 * webhook is deleted; a manual retry makes any delivery pending again. The dispatcher settles
 * deliveries in batches (StateMachine.batch); a failed attempt with attempts left stays pending.
 */
export const DELIVERY_MACHINE = new StateMachine<DeliveryStatus, 'create' | 'succeed' | 'fail' | 'cancel' | 'retry'>('webhook_delivery', [
  { from: null, action: 'create', to: 'pending', events: [] },
  { from: ['pending'], action: 'succeed', to: 'succeeded', events: [] },
  { from: ['pending'], action: 'fail', to: 'failed', events: [] },
  { from: ['pending'], action: 'cancel', to: 'cancelled', events: [] },
  { from: ['pending', 'succeeded', 'failed', 'cancelled'], action: 'retry', to: 'pending', events: [] },
]);

export const SUCCEED = DELIVERY_MACHINE.batch('succeed');
export const FAIL = DELIVERY_MACHINE.batch('fail');
export const CANCEL = DELIVERY_MACHINE.batch('cancel');
export const RETRY = DELIVERY_MACHINE.batch('retry');
