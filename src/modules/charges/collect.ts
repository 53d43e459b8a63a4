import { sql, type Insertable, type Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { formatPesos, parseMinor } from '../../platform/money.ts';
import { normalizeMetadata, type MetadataInput } from '../../platform/validation.ts';
import { maxTransactionCop } from '../payments/queries.ts';
import { chargeRail } from './rails.ts';
import { PROVIDER_FINAL_WITHIN_MS, ProviderNeverFinal, RailRefused, type RailPayer } from '../../rails/index.ts';
import { findBanklinkBank } from '../banks/service.ts';
import { customerAsPayer } from '../customers/service.ts';
import { EXPIRED_REMARKS, FINAL, LATE_APPROVAL_REMARKS } from './lifecycle.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { findCharge, lockCharge } from './queries.ts';
import type { ChargeResponse } from './schemas.ts';
import { EXPIRE_JOB, jobPayload, RECONCILE_JOB } from './jobs.ts';
import { expireHeldCharge } from './held.ts';
import { isPayerMethod, type ChargesTable, type PayerMethod } from './tables.ts';
import { askRail, requestOrigin, runOutsideCall, settleAlone } from '../../platform/outside-call.ts';
import { applyChargeTransition, insertCharge } from './transition.ts';

/**
 * What banklink, rtkey and wallet request-to-pay charges share (docs/charges.md): the amount rules,
 * recording a charge before its rail is called, saving what the rail registered, the payer's (or
 * the wallet's) answer, expiry, and the reconciler's part. Every status change goes through the
 * one transition table (transition.ts), with its events and, on paid, the ledger collection.
 */

/** Pesos → minor units with a minimum (pesos) and the company's maximum per transaction (COP). */
export async function collectAmount(
  ctx: RequestContext,
  value: unknown,
  minimumPesos: number,
  add: (field: string, message: string) => void,
): Promise<bigint | null> {
  const amount = parseMinor(value);
  if (amount === null) {
    add('amount', 'must be an amount in pesos with at most 2 decimals');
    return null;
  }
  const minimum = BigInt(minimumPesos) * 100n;
  if (amount < minimum) {
    add('amount', `must be at least ${formatPesos(minimum, 'COP')}`);
    return null;
  }
  const maximum = (await maxTransactionCop(ctx.db, ctx.companyId)) * 100n;
  if (amount > maximum) {
    add('amount', `exceeds the maximum per transaction of ${formatPesos(maximum, 'COP')}`);
    return null;
  }
  return amount;
}

export function collectMetadata(input: unknown, add: (field: string, message: string) => void): Record<string, string> | null {
  try {
    return normalizeMetadata(input as MetadataInput | null | undefined) ?? null;
  } catch {
    add('metadata', 'at most 50 keys');
    return null;
  }
}

/** What the rail needs of the customer who pays (a connector's payerProblem), as a message on customer_id, or null. */
export async function payerRuleOf(
  ctx: RequestContext,
  rail: { payerProblem?(payer: RailPayer): string | null },
  customerId: string,
): Promise<string | null> {
  if (!rail.payerProblem) return null;
  const payer = await customerAsPayer(ctx.db, ctx, customerId);
  return payer ? rail.payerProblem(payer) : null;
}

export function fieldErrors(): { errors: FieldErrors; add: (field: string, message: string) => void } {
  const errors: FieldErrors = {};
  return { errors, add: (field, message) => void (errors[field] ??= []).push(message) };
}

/**
 * A transaction-scoped advisory lock on `key`: concurrent requests with the same key (the banklink
 * duplicate window, an open walleta external_id, a walletb wallet account) run their check and
 * insert one after the other, on both engines. Released when the transaction ends.
 */
export async function lockKey(trx: Transaction<DB>, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
}

export type NewPayerCharge = Pick<Insertable<ChargesTable>, 'title' | 'amount' | 'customer_id' | 'external_id' | 'metadata'> &
  Partial<
    Pick<
      Insertable<ChargesTable>,
      'account_id' | 'bank_id' | 'redirect_url' | 'reference' | 'phone' | 'document_type' | 'document_number' | 'test_scenario' | 'provider_consent'
    >
  > & {
    method: PayerMethod;
    /** How long the charge stays open: `expires_at` is its creation time plus this. */
    lifetimeMs?: number;
  };

/** The full row of a new payer charge (COP, no splits): the `create` row of the table inserts it. */
export function payerChargeValues(
  v: NewPayerCharge,
  now: Date,
  idempotencyKey: string | null,
  id = prefixedId('ch', now.getTime()),
): Omit<Insertable<ChargesTable>, 'status' | 'company_id' | 'environment'> {
  return {
    id,
    intent_id: prefixedId('pi', now.getTime()),
    title: v.title,
    currency: 'COP',
    amount: v.amount,
    customer_id: v.customer_id,
    payment_method_type: v.method,
    account_id: v.account_id ?? null,
    card_id: null,
    external_id: v.external_id ?? null,
    idempotency_key: idempotencyKey,
    splits: '[]',
    metadata: v.metadata ?? null,
    test_scenario: v.test_scenario ?? null,
    remarks: null,
    network_id: null,
    bank_id: v.bank_id ?? null,
    redirect_url: v.redirect_url ?? null,
    reference: v.reference ?? null,
    phone: v.phone ?? null,
    document_type: v.document_type ?? null,
    document_number: v.document_number ?? null,
    qr_payload: null,
    provider_consent: v.provider_consent ?? null,
    expires_at: v.lifetimeMs !== undefined ? new Date(now.getTime() + v.lifetimeMs) : null,
    paid_at: null,
    failed_at: null,
    cancelled_at: null,
    refunded_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** What a rail answered when the charge was registered with it. */
export interface Registration {
  networkId: string;
  qrPayload?: string;
  /** Banklink through a connector: the provider's bank-session URL (the charge's `url`). */
  redirectUrl?: string;
}

/** Where the bank (or the provider) sends the payer back: the company's redirect_url with charge_id added. */
export function returnUrl(redirectUrl: string, chargeId: string): string {
  try {
    const url = new URL(redirectUrl);
    url.searchParams.set('charge_id', chargeId);
    return url.toString();
  } catch {
    return redirectUrl;
  }
}

/** The charge's customer as its rail needs them (a deleted customer still pays its open charges). */
async function payerOf(deps: AppDeps, charge: ChargeRow): Promise<RailPayer> {
  const scope = { companyId: charge.company_id, environment: charge.environment };
  const payer = await customerAsPayer(deps.database.db, scope, charge.customer_id!);
  if (!payer) throw new Error(`charge ${charge.id}: customer ${charge.customer_id} not found`);
  return payer;
}

/** Registers a recorded charge with its rail (again: the same answer). */
export async function registerWithRail(deps: AppDeps, charge: ChargeRow): Promise<Registration> {
  const scope = { companyId: charge.company_id, environment: charge.environment };
  switch (charge.payment_method_type) {
    case 'banklink': {
      const rail = await chargeRail(deps, scope, 'banklink');
      const bank = await findBanklinkBank(deps.database.db, charge.bank_id!, rail);
      return rail.open({
        reference: charge.id,
        amount: charge.amount,
        currency: charge.currency,
        bankId: charge.bank_id!,
        bankCode: bank?.code ?? '',
        description: charge.title,
        redirectUrl: returnUrl(charge.redirect_url!, charge.id),
        expiresAt: new Date(charge.expires_at!),
        payer: await payerOf(deps, charge),
      });
    }
    case 'walleta':
    case 'walletb':
      return (await chargeRail(deps, scope, charge.payment_method_type)).requestToPay({
        reference: charge.id,
        amount: charge.amount,
        phone: charge.phone!,
        payer: await payerOf(deps, charge),
      });
    case 'rtkey': {
      const company = await deps.database.db.selectFrom('companies').select('name').where('id', '=', charge.company_id).executeTakeFirstOrThrow();
      const registered = await (
        await chargeRail(deps, scope, 'rtkey')
      ).registerQr({
        reference: charge.id,
        amount: charge.amount,
        currency: charge.currency,
        merchant: company.name,
        label: qrLabel(charge),
        expiresAt: new Date(charge.expires_at!),
        test_scenario: charge.test_scenario,
      });
      return { networkId: registered.networkId, qrPayload: registered.payload };
    }
    default:
      throw new Error(`${charge.payment_method_type} is not a payer rail`);
  }
}

/** registerWithRail, with the provider's definitive refusal (RailRefused) as an answer of its own. */
export async function registerOrRefusal(deps: AppDeps, charge: ChargeRow): Promise<Registration | { refused: string }> {
  try {
    return await registerWithRail(deps, charge);
  } catch (error) {
    if (error instanceof RailRefused) return { refused: error.reason };
    throw error;
  }
}

/**
 * The provider refused to open the charge (nothing exists there): a `created` charge fails at once
 * with the provider's reason (submit, then decline: charge.processing, charge.failed), never
 * submitted again. A charge that changed meanwhile is left as it is.
 */
export async function refuseRegistrationIn(trx: Transaction<DB>, s: ServiceScope, chargeId: string, reason: string): Promise<ChargeRow> {
  let row = await lockCharge(trx, s, chargeId);
  if (!row) throw new ApiError('record_not_found');
  if (row.status !== 'created') return row;
  row = await applyChargeTransition(trx, s, chargeId, 'submit', {}, row);
  return applyChargeTransition(trx, s, chargeId, 'decline', { remarks: reason }, row);
}

/** EMVCo tag 62 reference label: the company's reference, else the charge id without its prefix (25 characters). */
export function qrLabel(charge: { id: string; reference: string | null }): string {
  return charge.reference ?? charge.id.slice(3, 28);
}

/**
 * The create flow of banklink and wallet charges (as POST /charges, docs/charges.md "90005 never
 * loses a charge"):
 * 1. in the request's transaction: `guard` (the advisory lock and the duplicate or open-request
 *    check), the charge (`created`, charge.created, its intent), a reconcile job (the safety net)
 *    and, when it expires, its expire job;
 * 2. commit with the idempotency claim (the lock is released, the charge visible);
 * 3. the rail, outside any transaction (a failure leaves the charge `created` for the reconciler);
 * 4. the registration saved in a transaction of its own: `submit` → processing (charge.processing);
 *    if that save fails the answer is 503 90005 and the reconciler finishes it.
 * Steps 1-4 are the platform's outside-call protocol (src/platform/outside-call.ts).
 */
export async function createPayerCharge(
  ctx: RequestContext,
  values: NewPayerCharge,
  idempotencyKey: string | null,
  guard: (trx: Transaction<DB>) => Promise<void>,
): Promise<ChargeResponse> {
  // Refused before anything is recorded when a live key has no connector for the rail.
  const rail = await chargeRail(ctx.deps, ctx, values.method);
  const now = ctx.deps.clock.now();
  const baseUrl = ctx.deps.config.baseUrl;
  return runOutsideCall(requestOrigin(ctx), {
    rail: values.method,
    record: async (trx) => {
      await guard(trx);
      const charge = await insertCharge(trx, ctx, payerChargeValues(values, now, idempotencyKey));
      const runAt = new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs);
      const safetyJobId = await ctx.deps.jobs.enqueue(trx, RECONCILE_JOB, jobPayload(charge, {}), runAt);
      if (charge.expires_at) await ctx.deps.jobs.enqueue(trx, EXPIRE_JOB, jobPayload(charge, {}), new Date(charge.expires_at));
      return { recorded: charge, resourceId: charge.id, safetyJobId };
    },
    call: (charge) => registerOrRefusal(ctx.deps, charge),
    settle: async (trx, charge, registration) => {
      const s = { ...scopeOfContext(ctx), db: trx, deps: ctx.deps };
      if ('refused' in registration) return toChargeResponse(await refuseRegistrationIn(trx, s, charge.id, registration.refused), baseUrl);
      const row = await settleRegistrationIn(trx, s, charge.id, registration);
      if (rail.poll) await schedulePoll(ctx.deps, trx, row);
      return toChargeResponse(row, baseUrl);
    },
    unknown: (charge) => toChargeResponse(charge, baseUrl),
    lost: () => new ApiError('charge_persistence_lost'),
  });
}

/** A connector's open operation is polled CONNECTOR_POLL_AFTER_MS from now if no signed event settles it first. */
async function schedulePoll(deps: AppDeps, db: Executor, charge: ChargeRow): Promise<void> {
  if (charge.status !== 'processing') return;
  await deps.jobs.enqueue(db, RECONCILE_JOB, jobPayload(charge, {}), new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs));
}

export const scopeOfContext = (ctx: RequestContext): Omit<ServiceScope, 'db' | 'deps'> => ({
  companyId: ctx.companyId,
  environment: ctx.environment,
  notifyWorkers: ctx.notifyWorkers,
});
export const scopeOfCharge = (charge: { company_id: string; environment: 'test' | 'live' }): Omit<ServiceScope, 'db' | 'deps'> => ({
  companyId: charge.company_id,
  environment: charge.environment,
});

/**
 * Saves a registration in its own transaction: a `created` charge is submitted (processing,
 * charge.processing) with the rail's reference (and the QR payload). A charge that changed
 * meanwhile (cancelled, expired) is left as it is.
 */
export async function saveRegistration(
  deps: AppDeps,
  scope: Omit<ServiceScope, 'db' | 'deps'>,
  chargeId: string,
  registration: Registration,
): Promise<ChargeRow> {
  return settleAlone(deps, scope, (trx, s) => settleRegistrationIn(trx, s, chargeId, registration));
}

/** saveRegistration inside the caller's transaction (the settle step of a payer charge's creation). */
export async function settleRegistrationIn(trx: Transaction<DB>, s: ServiceScope, chargeId: string, registration: Registration): Promise<ChargeRow> {
  const row = await lockCharge(trx, s, chargeId);
  if (!row) throw new ApiError('record_not_found');
  if (row.status !== 'created') return row;
  return applyChargeTransition(
    trx,
    s,
    chargeId,
    'submit',
    { network_id: registration.networkId, qr_payload: registration.qrPayload ?? null, rail_url: registration.redirectUrl ?? null },
    row,
  );
}

/** The payer's (or the wallet's) answer to a payer charge. */
export type PayerOutcome = { status: 'approved'; networkId?: string } | { status: 'declined'; remarks: string; networkId?: string };
export type SettleOutcome = PayerOutcome | { status: 'expired' };

/**
 * The payer's (or the wallet's) answer, saved in its own transaction under the row lock: an open
 * charge past its `expires_at` expires whatever the answer (remarks EXPIRED); otherwise a `created`
 * charge is submitted first, then approved (paid: ledger collection, charge.paid) or declined
 * (failed with the remarks, charge.failed). `applied` is false when the charge was already
 * settled (by another answer, cancel, resolve or the expire job): it is returned as it is.
 */
export async function settlePayerCharge(
  deps: AppDeps,
  scope: Omit<ServiceScope, 'db' | 'deps'>,
  chargeId: string,
  outcome: SettleOutcome,
  opts: SettleOptions = {},
): Promise<{ row: ChargeRow; applied: boolean; expired: boolean }> {
  return settleAlone(deps, scope, (trx, s) => settlePayerChargeIn(trx, s, chargeId, outcome, opts));
}

export interface SettleOptions {
  /**
   * The outcome is a provider's final word (its signed event or a poll): it stands even past
   * `expires_at` — money a payer sent late is still the company's, and a decline is a decline.
   */
  fromProvider?: boolean;
}

/** settlePayerCharge inside the caller's transaction. */
export async function settlePayerChargeIn(
  trx: Transaction<DB>,
  s: ServiceScope,
  chargeId: string,
  outcome: SettleOutcome,
  opts: SettleOptions = {},
): Promise<{ row: ChargeRow; applied: boolean; expired: boolean }> {
  let row = await lockCharge(trx, s, chargeId);
  if (!row) throw new ApiError('record_not_found');
  if (row.status === 'failed' && opts.fromProvider && outcome.status === 'approved') {
    // The provider approved a charge that had expired (or been cancelled) here: the payer paid, so
    // the money is kept — paid, collected and refundable — never lost. Remarks say so.
    row = await applyChargeTransition(
      trx,
      s,
      chargeId,
      'late_approve',
      { remarks: LATE_APPROVAL_REMARKS, network_id: outcome.networkId ?? row.network_id },
      row,
    );
    return { row, applied: true, expired: false };
  }
  if (FINAL.includes(row.status)) return { row, applied: false, expired: false };
  const now = s.deps.clock.now();
  const overdue = !opts.fromProvider && row.expires_at !== null && new Date(row.expires_at).getTime() <= now.getTime();
  if (outcome.status === 'expired' || overdue) {
    row = await applyChargeTransition(trx, s, chargeId, 'expire', { remarks: EXPIRED_REMARKS }, row);
    return { row, applied: true, expired: true };
  }
  if (row.status === 'created')
    row = await applyChargeTransition(
      trx,
      s,
      chargeId,
      'submit',
      // The provider's id when its word settles it (a lost registration answer); the sandbox's otherwise.
      { network_id: ('networkId' in outcome ? outcome.networkId : undefined) ?? row.network_id ?? `sbx_${row.payment_method_type}_${row.id}` },
      row,
    );
  if (outcome.status === 'approved') row = await applyChargeTransition(trx, s, chargeId, 'approve', {}, row);
  else row = await applyChargeTransition(trx, s, chargeId, 'decline', { remarks: outcome.remarks }, row);
  return { row, applied: true, expired: false };
}

/** Is the charge open but past its expiry (the job has not run yet)? */
export function isOverdue(charge: ChargeRow, now: Date): boolean {
  return !FINAL.includes(charge.status) && charge.expires_at !== null && new Date(charge.expires_at).getTime() <= now.getTime();
}

/**
 * The expire job (at `expires_at`): an open banklink, rtkey or walletb charge fails with remarks
 * EXPIRED (charge.failed), and the rail withdraws the session, QR or request. Idempotent.
 */
export async function runExpire(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? ('live' as const) : ('test' as const) };
  const charge = await findCharge(deps.database.db, scope, String(payload.charge_id));
  if (!charge || FINAL.includes(charge.status) || !charge.expires_at) return;
  if (new Date(charge.expires_at).getTime() > deps.clock.now().getTime()) {
    // Not due yet (a clock behind the job's): look again then.
    await deps.jobs.enqueue(deps.database.db, EXPIRE_JOB, payload, new Date(charge.expires_at));
    return;
  }
  if (!isPayerMethod(charge.payment_method_type)) {
    // A card charge held for the payer's approval (held.ts): the rail never had it; it just fails.
    if (charge.status === 'created') await expireHeldCharge(deps, scope, charge.id);
    return;
  }
  const rail = await chargeRail(deps, scope, charge.payment_method_type);
  if (rail.poll) {
    // A provider's session may still be paid after our deadline, and a charge still `created` here
    // may exist there (its answer was lost): the provider's word decides, never a guess.
    const polled = await askRail(deps, charge.payment_method_type, () => rail.poll!(charge.id));
    if (polled.status === 'pending' && !(polled.unknown && charge.status === 'created')) {
      const overdueMs = deps.clock.now().getTime() - new Date(charge.expires_at).getTime();
      if (overdueMs > PROVIDER_FINAL_WITHIN_MS) {
        // Bounded: the job fails from here on and ends dead (recaudo jobs list --dead, /metrics) for a person to look at.
        throw new ProviderNeverFinal(`charge ${charge.id} (past its expiry)`, overdueMs);
      }
      await deps.jobs.enqueue(deps.database.db, EXPIRE_JOB, payload, new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs));
      return;
    }
    if (polled.status !== 'pending') {
      await settlePayerCharge(deps, scope, charge.id, polled, { fromProvider: true });
      return;
    }
    // Nothing at the provider under the reference: it expires here (an approval that still comes is a late approval, kept).
  }
  const { applied } = await settlePayerCharge(deps, scope, charge.id, { status: 'expired' });
  if (applied) await askRail(deps, charge.payment_method_type, () => rail.cancel(charge.id));
}

