import { StateMachine } from '../../platform/state-machine.ts';
import type { CampaignMessageStatus, CampaignStatus } from './tables.ts';

/**
 * A campaign: queued until the dispatcher hands its first message over, sending until none of its
 * messages waits any more, then completed. Cancel stops what was not handed over yet. SPEC.md
 * names no campaign events, so the campaign's own moves emit none.
 */
export type CampaignAction = 'create' | 'start' | 'complete' | 'cancel';

export const CAMPAIGN_MACHINE = new StateMachine<CampaignStatus, CampaignAction>('campaign', [
  { from: null, action: 'create', to: 'queued', events: [] },
  { from: ['queued'], action: 'start', to: 'sending', events: [] },
  { from: ['queued', 'sending'], action: 'complete', to: 'completed', events: [] },
  { from: ['queued', 'sending'], action: 'cancel', to: 'cancelled', events: [] },
]);

/**
 * A campaign message. `dispatch` takes it for one dispatcher run (the per-phone gap counts from
 * then); `hand_over` records the provider's acceptance; `requeue` gives a retryable failure back to
 * the queue. The provider's reports emit SPEC.md's `payment.message.*` events, the same words and
 * the same guards as a payment's messages (a repeated or late report moves nothing).
 */
export type CampaignMessageAction = 'create' | 'dispatch' | 'hand_over' | 'requeue' | 'deliver' | 'fail' | 'reply' | 'cancel';

export const CAMPAIGN_MESSAGE_MACHINE = new StateMachine<CampaignMessageStatus, CampaignMessageAction>('campaign_message', [
  { from: null, action: 'create', to: 'queued', events: [] },
  { from: ['queued'], action: 'dispatch', to: 'sending', events: [] },
  { from: ['sending'], action: 'hand_over', to: 'sent', events: [] },
  { from: ['sending'], action: 'requeue', to: 'queued', events: [] },
  { from: ['sending', 'sent'], action: 'deliver', to: 'delivered', events: ['payment.message.delivered'] },
  { from: ['queued', 'sending', 'sent'], action: 'fail', to: 'failed', events: ['payment.message.failed'] },
  { from: ['sending', 'sent', 'delivered', 'failed', 'replied'], action: 'reply', to: 'replied', events: ['payment.message.replied'] },
  { from: ['queued'], action: 'cancel', to: 'cancelled', events: [] },
]);

/** Statuses of a message still waiting to be handed to the rail. */
export const WAITING: readonly CampaignMessageStatus[] = ['queued', 'sending'];
