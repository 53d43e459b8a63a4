import { createHash, randomInt } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { RequestContext } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import { requestOrigin } from '../../platform/outside-call.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId, randomToken } from '../../platform/ids.ts';
import { keyedDigest, keyedDigestMatches } from '../../platform/secrets.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { toCustomerResponse } from '../customers/service.ts';
import type { CustomerResponse } from '../customers/schemas.ts';
import './tables.ts';

/**
 * The payer session (SPEC.md "Customer session", PRODUCT.md "Payer session", docs/session.md): a
 * customer proves their phone with a one-time code and gets a token (X-Customer-Token) for the
 * session endpoints. Codes and tokens are stored as SHA-256 hashes only. Every request and
 * verification is recorded by phone, known or not, so the answers never tell whether a phone
 * belongs to a customer.
 */
const CODE_TTL_MS = 3_600_000;
const RESEND_AFTER_MS = 60_000;
const SESSION_TTL_MS = 7 * 86_400_000;
const WRONG_CODES_BURN = 5;
const LIMITS = [
  { windowMs: 30_000, max: 1 },
  { windowMs: 3_600_000, max: 3 },
];
/** The test environment's code (PRODUCT.md). */
export const TEST_LOGIN_CODE = '000000';

const hash = (value: string) => createHash('sha256').update(value).digest('base64url');
/**
 * Login codes are stored as keyed digests (the secrets key's, platform/secrets.ts keyedDigest): a
 * plain SHA-256 of a 6-digit code was reversed offline by trying the million codes (issue 29).
 * Session tokens are 40 random characters: their plain hash is enough.
 */
export const LOGIN_CODE_DIGEST = 'customer login code';

/** SPEC's login rate (1 per 30 s and 3 per hour per phone, per endpoint): 429 with Retry-After. */
async function limitByPhone(db: Executor, ctx: Tenant & { now: Date }, phone: string, kind: 'request' | 'verify', skip30s = false): Promise<void> {
  for (const { windowMs, max } of LIMITS) {
    if (skip30s && windowMs === 30_000) continue;
    const since = new Date(ctx.now.getTime() - windowMs);
    const rows = await db
      .selectFrom('customer_login_attempts')
      .select('at')
      .$call(inTenant(ctx))
      .where('phone', '=', phone)
      .where('kind', '=', kind)
      .where('at', '>', since)
      .orderBy('at')
      .execute();
    if (rows.length >= max) {
      const retry = Math.max(1, Math.ceil((new Date(rows[rows.length - max].at).getTime() + windowMs - ctx.now.getTime()) / 1000));
      throw new ApiError('rate_limited', {
        headers: { 'retry-after': String(retry), 'x-ratelimit-limit': String(max), 'x-ratelimit-remaining': '0' },
      });
    }
  }
}

const DAY_MS = 86_400_000;

/**
 * The daily caps on codes sent, against SMS pumping: per client address within the company and
 * environment (the caller is the integrator's server, so one company's traffic never uses up
 * another's), and per company and environment. Checked before the phone is looked up, so a capped request answers 429
 * whether or not the phone is a customer's (no enumeration).
 */
async function capCodesSent(db: Executor, ctx: RequestContext, ip: string, now: Date): Promise<void> {
  const since = new Date(now.getTime() - DAY_MS);
  const caps = [
    { max: ctx.deps.config.loginCodesPerIpDay, q: db.selectFrom('customer_login_codes').$call(inTenant(ctx)).where('ip', '=', ip) },
    { max: ctx.deps.config.loginCodesPerCompanyDay, q: db.selectFrom('customer_login_codes').$call(inTenant(ctx)) },
  ];
  for (const { max, q } of caps) {
    // The max-th newest code in the window: while it is in the window, the cap is reached.
    const edge = await q
      .select('created_at')
      .where('created_at', '>', since)
      .orderBy('created_at', 'desc')
      .offset(max - 1)
      .limit(1)
      .executeTakeFirst();
    if (edge) {
      const retry = Math.max(1, Math.ceil((new Date(edge.created_at).getTime() + DAY_MS - now.getTime()) / 1000));
      throw new ApiError('rate_limited', {
        message: 'Too many login codes were sent today from this address or for this company; retry later.',
        headers: { 'retry-after': String(retry), 'x-ratelimit-limit': String(max), 'x-ratelimit-remaining': '0' },
      });
    }
  }
}