/**
 * The reconciler's part for payer charges: one still `created` (the request never saved its
 * registration) is registered again (idempotent by the charge id) and submitted. A processing one
 * waits for the payer, the confirm or the expire job — except on a connector, whose transaction
 * is polled when no signed event settled it (again every CONNECTOR_POLL_AFTER_MS until final).
 */
export async function reconcilePayerCharge(deps: AppDeps, charge: ChargeRow): Promise<void> {
  const scope = scopeOfCharge(charge);
  const rail = await chargeRail(deps, scope, charge.payment_method_type as PayerMethod);
  if (charge.status === 'created') {
    const registration = await registerOrRefusal(deps, charge);
    if ('refused' in registration) {
      await settleAlone(deps, scope, (trx, s) => refuseRegistrationIn(trx, s, charge.id, registration.refused));
      return;
    }
    const row = await saveRegistration(deps, scope, charge.id, registration);
    if (rail.poll) await schedulePoll(deps, deps.database.db, row);
    return;
  }
  if (!rail.poll) return;
  const polled = await askRail(deps, charge.payment_method_type, () => rail.poll!(charge.id));
  if (polled.status !== 'pending') {
    await settlePayerCharge(deps, scope, charge.id, polled, { fromProvider: true });
    return;
  }
  const openMs = deps.clock.now().getTime() - new Date(charge.created_at).getTime();
  if (openMs > PROVIDER_FINAL_WITHIN_MS) throw new ProviderNeverFinal(`charge ${charge.id}`, openMs);
  await schedulePoll(deps, deps.database.db, charge);
}
