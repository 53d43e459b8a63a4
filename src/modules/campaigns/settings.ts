import type { AppDeps } from '../../platform/context.ts';
import type { SendRate } from './pacing.ts';

/**
 * The campaign settings (docs/campaigns.md "Settings"). Constants of the module: the sender's
 * throughput is the messaging provider's, not the operator's taste. A runtime may override them
 * (`configureCampaigns`), which the tests do to keep deadlines and buckets small.
 */
export interface CampaignSettings {
  /** The sender's token bucket: messages per second and burst. */
  rate: SendRate;
  /** Minimum time between two campaign messages to the same phone (any campaign of the sender). */
  phoneGapMs: number;
  /** The whole media fetch (DNS, connect, redirects, every byte) must end within this. */
  mediaTimeoutMs: number;
  /** Redirects followed when fetching the media, each judged by the URL rules again. */
  mediaMaxRedirects: number;
  /** Send attempts of one message (retryable rail errors) before it is failed for good. */
  maxSendAttempts: number;
}

export const CAMPAIGN_DEFAULTS: Readonly<CampaignSettings> = Object.freeze({
  // A WhatsApp Business number starts at 80 messages/s and an SMS gateway account is commonly
  // sold at 10–30/s: 20/s is within what any of them accepts.
  rate: { perSecond: 20, burst: 20 },
  phoneGapMs: 6_000,
  mediaTimeoutMs: 10_000,
  mediaMaxRedirects: 3,
  maxSendAttempts: 5,
});

const overrides = new WeakMap<AppDeps, Partial<CampaignSettings>>();

/** Overrides some settings for one runtime (tests). */
export function configureCampaigns(deps: AppDeps, settings: Partial<CampaignSettings>): void {
  overrides.set(deps, { ...overrides.get(deps), ...settings });
}

export function campaignSettings(deps: AppDeps): CampaignSettings {
  return { ...CAMPAIGN_DEFAULTS, ...overrides.get(deps) };
}
