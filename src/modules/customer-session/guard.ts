import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { MemoryRateLimiter, PostgresRateLimiter, type RateLimiter } from '../../platform/rate-limit/rate-limit.ts';
import { sessionOf, type SessionCustomer } from './service.ts';

/**
 * The session routes' gate, run as the route's onRequest hook: before the body is read and before
 * a POST claims its idempotency key (so it holds no transaction while it looks). It resolves
 * X-Customer-Token (401 otherwise) and spends one hit of SPEC.md's per-customer limits: reads
 * (GET /customers/session/*) 30 per minute, writes (both POSTs, shared) 5 per minute; beyond them
 * 429 with Retry-After. Counted on the service's clock, shared by every process on PostgreSQL.
 * SESSION_READS_PER_MINUTE and SESSION_WRITES_PER_MINUTE move them (SPEC's values by default).
 */
const LIMIT_OF = { read: 'sessionReadsPerMinute', write: 'sessionWritesPerMinute' } as const;

const limiters = new WeakMap<Database, RateLimiter>();
const sessions = new WeakMap<FastifyRequest, SessionCustomer>();

function limiterOf(database: Database): RateLimiter {
  let limiter = limiters.get(database);
  if (!limiter) {
    limiter = database.engine === 'postgres' ? new PostgresRateLimiter(database) : new MemoryRateLimiter();
    limiters.set(database, limiter);
  }
  return limiter;
}

export function sessionGuard(kind: keyof typeof LIMIT_OF) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const session = await sessionOf(req);
    const deps = req.ctx.deps;
    const max = deps.config[LIMIT_OF[kind]];
    const windowMs = 60_000;
    const bucket = `session-${kind}:${req.ctx.companyId}:${req.ctx.environment}:${session.customerId}`;
    const decision = await limiterOf(deps.database).hit(bucket, max, windowMs, deps.clock.now().getTime());
    reply.header('x-ratelimit-limit', String(decision.limit));
    reply.header('x-ratelimit-remaining', String(decision.remaining));
    if (!decision.allowed) throw new ApiError('rate_limited', { headers: { 'retry-after': String(decision.retryAfterSeconds) } });
    sessions.set(req, session);
  };
}

/** The session the guard admitted this request with. */
export function guardedSession(req: FastifyRequest): SessionCustomer {
  const session = sessions.get(req);
  if (!session) throw new Error('session route without sessionGuard');
  return session;
}
