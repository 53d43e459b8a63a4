import { createHash } from 'node:crypto';
import type { Executor } from '../db/database.ts';
import type { Environment } from '../db/schema.ts';
import type { Caller } from '../context.ts';
import { prefixedId, randomToken } from '../ids.ts';
import { ApiError } from '../errors/api-error.ts';
import { inTenant } from '../scope.ts';

// 40 base62 characters ≈ 238 bits of entropy.
const KEY_RANDOM_CHARS = 40;
const KEY_RE = /^(sk|pk)_(test|live)_[A-Za-z0-9]+$/;

export type KeyKind = 'secret' | 'publishable';

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateKey(kind: KeyKind, environment: Environment): string {
  return `${kind === 'secret' ? 'sk' : 'pk'}_${environment}_${randomToken(KEY_RANDOM_CHARS)}`;
}

export function looksLikeKey(key: string): boolean {
  return KEY_RE.test(key) && key.length <= 200;
}

/**
 * Issues a new key and revokes the previous ones of the same kind and environment. Must run in a
 * transaction: it first locks the company's row, so issuers of one company's keys take turns (two
 * concurrent rotations would each revoke only the keys they saw, and both new keys would stay
 * active); the second one's revoke then sees, and revokes, the first one's key.
 */
export async function issueKey(
  db: Executor,
  companyId: string,
  environment: Environment,
  kind: KeyKind,
  now: Date,
  /** A named key is one more principal (`recaudo keys create`): the others stay. Unnamed: the main key, replaced. */
  name: string | null = null,
): Promise<{ id: string; key: string }> {
  if (!db.isTransaction) throw new Error('issueKey must run inside a transaction');
  await db.selectFrom('companies').select('id').where('id', '=', companyId).forUpdate().execute();
  const key = generateKey(kind, environment);
  if (name === null) {
    // Rotation replaces the main key; named keys (other principals) are revoked one by one.
    await db
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .$call(inTenant({ companyId, environment }))
      .where('kind', '=', kind)
      .where('name', 'is', null)
      .where('revoked_at', 'is', null)
      .execute();
  }
  const id = prefixedId('key');
  await db
    .insertInto('api_keys')
    .values({ id, company_id: companyId, environment, kind, key_hash: hashKey(key), key_hint: key.slice(0, 12), created_at: now, name })
    .execute();
  return { id, key };
}

/**
 * Resolves keys to callers with a short-lived cache: the hot path costs no query, and a rotated
 * key stops working within `ttlMs` in every process.
 */
export class KeyResolver {
  private cache = new Map<string, { caller: Caller | null; expires: number }>();
  constructor(
    private db: Executor,
    private ttlMs = 5_000,
  ) {}

  async resolve(key: string): Promise<Caller | null> {
    if (!looksLikeKey(key)) return null;
    // Cached by the key itself (it is in this request's memory anyway): no hash on the hot path.
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.caller;
    const hash = hashKey(key);
    let row: { id: string; company_id: string; environment: Environment; kind: KeyKind } | undefined;
    try {
      row = await this.db
        .selectFrom('api_keys')
        .select(['id', 'company_id', 'environment', 'kind'])
        .where('key_hash', '=', hash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
    } catch (error) {
      // A key that cannot be looked up is neither valid nor invalid: the database is away.
      const unavailable = new ApiError('service_unavailable');
      (unavailable as Error & { cause?: unknown }).cause = error;
      throw unavailable;
    }
    const caller: Caller | null = row ? { companyId: row.company_id, environment: row.environment, keyId: row.id, keyKind: row.kind } : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { caller, expires: now + this.ttlMs });
    return caller;
  }

  /** A key this process resolved to a caller within `ttlMs`, without a query (null otherwise). */
  known(key: string): Caller | null {
    const hit = this.cache.get(key);
    return hit && hit.expires > Date.now() ? hit.caller : null;
  }

  forget(): void {
    this.cache.clear();
  }
}
