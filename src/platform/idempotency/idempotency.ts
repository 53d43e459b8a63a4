import { createHash, createHmac } from 'node:crypto';
import { CompiledQuery, sql, type ControlledTransaction, type Kysely } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DB } from '../db/schema.ts';
import { COMMIT_AFTER } from '../db/pg-client.ts';
import type { AppDeps } from '../context.ts';
import { ApiError } from '../errors/api-error.ts';
import { inTenant } from '../scope.ts';
import { openNullable, sealSecret } from '../secrets.ts';

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
  /** The resource the detached claim recorded (a retry answers it); null when it recorded nothing. */
  resourceId?: string | null;
  /**
   * An earlier run of this key recorded this resource id before an outside call, then failed
   * before the resource existed (rtkey: the QR was being registered): this run reuses the id, so
   * the rail sees the same reference again and never a second operation.
   */
  recordedResourceId?: string | null;
}

/**
 * How a route answers a retry of a key whose earlier run committed its claim and a resource, then
 * failed or died before answering: the resource as it is now (null when it does not exist).
 */
export type RecoverResource = (req: FastifyRequest, resourceId: string) => Promise<unknown | null>;

/** What a RecoverResource answers for an operation whose success is `204 No Content` (the resource exists). */
export const RECOVERED_NO_CONTENT = Symbol('recovered: no content');

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

interface ClaimRow {
  fingerprint: string;
  status_code: number | null;
  response_body: string | null;
  completed_at: Date | null;
  resource_id: string | null;
  held_until: Date | null;
}

/**
 * Opens the request's transaction and claims the key inside it. A concurrent duplicate blocks on
 * the key's unique index until the first request commits (then it replays the stored response) or
 * rolls back (then it runs itself). A claim committed early (detachIdempotency) is waited for while
 * its request holds it; then its recorded resource is the answer (never a second run). Returns
 * null when the response was replayed or recovered.
 */
export async function claimIdempotencyKey(
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  scope: { companyId: string; environment: 'test' | 'live' },
  key: string,
  recover?: RecoverResource,
): Promise<IdempotencyState | null> {
  const print = fingerprint(req);
  const deadline = Date.now() + deps.config.idempotencyHoldMs + 5_000;
  let takeOver: ClaimRow | undefined;
  for (;;) {
    const now = deps.clock.now();
    const cutoff = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
    const trx = await deps.database.db.startTransaction().execute();
    let existing: ClaimRow | undefined;
    try {
      if (takeOver) {
        // The earlier run recorded a resource that does not exist and is gone: run again in its place.
        const taken = await updateOpenClaim(trx, scope, key, takeOver.completed_at!)
          .set({ status_code: null, response_body: null, completed_at: null, held_until: null, resource_id: null })
          .returning(sql<number>`1`.as('ok'))
          .executeTakeFirst();
        const recorded = takeOver.resource_id;
        takeOver = undefined;
        if (taken) return { trx, key, fingerprint: print, settled: false, recordedResourceId: recorded };
      } else {
        // Takes over a key whose success is older than the window, and an early-committed claim that
        // recorded nothing and whose request is gone (hold over). A claim with a resource never runs again.
        const claimed = await trx
          .insertInto('idempotency_keys')
          .values({
            company_id: scope.companyId,
            environment: scope.environment,
            key,
            fingerprint: print,
            status_code: null,
            response_body: null,
            completed_at: null,
          })
          .onConflict((oc) =>
            oc
              .columns(['company_id', 'environment', 'key'])
              .doUpdateSet({ fingerprint: print, status_code: null, response_body: null, completed_at: null, held_until: null, resource_id: null })
              .where((eb) =>
                eb.or([
                  eb.and([eb('idempotency_keys.status_code', 'is not', null), eb('idempotency_keys.completed_at', '<', cutoff)]),
                  eb.and([
                    eb('idempotency_keys.status_code', 'is', null),
                    eb('idempotency_keys.resource_id', 'is', null),
                    eb(sql`coalesce(idempotency_keys.held_until, idempotency_keys.completed_at + interval '1 minute')`, '<', now),
                  ]),
                ]),
              ),
          )
          .returning(sql<number>`1`.as('ok'))
          .executeTakeFirst();
        if (claimed) return { trx, key, fingerprint: print, settled: false };
      }

      existing = await trx
        .selectFrom('idempotency_keys')
        .select(['fingerprint', 'status_code', 'response_body', 'completed_at', 'resource_id', 'held_until'])
        .$call(inTenant(scope))
        .where('key', '=', key)
        .executeTakeFirst();
      await trx.rollback().execute();
    } catch (error) {
      if (!trx.isCommitted && !trx.isRolledBack)
        await trx
          .rollback()
          .execute()
          .catch(() => {});
      throw error;
    }
    if (existing && existing.status_code !== null) {
      // Stored sealed: a response may carry a secret (a webhook's, a new company's keys).
      await replay(reply, { ...existing, response_body: openNullable(deps.secrets, existing.response_body) }, print);
      return null;
    }
    if (existing && existing.fingerprint !== print) throw new ApiError('idempotency_key_reused');
    if (existing && existing.completed_at) {
      const holdEnds = existing.held_until ?? new Date(existing.completed_at.getTime() + IDEMPOTENCY_WINDOW_MS);
      if (holdEnds.getTime() <= deps.clock.now().getTime() && existing.resource_id) {
        // The run that recorded the resource failed or died: its resource, as it is now, is the answer.
        const body = recover ? await recover(req, existing.resource_id) : null;
        if (body === null) {
          takeOver = existing;
          continue;
        }
        const answer = body === RECOVERED_NO_CONTENT ? { status: 204, text: '' } : { status: 200, text: JSON.stringify(body) };
        if (await storeRecovered(deps, scope, key, existing, print, answer)) {
          reply.code(answer.status).header('idempotent-replayed', 'true');
          if (answer.status === 204) await reply.send();
          else await reply.header('content-type', 'application/json; charset=utf-8').send(answer.text);
          return null;
        }
        continue;
      }
    }
    // A request that committed its claim early is still running (it holds the claim), or the row
    // vanished between the two statements (that request failed): wait for its result, then look again.
    if (Date.now() > deadline) throw new ApiError('service_unavailable');
    await new Promise((resolve) => setTimeout(resolve, IN_PROGRESS_POLL_MS));
  }
}

