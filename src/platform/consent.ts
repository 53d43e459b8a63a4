import type { RequestContext } from './context.ts';

/**
 * The payer's acceptance of a provider's contracts through the API (PRODUCT.md "Live money you can
 * trust"): a provider that files the payer's data (Wompi: its end-user terms and the personal-data
 * authorization of Ley 1581 de 2012) needs the payer's consent, which the company asserts by sending
 * `accept_terms: true` once the payer accepted them in its own checkout. Refused without it in live
 * (422 on accept_terms); recorded with who asserted it (the API key) and when.
 */

/** A rail adapter that needs the payer's consent to its provider's contracts (a connector's). */
export interface ConsentingRail {
  readonly consentRequired?: boolean;
}

export interface ApiConsent {
  accepted_at: string;
  /** Who asserted the payer's acceptance: the company, through this API key. */
  asserted_by: string;
}

export const ACCEPT_TERMS_REQUIRED =
  "the payment provider needs the payer's acceptance of its terms and of the personal-data authorization (Ley 1581 de 2012): show them to the payer, then send accept_terms: true";

/**
 * The consent to record for an operation on `rail`, null when the rail needs none; throws nothing:
 * `missing` is true when the rail needs it, the environment is live and the company did not assert it.
 */
export function apiConsent(
  ctx: RequestContext,
  rail: ConsentingRail | null,
  acceptTerms: boolean | null | undefined,
): { consent: ApiConsent | null; missing: boolean } {
  if (!rail?.consentRequired) return { consent: null, missing: false };
  if (acceptTerms !== true) return { consent: null, missing: ctx.environment === 'live' };
  return { consent: { accepted_at: ctx.deps.clock.now().toISOString(), asserted_by: `api_key:${ctx.keyId}` }, missing: false };
}
