import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

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

/** Fixed windows counted in PostgreSQL (an unlogged table), so every API process shares them. */
export class PostgresRateLimiter implements RateLimiter {
  private lastSweep = 0;
  constructor(private database: Database) {}
  async hit(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    const start = Math.floor(nowMs / windowMs) * windowMs;
    const row = await this.database.db
      .insertInto('rate_limit_windows')
      .values({ bucket, window_start: start, hits: 1 })
      .onConflict((oc) => oc.columns(['bucket', 'window_start']).doUpdateSet({ hits: sql`rate_limit_windows.hits + 1` }))
      .returning('hits')
      .executeTakeFirstOrThrow();
    if (nowMs - this.lastSweep > 60_000) {
      this.lastSweep = nowMs;
      void this.database.db
        .deleteFrom('rate_limit_windows')
        .where('window_start', '<', BigInt(nowMs - 60_000))
        .execute()
        .catch(() => {});
    }
    return decide(row.hits, limit, start, windowMs, nowMs);
  }
}
