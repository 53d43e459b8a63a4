import { createHash } from 'node:crypto';
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

function fingerprint(req: FastifyRequest): string {
  const path = req.url.split('?')[0];
  return createHash('sha256')
    .update(`${req.method} ${path}\n`)
    .update(JSON.stringify(req.body ?? {}))
    .digest('hex');
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
  const cached = recentResponses.get(cacheKey(scope, key));
  if (!cached) return false;
  if (cached.completedAt < now.getTime() - IDEMPOTENCY_WINDOW_MS) return false;
  await replay(reply, cached, fingerprint(req));
  return true;
}

export interface IdempotencyState {
  trx: ControlledTransaction<DB>;
  key: string;
  fingerprint: string;
  settled: boolean;
}

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
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);

  const trx = await deps.database.db.startTransaction().execute();
  try {
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

    const existing = await trx
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'status_code', 'response_body'])
      .where('company_id', '=', scope.companyId)
      .where('environment', '=', scope.environment)
      .where('key', '=', key)
      .executeTakeFirst();
    await trx.rollback().execute();
    if (!existing || existing.status_code === null) {
      // Cannot happen with committed rows; treat like a lost race and let the client retry.
      throw new ApiError('service_unavailable');
    }
    await replay(reply, existing, print);
    return null;
  } catch (error) {
    if (!trx.isCommitted && !trx.isRolledBack) await trx.rollback().execute().catch(() => {});
    throw error;
  }
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

export async function abandonIdempotency(state: IdempotencyState): Promise<void> {
  if (state.settled) return;
  state.settled = true;
  await state.trx.rollback().execute().catch(() => {});
}
