import { createHash, createHmac } from 'node:crypto';
import { sql, type ControlledTransaction } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DB } from '../db/schema.ts';
import type { AppDeps } from '../context.ts';
import { ApiError } from '../errors/api-error.ts';

/** SPEC.md: a successful response is replayed for one minute; after that the key runs again. */
export const IDEMPOTENCY_WINDOW_MS = 60_000;
const KEY_RE = /^[\x20-\x7e]{1,255}$/;

export function readIdempotencyKey(req: FastifyRequest): string | undefined {
  const raw = req.headers['x-idempotency'] ?? req.headers['idempotency-key'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value === '' ? undefined : value;
}

/** Throws 409 when the header is missing or unusable. Runs before body validation. */
export function requireIdempotencyKey(req: FastifyRequest): string {
  const key = readIdempotencyKey(req);
  if (key === undefined) throw new ApiError('idempotency_error');
  if (!KEY_RE.test(key)) throw new ApiError('idempotency_key_invalid');
  return key;
}

/**
 * The request's fingerprint. A route whose body carries card data (`config.sensitiveBody`) gets a
 * keyed hash (HMAC with the card-data secret): a plain hash of a card number could be brute-forced
 * from the stored fingerprint. Computed once per request, first on the body as the client sent it
 * (the in-memory replay runs before validation): schema validation rebuilds the body in the
 * schema's key order, and a fingerprint taken after it would not match the one taken before.
 */
const fingerprints = new WeakMap<FastifyRequest, string>();
function fingerprint(req: FastifyRequest): string {
  const known = fingerprints.get(req);
  if (known) return known;
  const path = req.url.split('?')[0];
  const secret = req.routeOptions.config?.sensitiveBody ? req.ctx?.deps.config.cardDataSecret : undefined;
  const print = (secret ? createHmac('sha256', secret) : createHash('sha256'))
    .update(`${req.method} ${path}\n`)
    .update(JSON.stringify(req.body ?? {}))
    .digest('hex');
  fingerprints.set(req, print);
  return print;
}

/**
 * Fast path: a response this process stored within the window replays from memory. Within the
 * window the stored row cannot change, so the copy is exact; other processes use the database.
 * Returns true when the reply was sent.
 */
export async function replayFromMemory(
  req: FastifyRequest,
  reply: FastifyReply,
  scope: { companyId: string; environment: 'test' | 'live' },
  key: string,
  now: Date = new Date(),
): Promise<boolean> {
  // Taken here, on the body as sent, for this request's whole life (see fingerprint).
  const print = fingerprint(req);
  const cached = recentResponses.get(cacheKey(scope, key));
  if (!cached) return false;
  if (cached.completedAt < now.getTime() - IDEMPOTENCY_WINDOW_MS) return false;
  await replay(reply, cached, print);
  return true;
}

export interface IdempotencyState {
  trx: ControlledTransaction<DB>;
  key: string;
  fingerprint: string;
  settled: boolean;
  /**
   * Set by detachIdempotency: the claim (and what the request wrote so far) committed early, with
   * this claim time in `completed_at` and no response yet. The response is stored later by its own
   * statement, conditional on the claim still being this one.
   */
  detachedAt?: Date;
}

/** How often a request polls for a duplicate that committed its claim early and is still running. */
const IN_PROGRESS_POLL_MS = 25;

interface StoredResponse {
  fingerprint: string;
  status_code: number;
  response_body: string;
  completedAt: number;
}

const RECENT_LIMIT = 20_000;
const recentResponses = new Map<string, StoredResponse>();
const cacheKey = (scope: { companyId: string; environment: string }, key: string) => `${scope.companyId}|${scope.environment}|${key}`;

function remember(scope: { companyId: string; environment: string }, key: string, value: StoredResponse): void {
  if (recentResponses.size >= RECENT_LIMIT) {
    // Map iteration is insertion order: drop the oldest tenth.
    let n = RECENT_LIMIT / 10;
    for (const k of recentResponses.keys()) {
      recentResponses.delete(k);
      if (--n <= 0) break;
    }
  }
  recentResponses.set(cacheKey(scope, key), value);
}

/**
 * Opens the request's transaction and claims the key inside it. A concurrent duplicate blocks on
 * the key's unique index until the first request commits (then it replays the stored response) or
 * rolls back (then it runs itself). Returns null when the response was replayed.
 */
export async function claimIdempotencyKey(
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  scope: { companyId: string; environment: 'test' | 'live' },
  key: string,
): Promise<IdempotencyState | null> {
  const print = fingerprint(req);
  const deadline = Date.now() + IDEMPOTENCY_WINDOW_MS + 5_000;
  for (;;) {
    const now = deps.clock.now();
    const cutoff = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
    const trx = await deps.database.db.startTransaction().execute();
    let existing: { fingerprint: string; status_code: number | null; response_body: string | null } | undefined;
    try {
      // Takes over a completed key once its window has passed, and an early-committed claim whose
      // request has held it for a whole window (it died: its completed_at is the claim time).
      const claimed = await trx
        .insertInto('idempotency_keys')
        .values({ company_id: scope.companyId, environment: scope.environment, key, fingerprint: print, status_code: null, response_body: null, completed_at: null })
        .onConflict((oc) =>
          oc
            .columns(['company_id', 'environment', 'key'])
            .doUpdateSet({ fingerprint: print, status_code: null, response_body: null, completed_at: null })
            .where('idempotency_keys.completed_at', '<', cutoff),
        )
        .returning(sql<number>`1`.as('ok'))
        .executeTakeFirst();
      if (claimed) return { trx, key, fingerprint: print, settled: false };

      existing = await trx
        .selectFrom('idempotency_keys')
        .select(['fingerprint', 'status_code', 'response_body'])
        .where('company_id', '=', scope.companyId)
        .where('environment', '=', scope.environment)
        .where('key', '=', key)
        .executeTakeFirst();
      await trx.rollback().execute();
    } catch (error) {
      if (!trx.isCommitted && !trx.isRolledBack) await trx.rollback().execute().catch(() => {});
      throw error;
    }
    if (existing && existing.status_code !== null) {
      await replay(reply, existing, print);
      return null;
    }
    if (existing && existing.fingerprint !== print) throw new ApiError('idempotency_key_reused');
    // A request that committed its claim early (detachIdempotency) is still running, or the row
    // vanished between the two statements (that request failed): wait for its result, then look again.
    if (Date.now() > deadline) throw new ApiError('service_unavailable');
    await new Promise((resolve) => setTimeout(resolve, IN_PROGRESS_POLL_MS));
  }
}

/**
 * Commits the request's transaction now: the claim stays in progress (no response yet, the claim
 * time in `completed_at`), together with whatever the request wrote so far. For operations that
 * must record something durably before an external call (docs/charges.md). A duplicate arriving
 * meanwhile waits for the response; a claim whose request died is taken over after the window.
 */
export async function detachIdempotency(deps: AppDeps, state: IdempotencyState, scope: { companyId: string; environment: 'test' | 'live' }): Promise<void> {
  if (state.settled || state.detachedAt) return;
  const claimedAt = deps.clock.now();
  try {
    await state.trx
      .updateTable('idempotency_keys')
      .set({ completed_at: claimedAt })
      .where('company_id', '=', scope.companyId)
      .where('environment', '=', scope.environment)
      .where('key', '=', state.key)
      .execute();
    await state.trx.commit().execute();
  } catch {
    // Nothing of the request was recorded: the client retries (with the same key).
    state.settled = true;
    if (!state.trx.isCommitted && !state.trx.isRolledBack) await state.trx.rollback().execute().catch(() => {});
    throw new ApiError('service_unavailable');
  }
  state.detachedAt = claimedAt;
}

async function replay(reply: FastifyReply, stored: { fingerprint: string; status_code: number | null; response_body: string | null }, print: string) {
  if (stored.fingerprint !== print) throw new ApiError('idempotency_key_reused');
  reply
    .code(stored.status_code ?? 200)
    .header('content-type', 'application/json; charset=utf-8')
    .header('idempotent-replayed', 'true');
  await reply.send(stored.response_body ?? '');
}

/** Stores a successful response with the request's own commit; anything else rolls back. */
export async function settleIdempotency(
  deps: AppDeps,
  state: IdempotencyState,
  scope: { companyId: string; environment: 'test' | 'live' },
  statusCode: number,
  payload: unknown,
): Promise<void> {
  if (state.settled) return;
  state.settled = true;
  if (state.detachedAt) {
    await settleDetached(deps, state, scope, statusCode, payload);
    return;
  }
  if (statusCode >= 400) {
    await state.trx.rollback().execute();
    return;
  }
  const completedAt = deps.clock.now();
  const body = typeof payload === 'string' ? payload : '';
  await state.trx
    .updateTable('idempotency_keys')
    .set({ status_code: statusCode, response_body: body, completed_at: completedAt })
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('key', '=', state.key)
    .execute();
  await state.trx.commit().execute();
  remember(scope, state.key, { fingerprint: state.fingerprint, status_code: statusCode, response_body: body, completedAt: completedAt.getTime() });
}

/**
 * A detached claim: a success stores the response on the claim row (one statement, only while the
 * row is still this request's claim); an error deletes the claim, so the key may be retried.
 */
async function settleDetached(deps: AppDeps, state: IdempotencyState, scope: { companyId: string; environment: 'test' | 'live' }, statusCode: number, payload: unknown): Promise<void> {
  const db = deps.database.db;
  if (statusCode >= 400) {
    await releaseDetached(deps, state, scope);
    return;
  }
  const completedAt = deps.clock.now();
  const body = typeof payload === 'string' ? payload : '';
  await db
    .updateTable('idempotency_keys')
    .set({ status_code: statusCode, response_body: body, completed_at: completedAt })
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('key', '=', state.key)
    .where('status_code', 'is', null)
    .where('completed_at', '=', state.detachedAt!)
    .execute();
  remember(scope, state.key, { fingerprint: state.fingerprint, status_code: statusCode, response_body: body, completedAt: completedAt.getTime() });
}

async function releaseDetached(deps: AppDeps, state: IdempotencyState, scope: { companyId: string; environment: 'test' | 'live' }): Promise<void> {
  await deps.database.db
    .deleteFrom('idempotency_keys')
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('key', '=', state.key)
    .where('status_code', 'is', null)
    .where('completed_at', '=', state.detachedAt!)
    .execute();
}

export async function abandonIdempotency(deps: AppDeps, state: IdempotencyState, scope: { companyId: string; environment: 'test' | 'live' }): Promise<void> {
  if (state.settled) return;
  state.settled = true;
  if (state.detachedAt) {
    await releaseDetached(deps, state, scope).catch(() => {});
    return;
  }
  await state.trx.rollback().execute().catch(() => {});
}
