import type { Selectable, Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import type { RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { isUuid, prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListEnvelope } from '../../platform/lists/lists.ts';
import { formatPesos, parseMinor, toPesos } from '../../platform/money.ts';
import { askRail, requestOrigin, runOutsideCall, settleAlone } from '../../platform/outside-call.ts';
import { inTenant, iso, loadInScope, type Tenant } from '../../platform/scope.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import type { IssueCardOutcome, IssueCardRequest } from '../../rails/index.ts';
import { loadCustomer } from '../customers/service.ts';
import { customerWalletBalance, postTransaction } from '../ledger/service.ts';
import { moneyLabel, recordWalletCardSpend } from '../wallets/service.ts';
import { ISSUING_CARD_MACHINE, type CardRouteAction, type IssuingCardAction } from './lifecycle.ts';
import {
  customerIssuingCardList,
  issuingCardList,
  type CreateIssuingCardBody,
  type IssuingAuthorizationResponse,
  type IssuingCardResponse,
  type TestAuthorizationBody,
} from './schemas.ts';
import { ISSUING_CARD_STATUSES, ISSUING_CARD_TYPES, type IssuingCardsTable, type IssuingCardStatus, type IssuingCardType } from './tables.ts';

/**
 * Issuing cards (docs/issuing.md): a card issued through the issuer rail for a customer, spending
 * from the customer's wallet. The issue call follows the outside-call protocol (the card recorded
 * `created` with its reconcile job, committed, the issuer called, its answer settled); block,
 * unblock and cancel change the status here (authorizations are answered from it) and a job tells
 * the issuer after commit.
 */

export type IssuingCardRow = Selectable<IssuingCardsTable>;

export const ISSUING_CARD_ID = /^icard_[0-9a-z]{26}$/;
export const ISSUING_RECONCILE_JOB = 'issuing.reconcile';
export const ISSUING_SYNC_JOB = 'issuing.sync_status';
/** An issue the issuer has not answered is asked again after this. */
const RECHECK_MS = 60_000;
const CURRENCY = 'COP';
const DEFAULT_MERCHANT = 'Comercio de prueba';

interface Holder {
  id: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
  document_type: string | null;
  document_number: string | null;
}

const isoOrNull = (d: Date | string | null) => (d === null ? null : iso(d));

function toResponse(row: IssuingCardRow, holder: Holder, wallet: bigint): IssuingCardResponse {
  const address = row.address as Record<string, string | null> | null;
  return {
    id: row.id,
    status: row.status,
    type: row.type,
    nickname: row.nickname,
    brand: row.brand,
    last_4: row.last_4,
    exp_month: row.exp_month,
    exp_year: row.exp_year,
    currency: CURRENCY,
    customer_id: row.customer_id,
    wallet_id: row.customer_id,
    wallet: { id: row.customer_id, balance: toPesos(wallet), label: moneyLabel(wallet) },
    customer: {
      id: holder.id,
      first_name: holder.first_name,
      last_name: holder.last_name,
      email: holder.email,
      phone: holder.phone,
      document_type: holder.document_type,
      document_number: holder.document_number,
    },
    address: address
      ? {
          line_1: address.line_1 ?? '',
          line_2: address.line_2 ?? null,
          city: address.city ?? '',
          state: address.state ?? null,
          country: address.country ?? 'CO',
          zip_code: address.zip_code ?? null,
        }
      : null,
    remarks: row.remarks,
    metadata: (row.metadata as Record<string, string> | null) ?? null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    activated_at: isoOrNull(row.activated_at),
    canceled_at: isoOrNull(row.canceled_at),
  };
}

/** The cards as the API shows them: each with its holder and the wallet's balance now (one read per holder). */
async function present(db: Executor, scope: Tenant, rows: IssuingCardRow[]): Promise<IssuingCardResponse[]> {
  const ids = [...new Set(rows.map((r) => r.customer_id))];
  if (!ids.length) return [];
  const holders = await db
    .selectFrom('customers')
    .select(['id', 'first_name', 'last_name', 'email', 'phone', 'document_type', 'document_number'])
    .$call(inTenant(scope))
    .where('id', 'in', ids)
    .execute();
  const byId = new Map(holders.map((h) => [h.id, h as Holder]));
  const wallets = new Map<string, bigint>();
  for (const id of ids) wallets.set(id, await customerWalletBalance(db, scope, id, CURRENCY));
  return rows.map((r) => toResponse(r, byId.get(r.customer_id)!, wallets.get(r.customer_id)!));
}

async function presentOne(db: Executor, scope: Tenant, row: IssuingCardRow): Promise<IssuingCardResponse> {
  return (await present(db, scope, [row]))[0]!;
}

const jobPayload = (row: Pick<IssuingCardRow, 'company_id' | 'environment' | 'id'>) => ({
  company_id: row.company_id,
  environment: row.environment,
  card_id: row.id,
});

function tenantOf(payload: Record<string, unknown>): Tenant {
  return { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
}

async function lockCard(trx: Transaction<DB>, scope: Tenant, id: string): Promise<IssuingCardRow | undefined> {
  if (!ISSUING_CARD_ID.test(id)) return undefined;
  return trx.selectFrom('issuing_cards').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** A card of the caller's company by id: absent → record_not_found, the other environment → environment_key_mismatch. */
async function loadCard(db: Executor, scope: Tenant, id: string): Promise<IssuingCardRow> {
  if (!ISSUING_CARD_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(scope, (scoped) => db.selectFrom('issuing_cards').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

async function lockForOperation(trx: Transaction<DB>, scope: Tenant, id: string): Promise<IssuingCardRow> {
  const row = await lockCard(trx, scope, id);
  if (row) return row;
  await loadCard(trx, scope, id);
  throw new ApiError('record_not_found');
}

/** THE one place a card changes status (on the platform's engine). */
async function transition(
  trx: Transaction<DB>,
  scope: ServiceScope,
  row: IssuingCardRow,
  action: IssuingCardAction,
  patch: Partial<IssuingCardRow> = {},
): Promise<IssuingCardRow> {
  const now = scope.deps.clock.now();
  const { row: updated } = await applyTransition(trx, scope, ISSUING_CARD_MACHINE, {
    table: 'issuing_cards',
    row,
    action,
    now,
    set: (t) => ({
      ...patch,
      ...(t.to === 'active' && action === 'activate' ? { activated_at: now } : {}),
      ...(t.to === 'canceled' ? { canceled_at: now } : {}),
    }),
  });
  return updated as IssuingCardRow;
}

function issueRequest(row: IssuingCardRow, holder: Holder): IssueCardRequest {
  const address = row.address as Record<string, string | null> | null;
  return {
    reference: row.id,
    type: row.type,
    holderName: [holder.first_name, holder.last_name].filter(Boolean).join(' '),
    holderDocumentType: holder.document_type,
    holderDocument: holder.document_number ?? '',
    address: address
      ? {
          line_1: address.line_1 ?? '',
          line_2: address.line_2 ?? null,
          city: address.city ?? '',
          state: address.state ?? null,
          country: address.country ?? 'CO',
          zip_code: address.zip_code ?? null,
        }
      : null,
  };
}

/**
 * The issuer's answer, saved in `trx`: issued → active with its last four digits, brand and
 * expiry; rejected → canceled with the reason; pending → asked again later. A card that is no
 * longer `created` is left as it is (an answer arriving twice settles once).
 */
export async function settleIssue(trx: Transaction<DB>, scope: ServiceScope, id: string, outcome: IssueCardOutcome): Promise<IssuingCardRow> {
  const row = (await lockCard(trx, scope, id))!;
  if (row.status !== 'created') return row;
  if (outcome.status === 'issued') {
    return transition(trx, scope, row, 'activate', {
      network_id: outcome.networkId,
      brand: outcome.brand,
      last_4: outcome.last4,
      exp_month: outcome.expMonth,
      exp_year: outcome.expYear,
    });
  }
  if (outcome.status === 'rejected') return transition(trx, scope, row, 'reject', { network_id: outcome.networkId, remarks: outcome.remarks });
  await scope.deps.jobs.enqueue(trx, ISSUING_RECONCILE_JOB, jobPayload(row), new Date(scope.deps.clock.now().getTime() + RECHECK_MS));
  return row;
}

/** POST /issuing/cards (docs/issuing.md). */
export async function createIssuingCard(ctx: RequestContext, body: CreateIssuingCardBody): Promise<IssuingCardResponse> {
  // The rail first: a live key without an issuer connector is refused before anything is recorded.
  await ctx.deps.rails.money(ctx, 'issuer');
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const holder = await ctx.db
    .selectFrom('customers')
    .select(['id', 'first_name', 'last_name', 'email', 'phone', 'document_type', 'document_number'])
    .$call(inTenant(ctx))
    .where('id', '=', body.customer_id.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!holder) add('customer_id', 'no such customer in this environment');
  else if (!holder.document_number) add('customer_id', 'the customer needs a document number to hold a card (the issuer checks the holder)');
  if (body.wallet_id != null && body.wallet_id.toLowerCase() !== body.customer_id.toLowerCase())
    add('wallet_id', "must be the customer's wallet, whose id is the customer id");
  const type: IssuingCardType = body.type ?? 'virtual';
  if (type === 'physical' && !body.address) add('address', 'is required for a physical card (where it is sent)');
  const metadata = normalizeMetadata(body.metadata);
  if (Object.keys(errors).length) throw validationError(errors);
  const address = body.address
    ? {
        line_1: body.address.line_1,
        line_2: body.address.line_2 ?? null,
        city: body.address.city,
        state: body.address.state ?? null,
        country: body.address.country ?? 'CO',
        zip_code: body.address.zip_code ?? null,
      }
    : null;
  const row = await runOutsideCall(requestOrigin(ctx), {
    rail: 'issuer',
    record: async (trx) => {
      const now = ctx.deps.clock.now();
      const scope: ServiceScope = { ...ctx, db: trx };
      const card = await insertWithTransition<IssuingCardRow>(trx, scope, ISSUING_CARD_MACHINE, {
        table: 'issuing_cards',
        action: 'create',
        values: {
          id: prefixedId('icard', now.getTime()),
          customer_id: holder!.id,
          type,
          nickname: body.nickname ?? null,
          address: address ? JSON.stringify(address) : null,
          brand: null,
          last_4: null,
          exp_month: null,
          exp_year: null,
          network_id: null,
          remarks: null,
          metadata: metadata ? JSON.stringify(metadata) : null,
          created_at: now,
          updated_at: now,
        },
      });
      const safetyJobId = await ctx.deps.jobs.enqueue(
        trx,
        ISSUING_RECONCILE_JOB,
        jobPayload(card),
        new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs),
      );
      return { recorded: card, resourceId: card.id, safetyJobId };
    },
    call: async (card) => {
      const rail = await ctx.deps.rails.money({ companyId: ctx.companyId, environment: ctx.environment, db: ctx.deps.database.db }, 'issuer');
      return rail.issue(issueRequest(card, holder!));
    },
    settle: (trx, card, outcome) => settleIssue(trx, { ...ctx, db: trx }, card.id, outcome),
    // Not known: the card stays `created`; the reconcile job asks the issuer again (same reference).
    unknown: (card) => card,
    lost: () =>
      new ApiError('service_unavailable', {
        message:
          'The card was recorded and sent to the issuer; saving its answer was not confirmed. Read it (GET /v1/issuing/cards) before retrying.',
      }),
  });
  // The request's transaction committed with the record: read on the pool.
  return presentOne(ctx.deps.database.db, ctx, row);
}

/** A retried key whose run recorded the card and died: the card as it is now. */
export const recoverIssuingCard: RecoverResource = async (req, id) => {
  const db = req.ctx.deps.database.db;
  const row = ISSUING_CARD_ID.test(id)
    ? await db.selectFrom('issuing_cards').selectAll().$call(inTenant(req.ctx)).where('id', '=', id).executeTakeFirst()
    : undefined;
  return row ? presentOne(db, req.ctx, row) : null;
};

export async function getIssuingCard(ctx: RequestContext, id: string): Promise<IssuingCardResponse> {
  return presentOne(ctx.db, ctx, await loadCard(ctx.db, ctx, id));
}

async function presentPage(ctx: RequestContext, page: ListEnvelope<IssuingCardRow>): Promise<ListEnvelope<IssuingCardResponse>> {
  return { ...page, data: await present(ctx.db, ctx, page.data) };
}

function filtered(ctx: RequestContext, f: Partial<Record<'id' | 'status' | 'customer_id' | 'type', string>>) {
  let q = ctx.db.selectFrom('issuing_cards').selectAll().$call(inTenant(ctx));
  const never = (ok: boolean) => (ok ? q : q.where('id', '=', ''));
  if (f.id !== undefined) q = never(ISSUING_CARD_ID.test(f.id)).where('id', '=', f.id);
  if (f.status !== undefined)
    q = never((ISSUING_CARD_STATUSES as readonly string[]).includes(f.status)).where('status', '=', f.status as IssuingCardStatus);
  if (f.type !== undefined) q = never((ISSUING_CARD_TYPES as readonly string[]).includes(f.type)).where('type', '=', f.type as IssuingCardType);
  if (f.customer_id !== undefined) q = isUuid(f.customer_id) ? q.where('customer_id', '=', f.customer_id.toLowerCase()) : q.where('id', '=', '');
  return q;
}

/** GET /issuing/cards: filters id, status, customer_id, type; sort created_at. An invalid filter value is an empty list. */
export async function listIssuingCards(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(issuingCardList, query);
  return presentPage(ctx, await paginate(filtered(ctx, list.filters), list, { path, query, table: 'issuing_cards', map: (r) => r }));
}

/** GET /customers/{id}/issuing-cards: the customer's cards (404 for a customer that is not reachable). */
export async function listCustomerIssuingCards(ctx: RequestContext, customerId: string, query: Record<string, unknown>, path: string) {
  const customer = await loadCustomer(ctx, customerId);
  const list = parseListQuery(customerIssuingCardList, query);
  const q = filtered(ctx, { ...list.filters, customer_id: customer.id });
  return presentPage(ctx, await paginate(q, list, { path, query, table: 'issuing_cards', map: (r) => r }));
}

/**
 * POST /issuing/cards/{id}/block|unblock|cancel: active ↔ blocked, active or blocked → canceled
 * (final). Anything else is 422 issuing_card_transition_not_allowed. The status is Recaudo's
 * (authorizations are answered from it) from the commit on; the `issuing.sync_status` job tells the
 * issuer after commit.
 */
export async function changeIssuingCardStatus(ctx: RequestContext, id: string, action: CardRouteAction): Promise<IssuingCardResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx };
    const row = await lockForOperation(trx, ctx, id);
    if (!ISSUING_CARD_MACHINE.find(row.status, action)) {
      const from = ISSUING_CARD_MACHINE.sources(action).filter((s) => s !== null);
      throw new ApiError('issuing_card_transition_not_allowed', {
        message: `The card is ${row.status}; ${action} applies to ${from.join(' or ')} cards.`,
      });
    }
    const updated = await transition(trx, scope, row, action);
    await ctx.deps.jobs.enqueue(trx, ISSUING_SYNC_JOB, jobPayload(updated));
    return presentOne(trx, ctx, updated);
  });
}

/**
 * POST /issuing/cards/{id}/test-authorizations (test cards, test keys): a spend at a merchant as
 * the card network would ask for it, approved at once — the amount leaves the customer's wallet
 * through the ledger (`payout` from the customer_wallet, source the authorization) and shows in
 * the wallet's movements, in one transaction. A card not active is 422 issuing_card_not_active, a
 * wallet short of the amount 422 10501 insufficient_funds; neither records anything. The card is
 * looked up first (404 record_not_found / environment_key_mismatch), then a live card with a live
 * key is 403 test_only, as in the other test-only actions.
 */
export async function createTestAuthorization(ctx: RequestContext, id: string, body: TestAuthorizationBody): Promise<IssuingAuthorizationResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx };
    // The card first, as every test-only action (POST /charges/{id}/resolve…): unknown → 404
    // record_not_found, the other environment's → 404 environment_key_mismatch; only a live card
    // with a live key is 403 test_only.
    const card = await lockForOperation(trx, ctx, id);
    if (!ctx.isTest || card.environment !== 'test')
      throw new ApiError('test_only', { message: 'Test authorizations are only for test cards, with a test key.' });
    const amount = parseMinor(body.amount);
    if (amount === null || amount <= 0n) throw validationError({ amount: ['must be an amount in pesos greater than 0, with at most 2 decimals'] });
    if (card.status !== 'active') {
      throw new ApiError('issuing_card_not_active', { message: `The card is ${card.status}; only an active card can be used.` });
    }
    const now = ctx.deps.clock.now();
    const authorizationId = prefixedId('iauth', now.getTime());
    const merchant = body.merchant_name ?? DEFAULT_MERCHANT;
    let posted;
    try {
      posted = await postTransaction(trx, scope, {
        kind: 'payout',
        currency: CURRENCY,
        source: { type: 'issuing_authorization', id: authorizationId },
        entries: [
          { account: { kind: 'customer_wallet', holder: card.customer_id }, amount: -amount },
          { account: { kind: 'external_clearing' }, amount },
        ],
      });
    } catch (error) {
      if (error instanceof ApiError && error.def.codeName === 'insufficient_balance') {
        throw new ApiError('insufficient_funds', {
          message: `The customer's wallet does not cover ${formatPesos(amount, CURRENCY)}; the authorization is declined and nothing was recorded.`,
        });
      }
      throw error;
    }
    const row = await trx
      .insertInto('issuing_authorizations')
      .values({
        company_id: ctx.companyId,
        environment: ctx.environment,
        id: authorizationId,
        card_id: card.id,
        customer_id: card.customer_id,
        amount,
        currency: CURRENCY,
        merchant_name: merchant,
        ledger_transaction_id: posted.id,
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordWalletCardSpend(trx, scope, {
      customerId: card.customer_id,
      amount,
      currency: CURRENCY,
      authorizationId,
      concept: `Compra con tarjeta •••• ${card.last_4} en ${merchant}`.slice(0, 255),
      ledgerTransactionId: posted.id,
    });
    const wallet = await customerWalletBalance(trx, ctx, card.customer_id, CURRENCY);
    return {
      id: row.id,
      card_id: row.card_id,
      customer_id: row.customer_id,
      amount: toPesos(BigInt(row.amount)),
      currency: row.currency,
      merchant_name: row.merchant_name,
      approved: true as const,
      wallet: { id: card.customer_id, balance: toPesos(wallet), label: moneyLabel(wallet) },
      is_test: true,
      created_at: iso(row.created_at),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Jobs

/** The reconciler: asks the issuer where a `created` card stands (the same reference: never a second card). */
export async function runIssuingReconcile(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const db = deps.database.db;
  const row = await db.selectFrom('issuing_cards').selectAll().$call(inTenant(tenant)).where('id', '=', String(payload.card_id)).executeTakeFirst();
  if (!row || row.status !== 'created') return;
  const holder = await db
    .selectFrom('customers')
    .select(['id', 'first_name', 'last_name', 'email', 'phone', 'document_type', 'document_number'])
    .$call(inTenant(tenant))
    .where('id', '=', row.customer_id)
    .executeTakeFirstOrThrow();
  const rail = await deps.rails.money(tenant, 'issuer');
  const outcome = await askRail(deps, 'issuer', () => rail.issue(issueRequest(row, holder)));
  await settleAlone(deps, tenant, (trx, scope) => settleIssue(trx, scope, row.id, outcome));
}

/** Tells the issuer the card's status as it is now (idempotent; later changes send their own job). */
export async function runIssuingSync(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const row = await deps.database.db
    .selectFrom('issuing_cards')
    .selectAll()
    .$call(inTenant(tenant))
    .where('id', '=', String(payload.card_id))
    .executeTakeFirst();
  if (!row || row.status === 'created') return;
  const rail = await deps.rails.money(tenant, 'issuer');
  await askRail(deps, 'issuer', () =>
    rail.setStatus({ reference: row.id, networkId: row.network_id ?? '', status: row.status as 'active' | 'blocked' | 'canceled' }),
  );
}

export function registerIssuingJobs(deps: AppDeps): void {
  deps.jobs.register(ISSUING_RECONCILE_JOB, (payload) => runIssuingReconcile(deps, payload));
  deps.jobs.register(ISSUING_SYNC_JOB, (payload) => runIssuingSync(deps, payload));
}
