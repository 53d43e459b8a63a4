import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { assertInScope, iso } from '../../platform/scope.ts';
import { customerExists } from '../accounts/queries.ts';
import { loadCustomer } from '../customers/service.ts';
import { cardExpiredAt } from '../../platform/clock.ts';
import { cardFingerprint, checkCardData, type CardBrand, type CardDataInput, type CheckedCard } from './card-data.ts';
import {
  cardList,
  customerCardList,
  type CardResponse,
  type CreateCardBody,
  type CreateTokenBody,
  type TokenizedCardBody,
  type TokenResponse,
} from './schemas.ts';
import type { CardsTable, CardTokensTable } from './tables.ts';
import './tables.ts';

/**
 * Cards (docs/charges.md "Cards"): POST /cards checks the card data and keeps only what a charge
 * needs; POST /tokens (publishable key) does the same for a browser and returns a single-use token
 * that POST /cards/tokenized turns into a card with the secret key.
 */

export type CardRow = Selectable<CardsTable>;
type TokenRow = Selectable<CardTokensTable>;
type Scope = { companyId: string; environment: Environment };

export const CARD_ID = /^card_[0-9a-z]{26}$/;
export const TOKEN_ID = /^tok_[0-9a-z]{26}$/;
/** PRODUCT.md: a card token is valid 10 minutes, once. */
export const TOKEN_TTL_MS = 10 * 60_000;