/**
 * POST /customers/login/request: 200 whatever the phone. Asked again within a minute: 418 (the
 * earlier code still stands). A customer of the key's company and environment with that phone gets
 * a 6-digit code by the messaging rail (in the test environment the code is 000000).
 */
export async function requestLoginCode(ctx: RequestContext, phone: string, ip: string): Promise<{ message: string }> {
  const now = ctx.deps.clock.now();
  const scope = { companyId: ctx.companyId, environment: ctx.environment, now };
  const sent = await inTransaction(ctx.db, async (trx) => {
    const last = await trx
      .selectFrom('customer_login_attempts')
      .select('at')
      .$call(inTenant(ctx))
      .where('phone', '=', phone)
      .where('kind', '=', 'request')
      .orderBy('at', 'desc')
      .executeTakeFirst();
    if (last && now.getTime() - new Date(last.at).getTime() < RESEND_AFTER_MS) throw new ApiError('login_code_too_soon');
    await limitByPhone(trx, scope, phone, 'request', true);
    await capCodesSent(trx, ctx, ip, now);
    await trx
      .insertInto('customer_login_attempts')
      .values({ company_id: ctx.companyId, environment: ctx.environment, phone, kind: 'request', at: now })
      .execute();
    const customer = await trx
      .selectFrom('customers')
      .select('id')
      .$call(inTenant(ctx))
      .where('phone', '=', phone)
      .where('deleted_at', 'is', null)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (!customer) return null;
    const code = ctx.isTest ? TEST_LOGIN_CODE : String(randomInt(0, 1_000_000)).padStart(6, '0');
    const id = prefixedId('lc', now.getTime());
    await trx
      .insertInto('customer_login_codes')
      .values({
        company_id: ctx.companyId,
        environment: ctx.environment,
        id,
        customer_id: customer.id,
        phone,
        code_hash: keyedDigest(ctx.deps.secrets, LOGIN_CODE_DIGEST, `${id}:${code}`),
        ip,
        expires_at: new Date(now.getTime() + CODE_TTL_MS),
        used_at: null,
        created_at: now,
      })
      .execute();
    return { id, code };
  });
  if (sent) {
    // Requested by the payer: no contact window applies. A failed send leaves the code (ask again after a minute).
    // On the request's executor: the embedded engine's one session is the request's transaction.
    const company = await ctx.db.selectFrom('companies').select('name').where('id', '=', ctx.companyId).executeTakeFirst();
    try {
      await (
        await ctx.deps.rails.contactFor(ctx)
      ).messaging.send({
        to: phone,
        text: `${company?.name ?? 'Recaudo'}: tu código de acceso es ${sent.code}. Vence en 1 hora. No lo compartas.`,
        purpose: 'login_code',
        params: [sent.code],
        reference: sent.id,
      });
    } catch (error) {
      ctx.deps.logger.warn({ err: (error as Error)?.message, code: sent.id }, 'login code not sent');
    }
  }
  return { message: 'If the phone belongs to a customer, a code was sent to it.' };
}

export interface SessionAnswer {
  token: string;
  expires_at: string;
  customer: CustomerResponse;
}

