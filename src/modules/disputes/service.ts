import type { Selectable, Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { parseMinor, toPesos, type Currency } from '../../platform/money.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { inTenant, iso, loadInScope, type Tenant } from '../../platform/scope.ts';
import type { DisputeClosing, DisputeOutcome, DisputeReason, DisputeReport, DisputeReporting } from '../../rails/disputes.ts';
import { chargeDisputeRail, lockDisputableCharge, markChargeDisputed } from '../charges/disputes.ts';
import { CONNECTOR_HANDLED } from '../charges/rails.ts';
import { loadCharge } from '../charges/queries.ts';
import { holdPayout, postPayout, releaseHold } from '../ledger/service.ts';
import {
  closePaymentDispute,
  disputableAttempt,
  intentDisputeRail,
  lockPaymentForDispute,
  markPaymentDisputed,
  paymentOfIntent,
} from '../payments/disputes.ts';
import { loadPayment } from '../payments/queries.ts';
import { DISPUTE_MACHINE } from './lifecycle.ts';
import { disputeList, type DisputeResponse, type OpenDisputeBody } from './schemas.ts';
import { DISPUTE_STATUSES, type DisputeStatus, type DisputesTable } from './tables.ts';

/**
 * Disputes (docs/disputes.md). A dispute is opened by the rail (the card network or the payer's
 * bank) on money it settled — a paid charge or an approved payment — and closed by it, won or
 * lost. Both reports come through one entry each (openDisputeFromRail, closeDisputeFromRail): a
 * connector's inbound events call them; in the sandbox the test helpers ask the sandbox rail for
 * the report first. In the opening transaction the dispute is inserted (its machine's `open` row),
 * the disputed amount held in the ledger (available → held, source the dispute) and the disputed
 * object told (charge.disputed, or the payment's approved → disputed with payment.disputed).
 * Closing: won releases the hold back to available, lost pays it out for good (held → outside);
 * a payment goes back to approved, or to refunded (payment.refunded).
 */

export type DisputeRow = Selectable<DisputesTable>;
export const DISPUTE_ID = /^dp_[0-9a-z]{26}$/;
const CHARGE_REF = /^ch_[0-9a-z]{26}$/;
const INTENT_REF = /^pi_[0-9a-z]{26}$/;

const disputeSource = (id: string) => ({ type: 'dispute', id });

export function toDisputeResponse(row: DisputeRow): DisputeResponse {
  return {
    id: row.id,
    object: 'dispute',
    status: row.status,
    amount: toPesos(row.amount),
    currency: row.currency as Currency,
    reason: row.reason as DisputeReason,
    charge_id: row.charge_id,
    payment_id: row.payment_id,
    payment_intent_id: row.intent_id,
    rail: row.rail,
    network_reference: row.rail_dispute_id,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    closed_at: row.closed_at ? iso(row.closed_at) : null,
  };
}

/** A dispute report as the entry takes it: the rail's report and the rail's name. */
export type RailDisputeReport = DisputeReport & { rail: string };

function checkAmount(amount: bigint, max: bigint): void {
  if (amount <= 0n || amount > max) throw validationError({ amount: [`must be more than 0 and at most ${toPesos(max)} (what was paid)`] });
}

async function disputeBy(trx: Transaction<DB>, scope: Tenant, where: { column: 'charge_id' | 'payment_id' | 'id'; value: string }) {
  return trx.selectFrom('disputes').selectAll().$call(inTenant(scope)).where(where.column, '=', where.value).executeTakeFirst();
}

/** openDisputeFromRail inside the caller's transaction. */
export async function openDisputeIn(trx: Transaction<DB>, s: ServiceScope, report: RailDisputeReport): Promise<DisputeRow> {
  // The same report again (the rail's id): the same dispute.
  const repeated = await trx
    .selectFrom('disputes')
    .selectAll()
    .$call(inTenant(s))
    .where('rail', '=', report.rail)
    .where('rail_dispute_id', '=', report.railDisputeId)
    .executeTakeFirst();
  if (repeated) return repeated;
  const now = s.deps.clock.now();
  const id = prefixedId('dp', now.getTime());
  const values = {
    id,
    amount: report.amount,
    reason: report.reason,
    rail: report.rail,
    rail_dispute_id: report.railDisputeId,
    created_at: now,
    updated_at: now,
    closed_at: null,
  };
  let row: DisputeRow;
  if (CHARGE_REF.test(report.reference)) {
    // Lock order: the charge, then the dispute's rows and the ledger.
    const charge = await lockDisputableCharge(trx, s, report.reference);
    const existing = await disputeBy(trx, s, { column: 'charge_id', value: charge.id });
    if (existing) return existing; // A charge is disputed once (as at the card networks).
    checkAmount(report.amount, charge.amount);
    row = await insertWithTransition<DisputeRow>(trx, s, DISPUTE_MACHINE, {
      table: 'disputes',
      action: 'open',
      values: { ...values, charge_id: charge.id, payment_id: null, intent_id: charge.intent_id, currency: charge.currency },
    });
    await holdPayout(trx, s, { currency: charge.currency, amount: report.amount, source: disputeSource(id), from: { kind: 'company_available' } });
    await markChargeDisputed(trx, s, charge, id);
  } else {
    const paymentId = INTENT_REF.test(report.reference) ? await paymentOfIntent(trx, s, report.reference) : null;
    if (!paymentId) throw new ApiError('record_not_found', { message: 'The rail names no charge or payment attempt of this company.' });
    const payment = await lockPaymentForDispute(trx, s, paymentId);
    const existing = await disputeBy(trx, s, { column: 'payment_id', value: payment.id });
    if (existing) return existing; // A payment is disputed once.
    await disputableAttempt(trx, s, payment);
    checkAmount(report.amount, payment.amount_paid);
    row = await insertWithTransition<DisputeRow>(trx, s, DISPUTE_MACHINE, {
      table: 'disputes',
      action: 'open',
      values: { ...values, charge_id: null, payment_id: payment.id, intent_id: report.reference, currency: payment.currency },
    });
    await holdPayout(trx, s, { currency: payment.currency, amount: report.amount, source: disputeSource(id), from: { kind: 'company_available' } });
    await markPaymentDisputed(trx, s, payment.id);
  }
  return row;
}

/**
 * THE entry for a dispute a rail reports (a connector's inbound event; the sandbox helpers): in one
 * transaction, idempotent by the rail's dispute id. A company whose available balance cannot
 * cover the amount gets 422 insufficient_balance and nothing is recorded (the rail reports again).
 */
export function openDisputeFromRail(deps: AppDeps, scope: Tenant, report: RailDisputeReport): Promise<DisputeRow> {
  return inTransaction(deps.database.db, (trx) => openDisputeIn(trx, { ...scope, db: trx, deps }, report));
}

/** closeDisputeFromRail inside the caller's transaction. */
export async function closeDisputeIn(trx: Transaction<DB>, s: ServiceScope, closing: DisputeClosing & { rail: string }): Promise<DisputeRow> {
  const row = await trx
    .selectFrom('disputes')
    .selectAll()
    .$call(inTenant(s))
    .where('rail', '=', closing.rail)
    .where('rail_dispute_id', '=', closing.railDisputeId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw new ApiError('record_not_found');
  if (row.status === closing.outcome) return row; // The same decision reported again.
  if (row.status !== 'needs_response') {
    throw new ApiError('not_resolvable', { message: `The dispute is already ${row.status}; only an open dispute (needs_response) is decided.` });
  }
  const now = s.deps.clock.now();
  const { row: closed } = await applyTransition(trx, s, DISPUTE_MACHINE, {
    table: 'disputes',
    row,
    action: closing.outcome === 'won' ? 'win' : 'lose',
    now,
    set: () => ({ closed_at: now }),
  });
  const money = { currency: row.currency, amount: row.amount, source: disputeSource(row.id) };
  if (closing.outcome === 'won') await releaseHold(trx, s, { ...money, to: { kind: 'company_available' } });
  else await postPayout(trx, s, money);
  if (row.payment_id) await closePaymentDispute(trx, s, row.payment_id, closing.outcome);
  return closed;
}

/** THE entry for the rail's decision of a dispute: won (the hold comes back) or lost (it leaves). Idempotent. */
export function closeDisputeFromRail(deps: AppDeps, scope: Tenant, closing: DisputeClosing & { rail: string }): Promise<DisputeRow> {
  return inTransaction(deps.database.db, (trx) => closeDisputeIn(trx, { ...scope, db: trx, deps }, closing));
}

// ---------------------------------------------------------------------------------------------
// The sandbox helpers (test objects, test keys)

function testOnly(ctx: RequestContext, environment: string, what: string): void {
  if (!ctx.isTest || environment !== 'test')
    throw new ApiError('test_only', { message: `Only a test ${what} can be disputed by hand, with a test key.` });
}

/**
 * Asks the subject's rail to report a dispute (the sandbox opens one when asked), then records
 * what it reported through the entry: the rail call outside any transaction.
 */
async function openThroughRail(
  ctx: RequestContext,
  port: DisputeReporting,
  rail: string,
  request: { reference: string; amount: bigint; currency: string; reason: DisputeReason },
): Promise<DisputeResponse> {
  if (!port.openDispute) throw validationError({ id: [`the ${rail} rail of this object reports disputes by itself; it cannot open one on request`] });
  const scope = { companyId: ctx.companyId, environment: ctx.environment };
  return runOutsideCall(requestOrigin(ctx), {
    rail,
    record: async () => ({ recorded: request, resourceId: request.reference, safetyJobId: null }),
    call: (r) => port.openDispute!(r),
    settle: async (trx, _r, report) => toDisputeResponse(await openDisputeIn(trx, { ...scope, db: trx, deps: ctx.deps }, { ...report, rail })),
    unknown: () => {
      throw new ApiError('service_unavailable', { message: 'The rail did not answer; nothing was recorded. Retry.' });
    },
    lost: (_r, error) => (error instanceof ApiError ? error : new ApiError('service_unavailable')),
  });
}

function disputedAmount(body: OpenDisputeBody, whole: bigint): bigint {
  if (body.amount == null) return whole;
  const amount = parseMinor(body.amount);
  if (amount === null) throw validationError({ amount: ['must be an amount in pesos with at most 2 decimals'] });
  checkAmount(amount, whole);
  return amount;
}

/** POST /charges/{id}/dispute (sandbox): the network opens a dispute on a paid test charge. */
export async function disputeCharge(ctx: RequestContext, id: string, body: OpenDisputeBody): Promise<DisputeResponse> {
  const charge = await loadCharge(ctx, id);
  testOnly(ctx, charge.environment, 'charge');
  if (charge.dispute_id) return getDispute(ctx, charge.dispute_id);
  if (charge.status !== 'paid')
    throw new ApiError('charge_is_not_paid', { message: `The charge is ${charge.status}; only a paid charge can be disputed.` });
  // The sandbox helper, never for a charge a provider's connector handled (its network id is the
  // provider's): only the provider reports its disputes (openDisputeFromRail).
  if (charge.network_id && !charge.network_id.startsWith('sbx_')) {
    throw new ApiError('test_only', { message: `The charge cannot be disputed here: ${CONNECTOR_HANDLED}.` });
  }
  const amount = disputedAmount(body, charge.amount);
  const { rail, port } = await chargeDisputeRail(ctx.deps, ctx, charge);
  return openThroughRail(ctx, port, rail, { reference: charge.id, amount, currency: charge.currency, reason: body.reason ?? 'general' });
}

/** POST /payments/{id}/dispute (sandbox): the network opens a dispute on an approved test payment. */
export async function disputePayment(ctx: RequestContext, id: string, body: OpenDisputeBody): Promise<DisputeResponse> {
  const payment = await loadPayment(ctx, id);
  testOnly(ctx, payment.environment, 'payment');
  const existing = await ctx.db.selectFrom('disputes').selectAll().$call(inTenant(ctx)).where('payment_id', '=', payment.id).executeTakeFirst();
  if (existing) return toDisputeResponse(existing);
  const intent = await inTransaction(ctx.db, (trx) => disputableAttempt(trx, ctx, payment));
  const amount = disputedAmount(body, payment.amount_paid);
  const { rail, port } = await intentDisputeRail(ctx.deps, ctx, intent);
  return openThroughRail(ctx, port, rail, { reference: intent.id, amount, currency: payment.currency, reason: body.reason ?? 'general' });
}

/** POST /disputes/{id}/resolve (sandbox): the network decides a test dispute, won or lost. */
export async function resolveDispute(ctx: RequestContext, id: string, outcome: DisputeOutcome): Promise<DisputeResponse> {
  const row = await loadDispute(ctx, id);
  if (!ctx.isTest || row.environment !== 'test')
    throw new ApiError('test_only', { message: 'Only a test dispute can be resolved, with a test key.' });
  if (row.status !== 'needs_response') {
    throw new ApiError('not_resolvable', { message: `The dispute is already ${row.status}; only an open dispute (needs_response) is resolved.` });
  }
  const port = (await ctx.deps.rails.money(ctx, row.rail as never)) as DisputeReporting;
  if (!port.closeDispute) throw validationError({ id: [`the ${row.rail} rail decides this dispute by itself`] });
  const scope = { companyId: ctx.companyId, environment: ctx.environment };
  return runOutsideCall(requestOrigin(ctx), {
    rail: row.rail,
    record: async () => ({ recorded: row, resourceId: row.id, safetyJobId: null }),
    call: (r) => port.closeDispute!(r.rail_dispute_id, outcome),
    settle: async (trx, r, closing) =>
      toDisputeResponse(await closeDisputeIn(trx, { ...scope, db: trx, deps: ctx.deps }, { ...closing, rail: r.rail })),
    unknown: () => {
      throw new ApiError('service_unavailable', { message: 'The rail did not answer; nothing changed. Retry.' });
    },
    lost: (_r, error) => (error instanceof ApiError ? error : new ApiError('service_unavailable')),
  });
}

// ---------------------------------------------------------------------------------------------
// Reads

async function loadDispute(ctx: RequestContext, id: string): Promise<DisputeRow> {
  if (!DISPUTE_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('disputes').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

export async function getDispute(ctx: RequestContext, id: string): Promise<DisputeResponse> {
  return toDisputeResponse(await loadDispute(ctx, id));
}

/** GET /disputes: filters id, status, charge_id, payment_id, reason; sort created_at. A value that cannot match gives an empty list. */
export async function listDisputes(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(disputeList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('disputes').selectAll().$call(inTenant(ctx));
  if (f.id !== undefined) q = q.where('id', '=', f.id);
  if (f.status !== undefined)
    q = (DISPUTE_STATUSES as readonly string[]).includes(f.status) ? q.where('status', '=', f.status as DisputeStatus) : q.where('id', '=', '');
  if (f.charge_id !== undefined) q = q.where('charge_id', '=', f.charge_id);
  if (f.payment_id !== undefined) q = q.where('payment_id', '=', f.payment_id);
  if (f.reason !== undefined) q = q.where('reason', '=', f.reason);
  return paginate(q, list, { path, query, table: 'disputes', map: toDisputeResponse });
}
