/**
 * Pacing of a sender's campaign messages (docs/campaigns.md "Pacing"), as pure arithmetic over
 * instants: a token bucket at the sender's throughput, and a minimum gap between two messages to
 * the same phone. The dispatcher keeps the bucket's one number in the database, under the
 * sender's row lock, so every worker process shares it.
 */

export interface SendRate {
  /** Messages per second the sender's provider accepts (the bucket's refill rate). */
  perSecond: number;
  /** Messages that may go at once after a pause (the bucket's size). */
  burst: number;
}

/** Milliseconds between two tokens, rounded up so the rate is never exceeded. */
export const tokenIntervalMs = (rate: SendRate) => Math.ceil(1000 / rate.perSecond);

/**
 * The bucket in its "virtual scheduling" form (the GCRA, exactly equivalent to a token bucket of
 * `burst` tokens refilled one per interval): `tat` is when the bucket will be full again (null:
 * full). A message may go at `now` iff tat − now ≤ (burst − 1)·interval; each one moves tat one
 * interval past max(tat, now). One instant instead of a fractional token count: exact in
 * milliseconds, nothing drifts.
 */
export function takeTokens(tat: Date | null, now: Date, rate: SendRate, wanted: number): { granted: number; tat: Date | null } {
  const interval = tokenIntervalMs(rate);
  const tolerance = (Math.max(1, Math.floor(rate.burst)) - 1) * interval;
  let t = tat ? tat.getTime() : now.getTime();
  let granted = 0;
  while (granted < wanted && t - now.getTime() <= tolerance) {
    t = Math.max(t, now.getTime()) + interval;
    granted++;
  }
  return { granted, tat: granted > 0 ? new Date(t) : tat };
}

/** How many messages may go at `now` (0 to burst). */
export function tokensAvailable(tat: Date | null, now: Date, rate: SendRate): number {
  return takeTokens(tat, now, rate, Math.max(1, Math.floor(rate.burst))).granted;
}

/** The first instant at or after `now` when one more message may go. */
export function nextTokenAt(tat: Date | null, now: Date, rate: SendRate): Date {
  if (!tat) return now;
  const tolerance = (Math.max(1, Math.floor(rate.burst)) - 1) * tokenIntervalMs(rate);
  return new Date(Math.max(now.getTime(), tat.getTime() - tolerance));
}

/**
 * The first instant a phone may get another message: `gapMs` after the last one handed to the
 * provider for it (null: never messaged, free now).
 */
export function phoneFreeAt(lastSentAt: Date | null, now: Date, gapMs: number): Date {
  if (!lastSentAt) return now;
  return new Date(Math.max(now.getTime(), lastSentAt.getTime() + gapMs));
}