/**
 * The key's row while it is still the early-committed claim made at `claimedAt` with no response
 * stored: every later write of a claim is conditional on it, so a late or stale writer changes nothing.
 */
function updateOpenClaim(db: Kysely<DB>, scope: { companyId: string; environment: 'test' | 'live' }, key: string, claimedAt: Date) {
  return db
    .updateTable('idempotency_keys')
    .$call(inTenant(scope))
    .where('key', '=', key)
    .where('status_code', 'is', null)
    .where('completed_at', '=', claimedAt);
}

/** Stores a recovered answer as the key's response, only if the claim is still the one seen. */
async function storeRecovered(
  deps: AppDeps,
  scope: { companyId: string; environment: 'test' | 'live' },
  key: string,
  seen: ClaimRow,
  print: string,
  answer: { status: number; text: string },
): Promise<boolean> {
  const completedAt = deps.clock.now();
  const { status, text } = answer;
  const stored = await updateOpenClaim(deps.database.db, scope, key, seen.completed_at!)
    .set({ status_code: status, response_body: sealSecret(deps.secrets, text), completed_at: completedAt, held_until: null })
    .returning(sql<number>`1`.as('ok'))
    .executeTakeFirst();
  if (stored) remember(scope, key, { fingerprint: print, status_code: status, response_body: text, completedAt: completedAt.getTime() });
  return stored !== undefined;
}

/**
 * Commits the request's transaction now: the claim stays in progress (no response yet, the claim
 * time in `completed_at`), together with whatever the request wrote so far and the resource it
 * recorded. For operations that must record something durably before an external call
 * (docs/charges.md). A duplicate arriving meanwhile waits while the request holds the claim
 * (IDEMPOTENCY_HOLD_MS), then answers the resource; the operation never runs twice.
 */
