import { createHmac } from 'node:crypto';
import { ACCEPT_TERMS_REQUIRED, apiConsent, type ApiConsent, type ConsentingRail } from '../../platform/consent.ts';
import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { inTenant, iso, loadInScope, type Tenant } from '../../platform/scope.ts';
import { customerExists } from '../accounts/queries.ts';
import { CardRefused, type DebitPort, type SavedCard } from '../../rails/index.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import type { RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { loadCustomer } from '../customers/service.ts';
import { bogotaMonth, cardExpiredAt } from '../../platform/clock.ts';
import { CARD_BRANDS, cardFingerprint, checkCardData, type CardBrand, type CardDataInput, type CheckedCard } from './card-data.ts';
import {
  cardList,
  customerCardList,
  type CardResponse,
  type CreateCardBody,
  type CreateTokenBody,
  type ProviderTokenCardInput,
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

/**
 * The card vault of the environment's card rail when a connector keeps cards at the provider
 * (docs/connectors.md), else null (the sandbox, or live without a connector: the card is saved
 * here and a charge on it answers rail_not_configured until a connector serves cards).
 */
export async function providerVault(
  ctx: RequestContext,
): Promise<(Required<Pick<DebitPort, 'tokenizeCard' | 'saveCard'>> & Pick<DebitPort, 'consentRequired'>) | null> {
  const port = await ctx.deps.rails.connectors.find(ctx, 'card');
  return port?.tokenizeCard && port.saveCard
    ? (port as Required<Pick<DebitPort, 'tokenizeCard' | 'saveCard'>> & Pick<DebitPort, 'consentRequired'>)
    : null;
}

/** The e-mail a provider saves the card under: the customer's, required then. */
async function customerEmail(ctx: RequestContext, customerId: string): Promise<string> {
  const { email } = await loadCustomer(ctx, customerId);
  if (!email)
    throw validationError({ customer_id: ["the payment provider saves cards under the customer's e-mail: set the customer's email first"] });
  return email;
}

/**
 * A call to the provider's card vault (saving a card, tokenizing one), through the outside-call
 * protocol: the resource id is named with the request's claim before the call (a retry of the key
 * answers that resource, or runs again when it was never written); card data lives only in memory
 * for the call. A refusal of the card by the provider is 422 on card_number; an unknown outcome is
 * 503 and nothing is saved.
 */
async function atProvider<T, R>(
  ctx: RequestContext,
  resourceId: string,
  vault: (now: Date) => Promise<T>,
  insert: (trx: Executor, answer: T) => Promise<R>,
): Promise<R> {
  const now = ctx.deps.clock.now();
  const result = await runOutsideCall(requestOrigin(ctx), {
    rail: 'card',
    record: async () => ({ recorded: null, resourceId, safetyJobId: null }),
    call: async () => {
      try {
        return { answer: await vault(now) };
      } catch (error) {
        if (error instanceof CardRefused) return { refused: error.reason };
        throw error;
      }
    },
    settle: async (trx, _r, outcome) => ('answer' in outcome ? { row: await insert(trx, outcome.answer as T) } : { refused: outcome.refused }),
    unknown: () => {
      throw new ApiError('service_unavailable', {
        message: 'The payment provider did not answer; nothing was saved. Retry with the same x-idempotency.',
      });
    },
    lost: () =>
      new ApiError('service_unavailable', { message: 'The payment provider answered but it was not saved here; retry with the same x-idempotency.' }),
  });
  if (!('row' in result)) throw validationError({ card_number: [`the payment provider refused the card: ${result.refused}`] });
  return result.row as R;
}

/** What a saved card keeps of the provider's answer. */
function providerColumns(saved: SavedCard | null, consent: ApiConsent | null) {
  return {
    rail_source: saved?.source ?? null,
    rail_acceptance: saved?.acceptance
      ? JSON.stringify({
          permalink: saved.acceptance.permalink,
          personal_data_permalink: saved.acceptance.personalDataPermalink,
          accepted_at: saved.acceptance.acceptedAt.toISOString(),
          asserted_by: consent?.asserted_by ?? null,
        })
      : null,
  };
}

/** The payer's consent to the vault's provider contracts: 422 on accept_terms in live without it (connectors/consent.ts). */
function requireConsent(ctx: RequestContext, vault: ConsentingRail | null, acceptTerms: boolean | null | undefined): ApiConsent | null {
  const { consent, missing } = apiConsent(ctx, vault, acceptTerms);
  if (missing) throw validationError({ accept_terms: [ACCEPT_TERMS_REQUIRED] });
  return consent;
}

/** A retry of POST /cards whose run named the card and died: the card, or null (never saved: run again). */
export const recoverCard: RecoverResource = async (req, id) => {
  const row = await req.ctx.deps.database.db.selectFrom('cards').selectAll().$call(inTenant(req.ctx)).where('id', '=', id).executeTakeFirst();
  return row ? toCardResponse(row, req.ctx.deps.clock.now()) : null;
};

/** A retry of POST /tokens whose run named the token and died: the token, or null (never saved: run again). */
export const recoverToken: RecoverResource = async (req, id) => {
  const row = await req.ctx.deps.database.db.selectFrom('card_tokens').selectAll().$call(inTenant(req.ctx)).where('id', '=', id).executeTakeFirst();
  return row ? toTokenResponse(row) : null;
};

/** POST /cards: the card number and security code are checked and then forgotten (or handed to the provider's vault). */
export async function createCard(ctx: RequestContext, body: CreateCardBody): Promise<CardResponse> {
  const now = ctx.deps.clock.now();
  const card = checkData(body, now);
  const customerId = await requireCustomer(ctx, body.customer_id);
  const cardId = prefixedId('card', now.getTime());
  const vault = await providerVault(ctx);
  const consent = requireConsent(ctx, vault, body.accept_terms);
  const insert = (db: Executor, saved: SavedCard | null) => insertCard(db, ctx, cardId, customerId, card, body, saved, now, consent);
  if (!vault) return toCardResponse(await insert(ctx.db, null), now);
  const email = await customerEmail(ctx, customerId);
  const row = await atProvider(
    ctx,
    cardId,
    async (acceptedAt) => {
      const { token } = await vault.tokenizeCard({
        number: card.pan,
        cvc: String(body.cvv ?? body.ccv),
        expMonth: card.expMonth,
        expYear: card.expYear,
        holderName: holderName(body.holder_name),
      });
      return vault.saveCard({ token, customerEmail: email, acceptedAt });
    },
    insert,
  );
  return toCardResponse(row, now);
}

function insertCard(
  db: Executor,
  ctx: RequestContext,
  cardId: string,
  customerId: string,
  card: CheckedCard,
  body: CreateCardBody,
  saved: SavedCard | null,
  now: Date,
  consent: ApiConsent | null,
): Promise<CardRow> {
  return db
    .insertInto('cards')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: cardId,
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
      ...providerColumns(saved, consent),
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A path id that cannot be a card id never exists: 404 without a query. */
export function requireCardId(id: string): string {
  if (!CARD_ID.test(id)) throw new ApiError('record_not_found');
  return id;
}

/** A card of the caller's company with SPEC.md's 404 rules (deleted cards are gone). */
export async function loadCard(ctx: { companyId: string; environment: Environment; db: Executor }, id: string): Promise<CardRow> {
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('cards').selectAll().$call(scoped).where('id', '=', requireCardId(id)).executeTakeFirst());
}

/** A live card of the scope by id, or undefined (for a charge's `card_id`). */
export async function findCard(db: Executor, scope: Tenant, id: string): Promise<CardRow | undefined> {
  if (!CARD_ID.test(id)) return undefined;
  return db.selectFrom('cards').selectAll().$call(inTenant(scope)).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
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
    .$call(inTenant(ctx))
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
  return paginate(selectCards(ctx).where('customer_id', '=', customer.id), list, {
    path,
    query,
    table: 'cards',
    map: (row) => toCardResponse(row, now),
  });
}

function selectCards(ctx: RequestContext) {
  return ctx.db.selectFrom('cards').selectAll().$call(inTenant(ctx)).where('deleted_at', 'is', null);
}

// ---------------------------------------------------------------------------------------------
// Publishable keys and card tokens

/** POST /tokens (publishable key): a single-use token for the card, valid 10 minutes. */
export async function createToken(ctx: RequestContext, body: CreateTokenBody): Promise<TokenResponse> {
  const now = ctx.deps.clock.now();
  const card = checkData(body, now);
  const tokenId = prefixedId('tok', now.getTime());
  const vault = await providerVault(ctx);
  if (!vault) return toTokenResponse(await insertToken(ctx.db, ctx, tokenId, card, body, null, now));
  // A connector keeps cards: the card data becomes the provider's token at once (never stored here).
  const row = await atProvider(
    ctx,
    tokenId,
    async () =>
      vault.tokenizeCard({
        number: card.pan,
        cvc: String(body.cvv ?? body.ccv),
        expMonth: card.expMonth,
        expYear: card.expYear,
        holderName: holderName(body.holder_name),
      }),
    (db, answer) => insertToken(db, ctx, tokenId, card, body, answer.token, now),
  );
  return toTokenResponse(row);
}

async function insertToken(
  db: Executor,
  ctx: RequestContext,
  tokenId: string,
  card: CheckedCard,
  body: CreateTokenBody,
  railToken: string | null,
  now: Date,
) {
  const row = await db
    .insertInto('card_tokens')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: tokenId,
      rail_token: railToken,
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
  await db
    .deleteFrom('card_tokens')
    .$call(inTenant(ctx))
    .where('expires_at', '<', new Date(now.getTime() - 86_400_000))
    .execute();
  return row;
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
        .$call(inTenant(ctx))
        .where('id', '=', tokenId)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .returningAll()
        .executeTakeFirst()
    : undefined;
  if (!token) {
    const found = TOKEN_ID.test(tokenId)
      ? await ctx.db.selectFrom('card_tokens').select(['used_at', 'expires_at']).$call(inTenant(ctx)).where('id', '=', tokenId).executeTakeFirst()
      : undefined;
    const problem = !found
      ? 'no such card token in this environment'
      : found.used_at
        ? 'the card token was already used'
        : 'the card token expired (tokens last 10 minutes)';
    throw validationError({ card_token: [problem] });
  }
  const vault = await providerVault(ctx);
  const consent = requireConsent(ctx, vault, body.accept_terms);
  const insert = (db: Executor, saved: SavedCard | null) => insertTokenizedCard(db, ctx, cardId, customerId, token, body, saved, now, consent);
  if (!vault) return toCardResponse(await insert(ctx.db, null), now);
  // A token made before the connector kept cards has no provider token: the card must be entered again.
  if (!token.rail_token)
    throw validationError({ card_token: ['the card token was made before the payment provider kept cards: create a new token'] });
  const email = await customerEmail(ctx, customerId);
  // The provider's token is single-use: an unknown outcome spends it (503; create a new token).
  const row = await atProvider(
    ctx,
    cardId,
    async (acceptedAt) => vault.saveCard({ token: token.rail_token!, customerEmail: email, acceptedAt }),
    insert,
  );
  return toCardResponse(row, now);
}

function insertTokenizedCard(
  db: Executor,
  ctx: RequestContext,
  cardId: string,
  customerId: string,
  token: Selectable<CardTokensTable>,
  body: TokenizedCardBody,
  saved: SavedCard | null,
  now: Date,
  consent: ApiConsent | null,
): Promise<CardRow> {
  return db
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
      ...providerColumns(saved, consent),
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The provider's brand names (Wompi: VISA, MASTERCARD, AMEX...) as this API's brands; anything else is `unknown`. */
function providerBrand(raw: string): CardBrand {
  const name = raw
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '');
  const aliases: Record<string, CardBrand> = { americanexpress: 'amex', dinersclub: 'diners', master: 'mastercard' };
  const brand = aliases[name] ?? name;
  return (CARD_BRANDS as readonly string[]).includes(brand) ? (brand as CardBrand) : 'unknown';
}

/** A provider's single-use card token: what its tokenization answers (never a Recaudo tok_ token). */
const PROVIDER_TOKEN = /^[A-Za-z0-9_.-]{6,128}$/;

/**
 * A card the payer's browser tokenized at the provider itself (a connect link's page, docs/pages.md
 * "Connect-link page"): the provider's single-use token becomes the customer's card through the
 * same outside-call protocol and the same consent rule as POST /cards/tokenized (422 on
 * accept_terms in live without it). Recaudo never saw the number: the brand, the last four and the
 * expiry are what the provider's tokenization answered the browser (shown to the payer and the
 * company, never used to charge: the provider's payment source is), and the fingerprint is keyed
 * on them (equal for the same card; not told apart from another card of the same brand, last four
 * and expiry). Only where a connector keeps cards; there is no API route for it.
 */
export async function createCardFromProviderToken(ctx: RequestContext, input: ProviderTokenCardInput): Promise<CardResponse> {
  const now = ctx.deps.clock.now();
  const token = input.provider_token.trim();
  const last4 = input.last4.trim();
  const month = Number(input.exp_month);
  const year = Number(input.exp_year);
  const holder = holderName(input.holder_name);
  const errors: Record<string, string[]> = {};
  if (!PROVIDER_TOKEN.test(token)) errors.provider_token = ["is not a payment provider's card token"];
  if (!/^\d{4}$/.test(last4)) errors.last4 = ['must be the last four digits'];
  if (!Number.isInteger(month) || month < 1 || month > 12) errors.exp_month = ['must be 1 to 12'];
  if (!Number.isInteger(year) || year < 2000 || year > 2200) errors.exp_year = ['must be a four-digit year'];
  if (holder.length < 2 || holder.length > 100) errors.holder_name = ['must be 2 to 100 characters'];
  if (Object.keys(errors).length) throw validationError(errors);
  const expiry = year * 12 + (month - 1);
  if (expiry < bogotaMonth(now)) throw new ApiError('card_expired', { errors: { exp_year: ['the card has expired'] } });
  const vault = await providerVault(ctx);
  if (!vault) throw validationError({ provider_token: ['no payment provider keeps cards in this environment'] });
  const customerId = await requireCustomer(ctx, input.customer_id);
  const consent = requireConsent(ctx, vault, input.accept_terms);
  const asserted = consent && input.asserted_by ? { ...consent, asserted_by: input.asserted_by } : consent;
  const email = await customerEmail(ctx, customerId);
  const cardId = prefixedId('card', now.getTime());
  const brand = providerBrand(input.brand);
  const fingerprint = createHmac('sha256', ctx.deps.config.cardDataSecret)
    .update(`${ctx.companyId}\nprovider-card\n${brand}\n${last4}\n${month}/${year}`)
    .digest('hex')
    .slice(0, 32);
  // The provider's token is single-use: an unknown outcome spends it (503; the payer tokenizes again).
  const row = await atProvider(
    ctx,
    cardId,
    async (acceptedAt) => vault.saveCard({ token, customerEmail: email, acceptedAt }),
    (db, saved) =>
      db
        .insertInto('cards')
        .values({
          company_id: ctx.companyId,
          environment: ctx.environment,
          id: cardId,
          customer_id: customerId,
          brand,
          last4,
          exp_month: month,
          exp_year: year,
          holder_name: holder,
          fingerprint,
          authorization: input.authorization ?? false,
          // The sandbox's outcome class; a connector's charge never reads it.
          outcome_class: 'approved',
          source: 'token',
          ...providerColumns(saved, asserted),
          created_at: now,
          updated_at: now,
          deleted_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow(),
  );
  return toCardResponse(row, now);
}

/** The customer's saved cards, newest first (the payer session's payment methods). */
export async function cardsOfCustomer(db: Executor, scope: Tenant, customerId: string): Promise<CardRow[]> {
  return db
    .selectFrom('cards')
    .selectAll()
    .$call(inTenant(scope))
    .where('customer_id', '=', customerId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}
