import { StateMachine } from '../../platform/state-machine.ts';
import type { SubscriptionStatus } from './tables.ts';

/**
 * A subscription's lifecycle (docs/subscriptions.md): SPEC.md's states, each move with its
 * `subscription.*` event. `pay` keeps an active subscription active (subscription.paid) and brings
 * a pass_due or unpaid one back. A paid period is never revoked: freezing or cancelling only stops
 * future cycles.
 */
export type SubscriptionAction = 'create' | 'start' | 'pay' | 'overdue' | 'give_up' | 'cancel' | 'finish' | 'freeze' | 'unfreeze';

export const SUBSCRIPTION_MACHINE = new StateMachine<SubscriptionStatus, SubscriptionAction>('subscription', [
  { from: null, action: 'create', to: 'created', events: ['subscription.created'] },
  // The trial starts, or the first cycle is billed with the subscription already in force.
  { from: ['created'], action: 'start', to: 'active', events: ['subscription.active'] },
  { from: ['created', 'pass_due', 'unpaid'], action: 'pay', to: 'active', events: ['subscription.paid', 'subscription.active'] },
  { from: ['active'], action: 'pay', to: 'active', events: ['subscription.paid'] },
  { from: ['active', 'created'], action: 'overdue', to: 'pass_due', events: ['subscription.pass_due'] },
  { from: ['pass_due'], action: 'give_up', to: 'unpaid', events: ['subscription.unpaid'] },
  { from: ['created', 'active', 'pass_due', 'unpaid', 'frozen'], action: 'cancel', to: 'canceled', events: ['subscription.canceled'] },
  { from: ['active'], action: 'finish', to: 'finished', events: ['subscription.finished'] },
  { from: ['created', 'active', 'pass_due'], action: 'freeze', to: 'frozen', events: ['subscription.frozen'] },
  { from: ['frozen'], action: 'unfreeze', to: 'active', events: ['subscription.active'] },
]);