export function toCardResponse(row: CardRow, now: Date): CardResponse {
  return {
    id: row.id,
    customer_id: row.customer_id,
    brand: row.brand as CardBrand,
    last4: row.last4,
    exp_month: row.exp_month,
    exp_year: row.exp_year,
    holder_name: row.holder_name,
    fingerprint: row.fingerprint,
    authorization: row.authorization,
    expired: cardExpiredAt(row, now),
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function toTokenResponse(row: TokenRow): TokenResponse {
  return {
    id: row.id,
    card: { brand: row.brand as CardBrand, last4: row.last4, exp_month: row.exp_month, exp_year: row.exp_year, holder_name: row.holder_name },
    used: row.used_at !== null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
  };
}

/** The card data checks, with the "cvv or ccv" presence rule of a missing code. */
function checkData(body: CardDataInput, now: Date): CheckedCard {
  if ((body.cvv === undefined || body.cvv === null) && (body.ccv === undefined || body.ccv === null)) {
    throw validationError({ cvv: ['is required (cvv or ccv)'] });
  }
  return checkCardData(body, now);
}

function holderName(raw: string): string {
  return raw.trim().replace(/\s+/g, ' ');
}

async function requireCustomer(ctx: RequestContext, customerId: string): Promise<string> {
  const id = customerId.toLowerCase();
  if (!(await customerExists(ctx.db, ctx, id))) throw validationError({ customer_id: ['no such customer in this environment'] });
  return id;
}

/** POST /cards: the card number and security code are checked and then forgotten. */
export async function createCard(ctx: RequestContext, body: CreateCardBody): Promise<CardResponse> {
  const now = ctx.deps.clock.now();
  const card = checkData(body, now);
  const customerId = await requireCustomer(ctx, body.customer_id);
  const row = await ctx.db
    .insertInto('cards')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('card', now.getTime()),
      customer_id: customerId,
      brand: card.brand,
      last4: card.last4,
      exp_month: card.expMonth,
      exp_year: card.expYear,
      holder_name: holderName(body.holder_name),
      fingerprint: cardFingerprint(ctx.deps.config.cardDataSecret, ctx.companyId, card.pan),
      authorization: body.authorization ?? false,
      outcome_class: card.outcomeClass,
      source: 'api',
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toCardResponse(row, now);
}

/** A path id that cannot be a card id never exists: 404 without a query. */
export function requireCardId(id: string): string {
  if (!CARD_ID.test(id)) throw new ApiError('record_not_found');
  return id;
}

/** A card of the caller's company with SPEC.md's 404 rules (deleted cards are gone). */
export async function loadCard(ctx: { companyId: string; environment: Environment; db: Executor }, id: string): Promise<CardRow> {
  const row = await ctx.db.selectFrom('cards').selectAll().where('company_id', '=', ctx.companyId).where('id', '=', requireCardId(id)).executeTakeFirst();
  return assertInScope(row, ctx);
}

/** A live card of the scope by id, or undefined (for a charge's `card_id`). */
export async function findCard(db: Executor, scope: Scope, id: string): Promise<CardRow | undefined> {
  if (!CARD_ID.test(id)) return undefined;
  return db
    .selectFrom('cards')
    .selectAll()
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function getCard(ctx: RequestContext, id: string): Promise<CardResponse> {
  return toCardResponse(await loadCard(ctx, id), ctx.deps.clock.now());
}

/** DELETE /cards/{id}: the card can no longer be charged and answers 404 afterwards. */
export async function deleteCard(ctx: RequestContext, id: string): Promise<void> {
  const card = await loadCard(ctx, id);
  const now = ctx.deps.clock.now();
  const result = await ctx.db
    .updateTable('cards')
    .set({ deleted_at: now, updated_at: now })
    .where('company_id', '=', ctx.companyId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', card.id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new ApiError('record_not_found');
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** GET /cards: filter customer_id (also as a plain parameter); newest first. */
export async function listCards(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const merged = { ...query };
  let source = 'filter[customer_id]';
  if (merged['filter[customer_id]'] === undefined && merged.customer_id !== undefined) {
    merged['filter[customer_id]'] = Array.isArray(merged.customer_id) ? merged.customer_id[merged.customer_id.length - 1] : merged.customer_id;
    source = 'customer_id';
  }
  delete merged.customer_id;
  const list = parseListQuery(cardList, merged);
  let q = selectCards(ctx);
  const customerId = list.filters.customer_id;
  if (customerId !== undefined) {
    if (!UUID_RE.test(customerId)) throw validationError({ [source]: ['must be a UUID'] });
    q = q.where('customer_id', '=', customerId.toLowerCase());
  }
  const now = ctx.deps.clock.now();
  return paginate(q, list, { path, query, table: 'cards', map: (row) => toCardResponse(row, now) });
}

/** GET /customers/{id}/cards: the customer's cards, newest first. */
export async function listCustomerCards(ctx: RequestContext, customerId: string, query: Record<string, unknown>, path: string) {
  const customer = await loadCustomer(ctx, customerId);
  const list = parseListQuery(customerCardList, query);
  const now = ctx.deps.clock.now();
  return paginate(selectCards(ctx).where('customer_id', '=', customer.id), list, { path, query, table: 'cards', map: (row) => toCardResponse(row, now) });
}

function selectCards(ctx: RequestContext) {
  return ctx.db.selectFrom('cards').selectAll().where('company_id', '=', ctx.companyId).where('environment', '=', ctx.environment).where('deleted_at', 'is', null);
}

// ---------------------------------------------------------------------------------------------
// Publishable keys and card tokens

/** POST /tokens (publishable key): a single-use token for the card, valid 10 minutes. */
export async function createToken(ctx: RequestContext, body: CreateTokenBody): Promise<TokenResponse> {
  const now = ctx.deps.clock.now();
  const card = checkData(body, now);
  const row = await ctx.db
    .insertInto('card_tokens')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('tok', now.getTime()),
      brand: card.brand,
      last4: card.last4,
      exp_month: card.expMonth,
      exp_year: card.expYear,
      holder_name: holderName(body.holder_name),
      fingerprint: cardFingerprint(ctx.deps.config.cardDataSecret, ctx.companyId, card.pan),
      outcome_class: card.outcomeClass,
      created_at: now,
      expires_at: new Date(now.getTime() + TOKEN_TTL_MS),
      used_at: null,
      card_id: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  // Tokens a day past their expiry are of no use, not even to explain a refusal: dropped here.
  await ctx.db
    .deleteFrom('card_tokens')
    .where('company_id', '=', ctx.companyId)
    .where('environment', '=', ctx.environment)
    .where('expires_at', '<', new Date(now.getTime() - 86_400_000))
    .execute();
  return toTokenResponse(row);
}

/**
 * POST /cards/tokenized (secret key): spends the token (once, before it expires) and saves the
 * card for the customer. A token of another company or environment does not exist here.
 */
export async function createCardFromToken(ctx: RequestContext, body: TokenizedCardBody): Promise<CardResponse> {
  const now = ctx.deps.clock.now();
  const customerId = await requireCustomer(ctx, body.customer_id);
  const tokenId = body.card_token.trim();
  const cardId = prefixedId('card', now.getTime());
  // Spent by one conditional update: two requests with the same token cannot both succeed.
  const token = TOKEN_ID.test(tokenId)
    ? await ctx.db
        .updateTable('card_tokens')
        .set({ used_at: now, card_id: cardId })
        .where('company_id', '=', ctx.companyId)
        .where('environment', '=', ctx.environment)
        .where('id', '=', tokenId)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .returningAll()
        .executeTakeFirst()
    : undefined;
  if (!token) {
    const found = TOKEN_ID.test(tokenId)
      ? await ctx.db
          .selectFrom('card_tokens')
          .select(['used_at', 'expires_at'])
          .where('company_id', '=', ctx.companyId)
          .where('environment', '=', ctx.environment)
          .where('id', '=', tokenId)
          .executeTakeFirst()
      : undefined;
    const problem = !found ? 'no such card token in this environment' : found.used_at ? 'the card token was already used' : 'the card token expired (tokens last 10 minutes)';
    throw validationError({ card_token: [problem] });
  }
  const row = await ctx.db
    .insertInto('cards')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: cardId,
      customer_id: customerId,
      brand: token.brand,
      last4: token.last4,
      exp_month: token.exp_month,
      exp_year: token.exp_year,
      holder_name: token.holder_name,
      fingerprint: token.fingerprint,
      authorization: body.authorization ?? false,
      outcome_class: token.outcome_class,
      source: 'token',
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toCardResponse(row, now);
}