export async function detachIdempotency(
  deps: AppDeps,
  state: IdempotencyState,
  scope: { companyId: string; environment: 'test' | 'live' },
  resourceId: string | null,
): Promise<void> {
  if (state.settled || state.detachedAt) return;
  const claimedAt = deps.clock.now();
  try {
    await state.trx
      .updateTable('idempotency_keys')
      .set({ completed_at: claimedAt, held_until: new Date(claimedAt.getTime() + deps.config.idempotencyHoldMs), resource_id: resourceId })
      .$call(inTenant(scope))
      .where('key', '=', state.key)
      .execute();
    await state.trx.commit().execute();
  } catch {
    // Nothing of the request is known to be recorded: the client retries with the same key, which
    // finds the claim and its resource if the commit went through after all.
    state.settled = true;
    if (!state.trx.isCommitted && !state.trx.isRolledBack)
      await state.trx
        .rollback()
        .execute()
        .catch(() => {});
    throw new ApiError('service_unavailable');
  }
  state.detachedAt = claimedAt;
  state.resourceId = resourceId;
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
  if (state.detachedAt) {
    state.settled = true;
    await settleDetached(deps, state, scope, statusCode, payload);
    return;
  }
  if (statusCode >= 400) {
    state.settled = true;
    await state.trx.rollback().execute();
    return;
  }
  const completedAt = deps.clock.now();
  const body = typeof payload === 'string' ? payload : '';
  try {
    const store = state.trx
      .updateTable('idempotency_keys')
      .set({ status_code: statusCode, response_body: sealSecret(deps.secrets, body), completed_at: completedAt })
      .$call(inTenant(scope))
      .where('key', '=', state.key)
      .compile();
    // On PostgreSQL the COMMIT travels with this statement (pg-client.ts) and the commit below costs no round trip.
    await state.trx.executeQuery(CompiledQuery.raw(COMMIT_AFTER + store.sql, [...store.parameters]));
    await state.trx.commit().execute();
  } catch (error) {
    // The transaction must not stay open holding the key's row lock: roll back (which releases the
    // session even when it fails). Whether a failed COMMIT applied is unknown: a retry with the same
    // key finds out (it replays the stored response, or runs).
    if (!state.trx.isCommitted && !state.trx.isRolledBack)
      await state.trx
        .rollback()
        .execute()
        .catch(() => {});
    throw error;
  } finally {
    state.settled = true;
  }
  remember(scope, state.key, { fingerprint: state.fingerprint, status_code: statusCode, response_body: body, completedAt: completedAt.getTime() });
}

/**
 * A detached claim: a success stores the response on the claim row (one statement, only while the
 * row is still this request's claim). A client error (4xx: the operation refused, nothing more will
 * happen) deletes the claim, so the key may be retried. A server error keeps a claim that recorded
 * a resource and ends its hold: a retry answers that resource at once instead of running again.
 */
async function settleDetached(
  deps: AppDeps,
  state: IdempotencyState,
  scope: { companyId: string; environment: 'test' | 'live' },
  statusCode: number,
  payload: unknown,
): Promise<void> {
  const claim = updateOpenClaim(deps.database.db, scope, state.key, state.detachedAt!);
  if (statusCode >= 500 && state.resourceId) {
    await claim.set({ held_until: deps.clock.now() }).execute();
    return;
  }
  if (statusCode >= 400) {
    await releaseDetached(deps, state, scope);
    return;
  }
  const completedAt = deps.clock.now();
  const body = typeof payload === 'string' ? payload : '';
  const [stored] = await claim
    .set({ status_code: statusCode, response_body: sealSecret(deps.secrets, body), completed_at: completedAt, held_until: null })
    .execute();
  // A retry may have answered the key meanwhile (this run outlived its hold): its answer stands.
  if (stored && stored.numUpdatedRows > 0n) {
    remember(scope, state.key, { fingerprint: state.fingerprint, status_code: statusCode, response_body: body, completedAt: completedAt.getTime() });
  }
}

async function releaseDetached(deps: AppDeps, state: IdempotencyState, scope: { companyId: string; environment: 'test' | 'live' }): Promise<void> {
  await deps.database.db
    .deleteFrom('idempotency_keys')
    .$call(inTenant(scope))
    .where('key', '=', state.key)
    .where('status_code', 'is', null)
    .where('completed_at', '=', state.detachedAt!)
    .execute();
}

/**
 * The request ended without settling (aborted by the client, or its settle was skipped). An open
 * transaction rolls back. A detached claim is left to its hold: the handler may still be running,
 * and a retry answers its resource once the hold is over.
 */
export async function abandonIdempotency(state: IdempotencyState): Promise<void> {
  if (state.settled || state.detachedAt) return;
  state.settled = true;
  await state.trx
    .rollback()
    .execute()
    .catch(() => {});
}