/** POST /customers/login/verify: the newest unexpired code of the phone; five wrong tries burn it. */
export async function verifyLoginCode(ctx: RequestContext, phone: string, otp: string): Promise<SessionAnswer> {
  const now = ctx.deps.clock.now();
  const scope = { companyId: ctx.companyId, environment: ctx.environment, now };
  // A wrong code must count (towards the limits and the burn) although the answer is an error: the
  // request's transaction is committed before answering it, so the 422 is also what a retry replays.
  const origin = requestOrigin(ctx);
  const outcome = await origin.record(async (trx) => {
    await limitByPhone(trx, scope, phone, 'verify');
    await trx
      .insertInto('customer_login_attempts')
      .values({ company_id: ctx.companyId, environment: ctx.environment, phone, kind: 'verify', at: now })
      .execute();
    const code = await trx
      .selectFrom('customer_login_codes')
      .selectAll()
      .$call(inTenant(ctx))
      .where('phone', '=', phone)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .forUpdate()
      .executeTakeFirst();
    if (!code) return null;
    if (!keyedDigestMatches(ctx.deps.secrets, LOGIN_CODE_DIGEST, `${code.id}:${otp}`, code.code_hash)) {
      const wrong = code.wrong_attempts + 1;
      await trx
        .updateTable('customer_login_codes')
        .set({ wrong_attempts: wrong, ...(wrong >= WRONG_CODES_BURN ? { used_at: now } : {}) })
        .where('id', '=', code.id)
        .execute();
      return null;
    }
    await trx.updateTable('customer_login_codes').set({ used_at: now }).where('id', '=', code.id).execute();
    const token = `cst_${randomToken(40)}`;
    const expires = new Date(now.getTime() + SESSION_TTL_MS);
    await trx
      .insertInto('customer_sessions')
      .values({
        company_id: ctx.companyId,
        environment: ctx.environment,
        id: prefixedId('cses', now.getTime()),
        customer_id: code.customer_id,
        key_id: ctx.keyId,
        token_hash: hash(token),
        expires_at: expires,
        revoked_at: null,
        created_at: now,
      })
      .execute();
    const customer = await trx.selectFrom('customers').selectAll().where('id', '=', code.customer_id).executeTakeFirstOrThrow();
    return { token, expires_at: iso(expires), customer: toCustomerResponse(customer) };
  });
  if (!outcome) {
    await origin.commit();
    throw new ApiError('login_code_invalid', { errors: { otp: ['the code is wrong or expired'] } });
  }
  return outcome;
}

export interface SessionCustomer {
  sessionId: string;
  customerId: string;
  expiresAt: Date;
}

/**
 * The session of X-Customer-Token for this request: issued by this key (company, environment and
 * key), not expired nor revoked, and its customer not deleted (checked on every request, so a
 * deleted customer's sessions end at once). Otherwise 401 without a code (SPEC.md).
 */
export async function sessionOf(req: FastifyRequest): Promise<SessionCustomer> {
  const ctx = req.ctx;
  const header = req.headers['x-customer-token'];
  const token = typeof header === 'string' ? header.trim() : '';
  if (!token || token.length > 200) throw new ApiError('customer_token_invalid');
  const row = await ctx.deps.database.db
    .selectFrom('customer_sessions')
    .select(['id', 'customer_id', 'expires_at', 'revoked_at', 'key_id'])
    .$call(inTenant(ctx))
    .where('token_hash', '=', hash(token))
    .executeTakeFirst();
  const now = ctx.deps.clock.now();
  if (!row || row.revoked_at || row.key_id !== ctx.keyId || new Date(row.expires_at).getTime() <= now.getTime())
    throw new ApiError('customer_token_invalid');
  // The customer still exists: a deleted customer's session reads nothing (issue 29).
  const customer = await ctx.deps.database.db
    .selectFrom('customers')
    .select('id')
    .$call(inTenant(ctx))
    .where('id', '=', row.customer_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) throw new ApiError('customer_token_invalid');
  return { sessionId: row.id, customerId: row.customer_id, expiresAt: new Date(row.expires_at) };
}

/** GET /customers/session: the session's customer and when it ends. */
export async function getSession(req: FastifyRequest): Promise<{ customer: CustomerResponse; expires_at: string }> {
  const session = await sessionOf(req);
  const customer = await req.ctx.deps.database.db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', session.customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) throw new ApiError('customer_token_invalid');
  return { customer: toCustomerResponse(customer), expires_at: iso(session.expiresAt) };
}

/** DELETE /customers/session: the token stops working at once. */
export async function revokeSession(req: FastifyRequest): Promise<void> {
  const session = await sessionOf(req);
  await req.ctx.deps.database.db
    .updateTable('customer_sessions')
    .set({ revoked_at: req.ctx.deps.clock.now() })
    .where('id', '=', session.sessionId)
    .execute();
}
