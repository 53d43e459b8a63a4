import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { ApiError } from '../errors/api-error.ts';

export interface RateDecision {
  limit: number;
  remaining: number;
  allowed: boolean;
  retryAfterSeconds: number;
}

export interface RateLimiter {
  hit(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision>;
}

function decide(hits: number, limit: number, windowStart: number, windowMs: number, nowMs: number): RateDecision {
  const allowed = hits <= limit;
  return {
    limit,
    remaining: Math.max(0, limit - hits),
    allowed,
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((windowStart + windowMs - nowMs) / 1000)),
  };
}

function unavailable(cause: unknown): ApiError {
  const error = new ApiError('service_unavailable');
  (error as Error & { cause?: unknown }).cause = cause;
  return error;
}

/** Fixed windows in memory: exact for the embedded engine, where one process owns the data. */
export class MemoryRateLimiter implements RateLimiter {
  private windows = new Map<string, { start: number; hits: number }>();
  async hit(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    const start = Math.floor(nowMs / windowMs) * windowMs;
    let w = this.windows.get(bucket);
    if (!w || w.start !== start) {
      if (this.windows.size > 50_000) this.windows.clear();
      w = { start, hits: 0 };
      this.windows.set(bucket, w);
    }
    w.hits += 1;
    return decide(w.hits, limit, start, windowMs, nowMs);
  }
}

/**
 * Fixed windows counted in PostgreSQL (an unlogged table), so every API process shares them. To
 * keep a database write off most requests, a process reserves its hits in chunks (a tenth of the
 * limit) and spends them locally; the shared total still never exceeds the limit.
 */
export class PostgresRateLimiter implements RateLimiter {
  private lastSweep = 0;
  private local = new Map<string, { start: number; granted: number; used: number; exhausted: boolean; lastTotal?: number }>();
  private pending = new Map<string, Promise<void>>();
  constructor(private database: Database) {}

  async hit(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    const start = Math.floor(nowMs / windowMs) * windowMs;
    for (;;) {
      let w = this.local.get(bucket) as { start: number; granted: number; used: number; exhausted: boolean; lastTotal?: number } | undefined;
      if (!w || w.start !== start) {
        if (this.local.size > 50_000) this.local.clear();
        w = { start, granted: 0, used: 0, exhausted: false };
        this.local.set(bucket, w);
      }
      if (w.used < w.granted) {
        w.used += 1;
        // Remaining is this process's view: what is left of the limit after every reservation seen.
        return decide(w.used + (w.lastTotal ?? 0) - w.granted, limit, start, windowMs, nowMs);
      }
      if (w.exhausted) return decide(limit + 1, limit, start, windowMs, nowMs);
      const key = `${bucket}|${start}`;
      let reservation = this.pending.get(key);
      if (!reservation) {
        reservation = this.reserve(bucket, w, limit, start, nowMs).finally(() => this.pending.delete(key));
        this.pending.set(key, reservation);
      }
      try {
        await reservation;
      } catch (error) {
        // The counters are out of reach (database away, failing over, read-only): the request
        // cannot be counted, so it is not served; the client retries (docs/platform.md).
        throw unavailable(error);
      }
    }
  }

  private async reserve(
    bucket: string,
    w: { start: number; granted: number; used: number; exhausted: boolean; lastTotal?: number },
    limit: number,
    start: number,
    nowMs: number,
  ): Promise<void> {
    const chunk = Math.max(1, Math.floor(limit / 10));
    const row = await this.database.db
      .insertInto('rate_limit_windows')
      .values({ bucket, window_start: start, hits: chunk })
      .onConflict((oc) => oc.columns(['bucket', 'window_start']).doUpdateSet({ hits: sql`rate_limit_windows.hits + ${chunk}` }))
      .returning('hits')
      .executeTakeFirstOrThrow();
    const total = Number(row.hits);
    const usable = Math.max(0, Math.min(chunk, limit - (total - chunk)));
    w.granted += usable;
    w.lastTotal = Math.min(total, limit);
    if (usable < chunk) w.exhausted = true;
    if (nowMs - this.lastSweep > 60_000) {
      this.lastSweep = nowMs;
      void this.database.db
        .deleteFrom('rate_limit_windows')
        .where('window_start', '<', BigInt(nowMs - 600_000))
        .execute()
        .catch(() => {});
    }
  }
}

/**
 * The bucket of a client address: an IPv4 address (also written IPv4-mapped) on its own, an IPv6
 * address by its /64 (one subscriber's whole prefix, which it can rotate through at will).
 */
export function clientBucket(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!ip.includes(':')) return ip;
  const [head, tail] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => (g.replace(/^0+/, '') || '0').toLowerCase())
    .join(':')}::/64`;
}

/**
 * Failed authentications (an API key that matches none) per client address, in this process: once
 * an address has `limit` failures in the current window, its requests are refused (429) before any
 * key lookup until the window ends, so guessing keys never buys one database query per request.
 */
export class AuthFailures {
  private readonly windows = new Map<string, { start: number; fails: number }>();
  constructor(private readonly opts: { limit: number; windowMs: number }) {}

  /** Seconds until the address may try again, or 0 when it may try now. */
  blockedFor(address: string, nowMs: number): number {
    const w = this.windows.get(address);
    if (!w || w.start !== this.windowStart(nowMs) || w.fails < this.opts.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.opts.windowMs - nowMs) / 1000));
  }

  fail(address: string, nowMs: number): void {
    const start = this.windowStart(nowMs);
    let w = this.windows.get(address);
    if (!w || w.start !== start) {
      if (this.windows.size > 50_000) this.windows.clear();
      w = { start, fails: 0 };
      this.windows.set(address, w);
    }
    w.fails += 1;
  }

  private windowStart(nowMs: number): number {
    return Math.floor(nowMs / this.opts.windowMs) * this.opts.windowMs;
  }
}
