import type { Selectable, Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import type { RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, paginateItems, parseListQuery } from '../../platform/lists/lists.ts';
import { formatPesos, toPesos } from '../../platform/money.ts';
import { askRail, jobOrigin, requestOrigin, runOutsideCall, settleAlone, type CallOrigin } from '../../platform/outside-call.ts';
import { inTenant, iso, loadInScope, type Tenant } from '../../platform/scope.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import type { Bill, BillerPort, BillerProvider, BillInquiry, BillPaymentOutcome } from '../../rails/index.ts';
import { holdPayout, postPayout, releaseHold } from '../ledger/service.ts';
import { PAYMENT_MACHINE } from '../payments/lifecycle.ts';
import { paymentLink } from '../payments/present.ts';
import { createPaymentIn } from '../payments/service.ts';
import { UTILITY_MACHINE, type UtilityAction } from './lifecycle.ts';
import {
  BILL_REFERENCE,
  LINK_DEFAULT_MINUTES,
  providerList,
  utilityList,
  type BillResponse,
  type CreatePaymentLinkBody,
  type CreateUtilityBody,
  type PaymentLinkResponse,
  type ProviderResponse,
  type UtilityResponse,
} from './schemas.ts';
import { UTILITY_STATUSES, type UtilitiesTable, type UtilityStatus } from './tables.ts';

/**
 * Utilities, bill payments (docs/utilities.md): a company pays a bill of a biller (energy, water,
 * gas, telecom…) from its available balance through the biller rail. The payment is recorded with
 * its hold and a reconcile job, committed, sent to the biller outside any transaction and settled
 * (paid: the held money leaves; rejected: it is released) — the outside-call protocol. A utility
 * payment link lets a payer pay the bill through a payment (source `utility`), and the bill is paid
 * once that payment is approved.
 */

export type UtilityRow = Selectable<UtilitiesTable>;

export const UTILITY_ID = /^util_[0-9a-z]{26}$/;
export const UTILITY_RECONCILE_JOB = 'utilities.reconcile';
export const UTILITY_LINK_JOB = 'utilities.pay_link';
/** A biller payment still pending without a time to ask again is asked every hour. */
const RECHECK_MS = 3_600_000;
const CURRENCY = 'COP';
const MINUTE = 60_000;

const isoOrNull = (d: Date | string | null) => (d === null ? null : iso(d));

export function toUtilityResponse(row: UtilityRow): UtilityResponse {
  return {
    id: row.id,
    status: row.status,
    provider_id: row.provider_id,
    provider_name: row.provider_name,
    reference: row.reference,
    amount: toPesos(BigInt(row.amount)),
    currency: row.currency,
    due_date: row.due_date === null ? null : typeof row.due_date === 'string' ? row.due_date.slice(0, 10) : iso(row.due_date).slice(0, 10),
    holder_name: row.holder_name,
    remarks: row.remarks,
    network_id: row.network_id,
    payment_id: row.payment_id,
    link_id: row.link_id,
    metadata: (row.metadata as Record<string, string> | null) ?? null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    processed_at: isoOrNull(row.processed_at),
    paid_at: isoOrNull(row.paid_at),
    rejected_at: isoOrNull(row.rejected_at),
  };
}

const toProvider = (p: BillerProvider): ProviderResponse => ({ id: p.id, name: p.name, category: p.category, help_text: p.helpText });

/** A read at the biller (outside any transaction, bounded by the rail deadline); no answer in time is a 503, nothing changed. */
async function askBiller<T>(deps: AppDeps, ask: () => Promise<T>): Promise<T> {
  try {
    return await askRail(deps, 'biller', ask);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    deps.logger.warn({ rail: 'biller', err: (error as Error)?.message }, 'biller read without an answer');
    throw new ApiError('service_unavailable', { message: 'The biller did not answer in time; nothing was changed. Retry shortly.' });
  }
}

/** GET /utilities/providers: the biller's providers (list envelope; filter[category]). Live without a biller: 10900. */
export async function listProviders(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(providerList, query);
  const rail = await ctx.deps.rails.money(ctx, 'biller');
  const providers = (await askBiller(ctx.deps, () => rail.providers())).map(toProvider);
  const category = list.filters.category;
  return paginateItems(category === undefined ? providers : providers.filter((p) => p.category === category), list, { path, query });
}

function toBill(bill: Bill, provider: BillerProvider, isTest: boolean): BillResponse {
  return {
    provider_id: provider.id,
    provider_name: provider.name,
    reference: bill.reference,
    status: bill.paid ? 'paid' : 'unpaid',
    amount: toPesos(bill.amount),
    currency: 'COP',
    due_date: bill.dueDate,
    holder_name: bill.holderName,
    is_test: isTest,
  };
}

/** What the biller says about a bill before anything is recorded (route preValidation: no transaction is open). */
export interface BillLookup {
  provider: BillerProvider | null;
  inquiry: BillInquiry | null;
}

/** Asks the biller for the provider and the bill; nothing is decided here (the handler decides, after the idempotency claim). */
export async function lookUpBill(ctx: RequestContext, providerId: string, reference: string): Promise<BillLookup> {
  const rail: BillerPort = await ctx.deps.rails.money(ctx, 'biller');
  const provider = (await askBiller(ctx.deps, () => rail.providers())).find((p) => p.id === providerId) ?? null;
  if (!provider) return { provider, inquiry: null };
  return { provider, inquiry: await askBiller(ctx.deps, () => rail.inquire(provider.id, reference)) };
}

/** The bill a lookup found, or the coded refusal: unknown provider 422, no bill 404 (11200), paid already 422 (11201). */
function payableBill(lookup: BillLookup | undefined, reference: string, allowPaid = false): { provider: BillerProvider; bill: Bill } {
  if (!lookup?.provider) throw validationError({ provider_id: ['no such provider (GET /v1/utilities/providers)'] });
  if (!lookup.inquiry || lookup.inquiry.status === 'not_found')
    throw new ApiError('utility_bill_not_found', { message: `${lookup.provider.name} has no bill with reference ${reference}.` });
  if (lookup.inquiry.bill.paid && !allowPaid)
    throw new ApiError('utility_bill_already_paid', {
      message: `The bill ${reference} of ${lookup.provider.name} is already paid; nothing was created.`,
    });
  return { provider: lookup.provider, bill: lookup.inquiry.bill };
}

/** GET /utilities/providers/{id}/bills/{reference}: the bill as the biller has it (paid or not). */
export async function inquireBill(ctx: RequestContext, providerId: string, reference: string): Promise<BillResponse> {
  // A reference no bill can have (the format of POST /utilities) is answered as missing without asking the biller.
  if (!BILL_REFERENCE.test(reference))
    throw new ApiError('utility_bill_not_found', { message: 'No bill has this reference (4 to 30 letters, digits or dashes).' });
  const lookup = await lookUpBill(ctx, providerId, reference);
  if (!lookup.provider) throw new ApiError('record_not_found', { message: 'No such provider (GET /v1/utilities/providers).' });
  const { provider, bill } = payableBill(lookup, reference, true);
  return toBill(bill, provider, ctx.isTest);
}

const ledgerSource = (row: Pick<UtilityRow, 'id'>) => ({ type: 'utility', id: row.id });
const jobPayload = (row: Pick<UtilityRow, 'company_id' | 'environment' | 'id'>) => ({
  company_id: row.company_id,
  environment: row.environment,
  utility_id: row.id,
});

function tenantOf(payload: Record<string, unknown>): Tenant {
  return { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
}

async function lockUtility(trx: Transaction<DB>, scope: Tenant, id: string): Promise<UtilityRow | undefined> {
  if (!UTILITY_ID.test(id)) return undefined;
  return trx.selectFrom('utilities').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** THE one place a utility changes status, with what the status does to the held money. */
async function transition(trx: Transaction<DB>, scope: ServiceScope, row: UtilityRow, action: UtilityAction, patch: Partial<UtilityRow> = {}) {
  const now = scope.deps.clock.now();
  const { row: updated } = await applyTransition(trx, scope, UTILITY_MACHINE, {
    table: 'utilities',
    row,
    action,
    now,
    set: (t) => ({
      ...patch,
      ...(t.to === 'processing' ? { processed_at: now } : {}),
      ...(t.to === 'paid' ? { paid_at: now, processed_at: row.processed_at ?? now } : {}),
      ...(t.to === 'rejected' ? { rejected_at: now } : {}),
    }),
    present: (r) => toUtilityResponse(r as UtilityRow),
  });
  const money = { currency: updated.currency, amount: BigInt(updated.amount), source: ledgerSource(updated) };
  if (action === 'pay') await postPayout(trx, scope, money);
  if (action === 'reject') await releaseHold(trx, scope, { ...money, to: { kind: 'company_available' } });
  return updated as UtilityRow;
}

/**
 * The biller's answer, saved (in `trx`): paid → the held money leaves (utility.paid); rejected →
 * it returns to the balance (utility.rejected); pending → processing, asked again at `settleAt`. A
 * final utility is left as it is (an answer arriving twice settles once).
 */
export async function settleBillPayment(trx: Transaction<DB>, scope: ServiceScope, id: string, outcome: BillPaymentOutcome): Promise<UtilityRow> {
  let row = (await lockUtility(trx, scope, id))!;
  if (row.status !== 'created' && row.status !== 'processing') return row;
  if (outcome.status === 'paid') return transition(trx, scope, row, 'pay', { network_id: outcome.networkId });
  if (outcome.status === 'rejected') return transition(trx, scope, row, 'reject', { network_id: outcome.networkId, remarks: outcome.remarks });
  if (row.status === 'created') row = await transition(trx, scope, row, 'submit', { network_id: outcome.networkId });
  const at = outcome.settleAt ?? new Date(scope.deps.clock.now().getTime() + RECHECK_MS);
  await scope.deps.jobs.enqueue(trx, UTILITY_RECONCILE_JOB, jobPayload(row), at);
  return row;
}

interface NewUtility {
  providerId: string;
  providerName: string;
  reference: string;
  /** Minor units. */
  amount: bigint;
  dueDate: string | null;
  holderName: string | null;
  metadata: Record<string, string> | undefined;
  paymentId: string | null;
  linkId: string | null;
}

const fromBill = (provider: BillerProvider, bill: Bill) => ({
  providerId: provider.id,
  providerName: provider.name,
  reference: bill.reference,
  amount: bill.amount,
  dueDate: bill.dueDate,
  holderName: bill.holderName,
});

/** Another payment of this bill, in flight (409 11202) or paid (422 11201); null when none. */
async function billTaken(db: ServiceScope['db'], scope: Tenant, providerId: string, reference: string): Promise<ApiError | null> {
  const other = await db
    .selectFrom('utilities')
    .select(['id', 'status'])
    .$call(inTenant(scope))
    .where('provider_id', '=', providerId)
    .where('reference', '=', reference)
    .where('status', '!=', 'rejected')
    .executeTakeFirst();
  if (!other) return null;
  return other.status === 'paid'
    ? new ApiError('utility_bill_already_paid', {
        message: `The bill ${reference} was paid by utility ${other.id}.`,
        extra: { utility_id: other.id },
      })
    : new ApiError('utility_in_progress', { message: `Utility ${other.id} is paying the bill ${reference} now.`, extra: { utility_id: other.id } });
}

function values(input: NewUtility, now: Date) {
  return {
    id: prefixedId('util', now.getTime()),
    provider_id: input.providerId,
    provider_name: input.providerName,
    reference: input.reference,
    amount: input.amount,
    currency: CURRENCY,
    due_date: input.dueDate,
    holder_name: input.holderName,
    payment_id: input.paymentId,
    link_id: input.linkId,
    metadata: input.metadata ? JSON.stringify(input.metadata) : null,
    remarks: null,
    network_id: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Records a bill payment in `trx`: the row, the hold of its amount from the available balance
 * (short: insufficient_funds, nothing written) and its reconcile job (the safety job of the call).
 */
async function recordUtility(trx: Transaction<DB>, scope: ServiceScope, input: NewUtility) {
  const taken = await billTaken(trx, scope, input.providerId, input.reference);
  if (taken) throw taken;
  const now = scope.deps.clock.now();
  let row: UtilityRow;
  try {
    row = await insertWithTransition<UtilityRow>(trx, scope, UTILITY_MACHINE, { table: 'utilities', action: 'create', values: values(input, now) });
  } catch (error) {
    // Two payments of one bill at once: the unique index lets one through.
    if (/utilities_one_per_bill/.test(String((error as Error)?.message))) {
      throw new ApiError('utility_in_progress', { message: `Another payment of the bill ${input.reference} is in progress.` });
    }
    throw error;
  }
  try {
    await holdPayout(trx, scope, { currency: CURRENCY, amount: input.amount, source: ledgerSource(row), from: { kind: 'company_available' } });
  } catch (error) {
    if (error instanceof ApiError && error.def.codeName === 'insufficient_balance') {
      throw new ApiError('insufficient_funds', {
        message: `The available balance does not cover this bill of ${formatPesos(input.amount, CURRENCY)}; nothing was created.`,
      });
    }
    throw error;
  }
  const safetyJobId = await scope.deps.jobs.enqueue(
    trx,
    UTILITY_RECONCILE_JOB,
    jobPayload(row),
    new Date(now.getTime() + scope.deps.config.chargeReconcileDelayMs),
  );
  return { row, safetyJobId };
}

/** Sends a recorded bill payment (or answers one recorded rejected) with the outside-call protocol. */
function payRecorded(
  origin: CallOrigin,
  scope: Omit<ServiceScope, 'db'>,
  record: (trx: Transaction<DB>) => Promise<{ row: UtilityRow; safetyJobId: string | null }>,
): Promise<UtilityRow> {
  return runOutsideCall(origin, {
    rail: 'biller',
    record: async (trx) => {
      const { row, safetyJobId } = await record(trx);
      return { recorded: row, resourceId: row.id, safetyJobId };
    },
    call: async (row) => {
      if (row.status !== 'created') return null;
      // After the commit: connector settings are read on the pool, named here.
      const rail = await scope.deps.rails.money({ companyId: scope.companyId, environment: scope.environment, db: scope.deps.database.db }, 'biller');
      return rail.pay(payRequest(row));
    },
    settle: async (trx, row, outcome) => (outcome ? settleBillPayment(trx, { ...scope, db: trx }, row.id, outcome) : row),
    // Not known: the utility stays as recorded (its money held); the reconcile job asks the biller again.
    unknown: (row) => row,
    lost: () =>
      new ApiError('service_unavailable', {
        message: 'The bill payment was recorded and sent; saving its answer was not confirmed. Read it (GET /v1/utilities) before retrying.',
      }),
  });
}

function payRequest(row: UtilityRow) {
  return {
    reference: row.id,
    providerId: row.provider_id,
    billReference: row.reference,
    amount: BigInt(row.amount),
    currency: 'COP' as const,
    submittedAt: new Date(row.processed_at ?? row.created_at),
  };
}

/**
 * POST /utilities (docs/utilities.md): `lookup` is what the biller answered before the request's
 * transaction opened (route preValidation). After the idempotency claim: the coded refusals, then
 * the bill payment recorded, committed, sent and settled.
 */
export async function createUtility(ctx: RequestContext, body: CreateUtilityBody, lookup: BillLookup | undefined): Promise<UtilityResponse> {
  const metadata = normalizeMetadata(body.metadata);
  const { provider, bill } = payableBill(lookup, body.reference);
  const row = await payRecorded(requestOrigin(ctx), ctx, (trx) =>
    recordUtility(trx, { ...ctx, db: trx }, { ...fromBill(provider, bill), metadata, paymentId: null, linkId: null }),
  );
  return toUtilityResponse(row);
}

/** A retried key whose run recorded the bill payment and died: the utility as it is now. */
export const recoverUtility: RecoverResource = async (req, id) => {
  const row = UTILITY_ID.test(id)
    ? await req.ctx.deps.database.db.selectFrom('utilities').selectAll().$call(inTenant(req.ctx)).where('id', '=', id).executeTakeFirst()
    : undefined;
  return row ? toUtilityResponse(row) : null;
};

export async function getUtility(ctx: RequestContext, id: string): Promise<UtilityResponse> {
  if (!UTILITY_ID.test(id)) throw new ApiError('record_not_found');
  return toUtilityResponse(
    await loadInScope(ctx, (scoped) => ctx.db.selectFrom('utilities').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst()),
  );
}

/** GET /utilities: filters id, status, provider_id, reference, payment_id; sort created_at. */
export async function listUtilities(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(utilityList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('utilities').selectAll().$call(inTenant(ctx));
  const never = (ok: boolean) => (ok ? q : q.where('id', '=', ''));
  if (f.id !== undefined) q = never(UTILITY_ID.test(f.id)).where('id', '=', f.id);
  if (f.status !== undefined) q = never((UTILITY_STATUSES as readonly string[]).includes(f.status)).where('status', '=', f.status as UtilityStatus);
  if (f.provider_id !== undefined) q = q.where('provider_id', '=', f.provider_id);
  if (f.reference !== undefined) q = q.where('reference', '=', f.reference);
  if (f.payment_id !== undefined) q = q.where('payment_id', '=', f.payment_id);
  return paginate(q, list, { path, query, table: 'utilities', map: toUtilityResponse });
}

// ---------------------------------------------------------------------------------------------
// Utility payment links: a payer pays the bill through a payment (source `utility`)

/**
 * POST /utilities/payment-links: a payment of the bill's amount (source `utility`, which cannot be
 * cancelled: 15001) sent to the payer by phone or e-mail, and the link row, in the request's
 * transaction. Once the payment is approved the bill is paid from the balance it fed (job
 * `utilities.pay_link`).
 */
export async function createUtilityPaymentLink(
  ctx: RequestContext,
  body: CreatePaymentLinkBody,
  lookup: BillLookup | undefined,
): Promise<PaymentLinkResponse> {
  const { provider, bill } = payableBill(lookup, body.reference);
  const taken = await billTaken(ctx.db, ctx, provider.id, bill.reference);
  if (taken) throw taken;
  const now = ctx.deps.clock.now();
  const expiresAt = new Date(now.getTime() + (body.expiration_minutes ?? LINK_DEFAULT_MINUTES) * MINUTE);
  const id = prefixedId('ulink', now.getTime());
  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx };
    const payment = await createPaymentIn(
      trx,
      scope,
      {
        title: `${provider.name} — factura ${bill.reference}`.slice(0, 255),
        description: `Pago de la factura ${bill.reference} de ${provider.name}`.slice(0, 2000),
        amount: toPesos(bill.amount),
        currency: 'COP',
        reference: bill.reference.length >= 6 ? bill.reference : null,
        external_id: id,
        phone: body.phone ?? null,
        email: body.email ?? null,
        expires_at: expiresAt.toISOString(),
      },
      undefined,
      { source: 'utility' },
    );
    await trx
      .insertInto('utility_payment_links')
      .values({
        company_id: ctx.companyId,
        environment: ctx.environment,
        id,
        provider_id: provider.id,
        provider_name: provider.name,
        reference: bill.reference,
        amount: bill.amount,
        payment_id: payment.id,
        created_at: now,
      })
      .execute();
    return {
      id,
      url: paymentLink(ctx.deps.config.baseUrl, payment.id),
      payment_id: payment.id,
      provider_id: provider.id,
      provider_name: provider.name,
      reference: bill.reference,
      amount: toPesos(bill.amount),
      expires_at: expiresAt.toISOString(),
      is_test: ctx.isTest,
      created_at: now.toISOString(),
    };
  });
}

/** The payment of a utility payment link was approved (in its transaction): the bill is paid by a job after commit. */
async function followPayment(trx: Transaction<DB>, scope: ServiceScope, payment: { id: string; source: string }, action: string) {
  if (payment.source !== 'utility' || action !== 'attempt_approved') return;
  const link = await trx
    .selectFrom('utility_payment_links')
    .select('id')
    .$call(inTenant(scope))
    .where('payment_id', '=', payment.id)
    .executeTakeFirst();
  if (link) await scope.deps.jobs.enqueue(trx, UTILITY_LINK_JOB, { company_id: scope.companyId, environment: scope.environment, link_id: link.id });
}

/**
 * Pays the bill of an approved utility payment link, once (one utility per link). When it cannot be
 * held — the balance no longer covers it, or another payment of the bill is in flight or paid — the
 * utility is recorded `rejected` at once (INSUFFICIENT_FUNDS, BILL_ALREADY_PAID,
 * BILL_PAYMENT_IN_PROGRESS) so the company hears utility.rejected; the payer's money stays in the
 * balance (refund the payment if the bill will not be paid).
 */
export async function runPayLink(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const db = deps.database.db;
  const link = await db
    .selectFrom('utility_payment_links')
    .selectAll()
    .$call(inTenant(tenant))
    .where('id', '=', String(payload.link_id))
    .executeTakeFirst();
  if (!link) return;
  if (await db.selectFrom('utilities').select('id').$call(inTenant(tenant)).where('link_id', '=', link.id).executeTakeFirst()) return;
  const scope = { ...tenant, deps };
  const input: NewUtility = {
    providerId: link.provider_id,
    providerName: link.provider_name,
    reference: link.reference,
    amount: BigInt(link.amount),
    dueDate: null,
    holderName: null,
    metadata: undefined,
    paymentId: link.payment_id,
    linkId: link.id,
  };
  try {
    await payRecorded(jobOrigin(deps), scope, (trx) => recordUtility(trx, { ...scope, db: trx }, input));
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const remarks =
      error.def.codeName === 'insufficient_funds'
        ? 'INSUFFICIENT_FUNDS'
        : error.def.codeName === 'utility_bill_already_paid'
          ? 'BILL_ALREADY_PAID'
          : error.def.codeName === 'utility_in_progress'
            ? 'BILL_PAYMENT_IN_PROGRESS'
            : null;
    if (!remarks) throw error;
    await settleAlone(deps, tenant, async (trx, s) => {
      const now = deps.clock.now();
      const again = await trx.selectFrom('utilities').select('id').$call(inTenant(tenant)).where('link_id', '=', link.id).executeTakeFirst();
      if (again) return;
      await insertWithTransition<UtilityRow>(trx, s, UTILITY_MACHINE, {
        table: 'utilities',
        action: 'create_rejected',
        values: { ...values(input, now), remarks, rejected_at: now },
        present: (r) => toUtilityResponse(r),
      });
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Jobs

/** The reconciler: asks the biller where a created or processing bill payment stands (the same reference: never paid twice). */
export async function runUtilityReconcile(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = tenantOf(payload);
  const row = await deps.database.db
    .selectFrom('utilities')
    .selectAll()
    .$call(inTenant(tenant))
    .where('id', '=', String(payload.utility_id))
    .executeTakeFirst();
  if (!row || (row.status !== 'created' && row.status !== 'processing')) return;
  const rail = await deps.rails.money(tenant, 'biller');
  const outcome = await askRail(deps, 'biller', () => rail.pay(payRequest(row)));
  await settleAlone(deps, tenant, (trx, scope) => settleBillPayment(trx, scope, row.id, outcome));
}

export function registerUtilityJobs(deps: AppDeps): void {
  deps.jobs.register(UTILITY_RECONCILE_JOB, (payload) => runUtilityReconcile(deps, payload));
  deps.jobs.register(UTILITY_LINK_JOB, (payload) => runPayLink(deps, payload));
  deps.transitions.on(PAYMENT_MACHINE, (trx, scope, payment, t) => followPayment(trx, scope, payment, t.action));
}
