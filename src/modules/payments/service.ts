import { sql, type Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import type { RailScope } from '../../rails/index.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { findTemplate } from '../templates/service.ts';
import { settleIntentIn, startIntentIn } from './intents.ts';
import { initialMessageState, recordMessage, registerMessageHandlers, type MessageRow } from './messages.ts';
import { POLL_ATTEMPT_JOB, runAttemptPoll } from './provider-attempts.ts';
import { PAYMENT_MACHINE, RESENDABLE, RESOLVABLE, UPDATE_REFUSED } from './lifecycle.ts';
import { fromBasisPoints, parseMinor, toPesos } from '../../platform/money.ts';
import { toPaymentResponse } from './present.ts';
import { paymentList, REJECTION_REASONS, type CreatePaymentBody, type PaymentResponse, type UpdatePaymentBody } from './schemas.ts';
import { PAYMENT_STATUSES, type PaymentStatus } from './tables.ts';
import { findOpenIntent, loadPayment, lockPayment, maxTransactionCop, PAYMENT_ID, type PaymentRow } from './queries.ts';
import { applyPaymentTransition, insertPayment, stateError } from './transition.ts';
import { resolvePaymentFields, type PaymentInput, type ResolvedPayment, type RuleContext } from './validate.ts';
import './tables.ts';
import { inTenant } from '../../platform/scope.ts';

/** The expiration job (docs/payments.md): runs at expires_at, expires the payment if still expirable. */
export const EXPIRE_JOB = 'payments.expire';
/** While an attempt is in progress at expires_at, the job looks again this much later. */
export const EXPIRY_RECHECK_MS = 5 * 60_000;

function columns(v: ResolvedPayment) {
  return {
    title: v.title,
    description: v.description,
    currency: v.currency,
    amount: v.amount,
    partial_enabled: v.partial_enabled,
    partial_minimum: v.partial_minimum,
    reference: v.reference,
    external_id: v.external_id,
    phone: v.phone,
    email: v.email,
    channel: v.channel,
    template_id: v.template_id,
    target_wallet_id: v.target_wallet_id,
    target_wallet_company_id: v.target_wallet_company_id,
    splits: JSON.stringify(v.splits),
    document_url: v.document_url,
    tax_rate_bp: v.tax_rate_bp,
    tax_amount: v.tax_amount,
    allows: JSON.stringify(v.allows),
    rtkey_expires_in: v.rtkey_expires_in,
    expires_at: v.expires_at,
    redirect_url: v.redirect_url,
    metadata: v.metadata ? JSON.stringify(v.metadata) : null,
    test_scenario: v.test_scenario,
  };
}

async function scheduleExpiration(trx: Executor, scope: ServiceScope, row: PaymentRow): Promise<void> {
  if (!row.expires_at) return;
  await scope.deps.jobs.enqueue(
    trx,
    EXPIRE_JOB,
    { company_id: scope.companyId, environment: scope.environment, payment_id: row.id },
    new Date(row.expires_at),
    scope.clockBinding,
  );
}

export async function createPayment(ctx: RequestContext, body: CreatePaymentBody): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => toPaymentResponse(await createPaymentIn(trx, { ...ctx, db: trx }, body), ctx.deps.config.baseUrl));
}

/**
 * Creates a payment inside the caller's transaction (POST /payments, and the payment an invoice
 * gets in the same transaction as the invoice): every rule, the insert through the transition
 * table (payment.created), the expiration job and the link message.
 */
export async function createPaymentIn(
  trx: Transaction<DB>,
  scope: ServiceScope,
  body: PaymentInput,
  billing?: { subscriptionId: string; cycle: number },
  // `utility`: the payment of a utility-service bill (modules/utilities); it cannot be cancelled (15001).
  origin: { source?: 'utility' } = {},
): Promise<PaymentRow> {
  const now = scope.deps.clock.now();
  const rc: RuleContext = {
    db: trx,
    companyId: scope.companyId,
    environment: scope.environment,
    now,
    maxTransactionCop: await maxTransactionCop(trx, scope.companyId),
    checks: () => true,
  };
  const { errors, value } = await resolvePaymentFields(rc, body);
  if (body.test_scenario != null && (await connectorServesPayments(scope.deps, { ...scope, db: trx }))) {
    (errors.test_scenario ??= []).push(CONNECTOR_HANDLES_PAYMENTS);
  }
  if (Object.keys(errors).length) throw validationError(errors);
  const cols = columns(value);
  const row = await insertPayment(trx, scope, {
    ...cols,
    receipts: (body as { receipts?: boolean | null }).receipts ?? true,
    ...(await initialMessageState({ ...scope, db: trx }, cols)),
    ...(billing ? { source: 'subscription', subscription_id: billing.subscriptionId, cycle: billing.cycle } : {}),
    ...(origin.source ? { source: origin.source } : {}),
    id: prefixedId('pay', now.getTime()),
    created_at: now,
    updated_at: now,
  });
  await scheduleExpiration(trx, scope, row);
  // The link goes out by the channel after commit (phone → messaging, email → e-mail).
  await recordMessage(trx, scope, row, 'link', row.template_id, { notified: true }); // payment.created notified
  return row;
}

/**
 * POST /payments/{id}/refund: gives back everything paid of an approved payment (payment.refunded,
 * ledger refund). Anything but approved is refused with a validation error on status.
 */
export async function refundPayment(ctx: RequestContext, id: string): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const current = await loadPayment(scope, id, true);
    if (!PAYMENT_MACHINE.find(current.status, 'refund'))
      throw validationError({ status: [`the payment is ${current.status}; only an approved payment can be refunded`] });
    return toPaymentResponse(await applyPaymentTransition(trx, scope, current.id, 'refund'), ctx.deps.config.baseUrl);
  });
}

export async function getPayment(ctx: RequestContext, id: string): Promise<PaymentResponse> {
  return toPaymentResponse(await loadPayment(ctx, id), ctx.deps.config.baseUrl);
}

/** GET /payments. SPEC.md: an invalid `id` or `status` filter value gives an empty list, not an error. */
export async function listPayments(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(paymentList, query);
  let q = ctx.db.selectFrom('payments').selectAll().$call(inTenant(ctx));
  const f = list.filters;
  const nothing = sql<boolean>`false`;
  if (f.id !== undefined) q = PAYMENT_ID.test(f.id) ? q.where('id', '=', f.id) : q.where(nothing);
  if (f.status !== undefined)
    q = (PAYMENT_STATUSES as readonly string[]).includes(f.status) ? q.where('status', '=', f.status as PaymentStatus) : q.where(nothing);
  if (f.reference !== undefined) q = q.where('reference', '=', f.reference);
  if (f.external_id !== undefined) q = q.where('external_id', '=', f.external_id);
  const baseUrl = ctx.deps.config.baseUrl;
  return paginate(q, list, { path, query, table: 'payments', map: (row) => toPaymentResponse(row, baseUrl) });
}

/** The request fields a stored payment stands for (the base an update is merged onto). */
function inputOf(row: PaymentRow): PaymentInput {
  return {
    title: row.title,
    amount: row.amount === null ? null : toPesos(row.amount),
    open_amount: row.amount === null,
    description: row.description,
    reference: row.reference,
    external_id: row.external_id,
    currency: row.currency,
    phone: row.phone,
    email: row.email,
    template_id: row.template_id,
    target_wallet_id: row.target_wallet_id,
    partial_payment_config: row.partial_enabled
      ? { enabled: true, minimum_amount: row.partial_minimum === null ? null : toPesos(row.partial_minimum) }
      : null,
    options: row.rtkey_expires_in === null ? null : { rtkey: { expires_in: row.rtkey_expires_in } },
    splits: null,
    document_url: row.document_url,
    tax:
      row.tax_rate_bp === null && row.tax_amount === null
        ? null
        : {
            rate: row.tax_rate_bp === null ? null : fromBasisPoints(row.tax_rate_bp),
            amount: row.tax_amount === null ? null : toPesos(row.tax_amount),
          },
    allows: row.allows,
    expires_at: row.expires_at ? new Date(row.expires_at).toISOString() : null,
    expiration_date: null,
    redirect_url: row.redirect_url,
    metadata: row.metadata,
    test_scenario: row.test_scenario,
  };
}

/**
 * PUT /payments/{id}: fields as in create; unsent fields keep their value, `null` clears an
 * optional field. Refused (15007) once the payment is final; an attempt in progress refuses a
 * change of amount or tax (15004 payment_charge_in_progress). `status: paid_externally` marks it
 * paid outside Recaudo, through the transition table.
 */
export async function updatePayment(ctx: RequestContext, id: string, body: UpdatePaymentBody): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const current = await loadPayment(scope, id, true);
    if (UPDATE_REFUSED.includes(current.status))
      throw new ApiError('cant_update_payment', { message: `The payment is ${current.status}; it can no longer be updated.` });

    const { status: newStatus, ...fields } = body;
    const sent = new Set(Object.keys(fields).filter((k) => fields[k as keyof typeof fields] !== undefined));
    const merged: PaymentInput = { ...inputOf(current) };
    for (const key of sent) (merged as Record<string, unknown>)[key] = fields[key as keyof typeof fields];
    // Sending an amount makes an open link fixed; sending open_amount: true drops the amount.
    if (sent.has('amount') && fields.amount !== null && !sent.has('open_amount')) merged.open_amount = false;
    if (fields.open_amount === true && !sent.has('amount')) merged.amount = null;
    if (sent.has('expiration_date')) merged.expires_at = sent.has('expires_at') ? fields.expires_at : null;
    if (sent.has('expires_at') && !sent.has('expiration_date')) merged.expiration_date = null;
    // A new amount recomputes the tax of a rate (unless the update sends the tax too).
    if (sent.has('amount') && merged.tax && merged.tax.rate != null && !sent.has('tax')) merged.tax = { rate: merged.tax.rate, amount: null };

    const now = ctx.deps.clock.now();
    const rc: RuleContext = {
      db: trx,
      companyId: ctx.companyId,
      environment: ctx.environment,
      now,
      maxTransactionCop: await maxTransactionCop(trx, ctx.companyId),
      checks: (field) => sent.has(field),
      stored: { splits: current.splits, target_wallet_id: current.target_wallet_id, target_wallet_company_id: current.target_wallet_company_id },
    };
    const { errors, value } = await resolvePaymentFields(rc, merged);
    if (current.amount_paid > 0n) {
      // Money was received against this amount and currency: they may grow, not change kind.
      if (value.amount !== null && value.amount <= current.amount_paid)
        (errors.amount ??= []).push(`must be more than the ${toPesos(current.amount_paid)} already paid`);
      if (value.amount === null && current.amount !== null)
        (errors.open_amount ??= []).push('a partially paid payment cannot become an open-amount link');
      if (value.currency !== current.currency) (errors.currency ??= []).push('cannot change once part of the payment was paid');
    }
    if (Object.keys(errors).length) throw validationError(errors);

    const amountChanged = value.amount !== current.amount || value.currency !== current.currency;
    const taxChanged = value.tax_rate_bp !== current.tax_rate_bp || value.tax_amount !== current.tax_amount;
    if (current.status === 'in_progress' && (amountChanged || taxChanged || newStatus)) throw new ApiError('payment_charge_in_progress');

    const updated = await trx
      .updateTable('payments')
      .set({ ...columns(value), updated_at: now })
      .$call(inTenant(ctx))
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const expiresChanged = (updated.expires_at?.getTime() ?? null) !== (current.expires_at?.getTime() ?? null);
    if (expiresChanged) await scheduleExpiration(trx, scope, updated);
    const final = newStatus === 'paid_externally' ? await applyPaymentTransition(trx, scope, current.id, 'mark_paid_externally') : updated;
    return toPaymentResponse(final, ctx.deps.config.baseUrl);
  });
}

/** A template the payment's channel can send (422 on template_id otherwise). */
async function checkTemplate(db: Executor, templateId: string, channel: PaymentRow['channel']): Promise<void> {
  const template = await findTemplate(db, templateId);
  const problem = !template
    ? 'no such template (see GET /v1/templates)'
    : !template.selectable
      ? 'the template is not selectable'
      : channel === 'messaging' && template.provider === 'email'
        ? 'an e-mail template cannot be sent by the messaging channel (phone)'
        : channel === 'email' && template.provider !== 'email'
          ? `a ${template.provider} template cannot be sent by e-mail`
          : null;
  if (problem) throw validationError({ template_id: [problem] });
}

/**
 * POST /payments/{id}: sends the link again by the payment's channel, optionally with another
 * template (which the payment keeps). A `resend` message is recorded and sent after commit; the
 * portal and manual channels only count the resend.
 */
export async function resendPayment(ctx: RequestContext, id: string, templateId: string | null | undefined): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const current = await loadPayment({ ...ctx, db: trx }, id, true);
    if (!RESENDABLE.includes(current.status))
      throw new ApiError('cant_retry_payment', { message: `The payment is ${current.status}; it cannot be resent.` });
    if (templateId != null) await checkTemplate(trx, templateId, current.channel);
    return toPaymentResponse(await resendIn(trx, { ...ctx, db: trx }, current.id, templateId), ctx.deps.config.baseUrl);
  });
}

/** Counts a resend and records its message, in the caller's transaction. */
async function resendIn(trx: Transaction<DB>, scope: ServiceScope, paymentId: string, templateId?: string | null): Promise<PaymentRow> {
  const now = scope.deps.clock.now();
  const row = await trx
    .updateTable('payments')
    .set({
      resend_count: sql<number>`resend_count + 1`,
      last_resent_at: now,
      updated_at: now,
      ...(templateId != null ? { template_id: templateId } : {}),
    })
    .$call(inTenant(scope))
    .where('id', '=', paymentId)
    .returningAll()
    .executeTakeFirstOrThrow();
  return withMessage(row, await recordMessage(trx, scope, row, 'resend', row.template_id));
}

/**
 * A reminder of an unpaid link (a subscription's dunning): sent again by its channel like
 * POST /payments/{id} without a template; nothing when the payment can no longer be paid.
 */
export async function remindPaymentIn(trx: Transaction<DB>, scope: ServiceScope, paymentId: string): Promise<boolean> {
  const current = await trx.selectFrom('payments').select('status').$call(inTenant(scope)).where('id', '=', paymentId).executeTakeFirst();
  if (!current || !RESENDABLE.includes(current.status)) return false;
  await resendIn(trx, scope, paymentId);
  return true;
}

/** DELETE /payments/{id}: cancels (payment.deleted); `notify` asks the channel to tell the payer. */
export async function cancelPayment(ctx: RequestContext, id: string, notify: boolean): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const current = await loadPayment(scope, id, true);
    if (current.source === 'utility') throw new ApiError('cant_cancel_payment');
    if (!PAYMENT_MACHINE.find(current.status, 'cancel')) throw stateError(current.status);
    const row = await applyPaymentTransition(trx, scope, current.id, 'cancel', { cancel_notify: notify });
    if (notify) await recordMessage(trx, scope, row, 'cancellation', null, { notified: true }); // payment.deleted notified
    return toPaymentResponse(row, ctx.deps.config.baseUrl);
  });
}

/**
 * POST /payments/{id}/resolve (test payments, test key): settles the attempt in progress with the
 * chosen outcome, or records a new sandbox attempt already settled. Goes through the same intent
 * service the payer pages and rails use, so the same transitions and events follow.
 */
export async function resolvePayment(
  ctx: RequestContext,
  id: string,
  body: { action: 'approve' | 'reject'; remarks?: string | null; amount?: number | string | null },
): Promise<PaymentResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const current = await loadPayment(scope, id, true);
    if (!ctx.isTest || current.environment !== 'test')
      throw new ApiError('test_only', { message: 'Only a test payment can be resolved, with a test key.' });
    if (!RESOLVABLE.includes(current.status)) {
      throw new ApiError('not_resolvable', {
        message: `The payment is ${current.status}; only a pending, in_progress or declined test payment can be resolved.`,
      });
    }
    const reject = body.action === 'reject';
    if (reject && !body.remarks) throw validationError({ remarks: [`is required to reject: one of ${REJECTION_REASONS.join(', ')}`] });
    if (reject && !(REJECTION_REASONS as readonly string[]).includes(body.remarks!))
      throw validationError({ remarks: [`must be one of ${REJECTION_REASONS.join(', ')}`] });

    let intent = await findOpenIntent(trx, scope, current.id);
    // In an environment a provider's connector serves, attempts are settled only by the provider's word.
    if (await connectorServesPayments(ctx.deps, scope)) {
      throw new ApiError('not_resolvable', { message: `The payment cannot be resolved: ${CONNECTOR_HANDLES_PAYMENTS}.` });
    }
    if (!intent) {
      let amount: bigint | undefined;
      if (body.amount != null) {
        const parsed = parseMinor(body.amount);
        if (parsed === null || parsed === 0n) throw validationError({ amount: ['must be a positive amount in pesos with at most 2 decimals'] });
        amount = parsed;
      } else if (current.amount === null) {
        throw validationError({ amount: ['is required to resolve an open-amount link without an attempt in progress'] });
      }
      intent = await startIntentIn(trx, scope, current.id, { method: 'sandbox', amount });
    }
    await settleIntentIn(trx, scope, intent.id, reject ? { status: 'declined', remarks: body.remarks! } : { status: 'approved' });
    const row = await loadPayment(scope, current.id);
    return toPaymentResponse(row, ctx.deps.config.baseUrl);
  });
}

const CONNECTOR_HANDLES_PAYMENTS =
  "a payment provider's connector serves this environment: only the provider's own word settles its attempts; sandbox helpers and test scenarios are for the built-in sandbox";

/** Whether a connector serves any payer method in this scope (test scenarios would not reach it). The scope's db: the caller's transaction. */
async function connectorServesPayments(deps: AppDeps, scope: RailScope): Promise<boolean> {
  for (const rail of ['card', 'banklink', 'walleta', 'walletb'] as const) if (await deps.rails.connectors.find(scope, rail)) return true;
  return false;
}

/** The expiration job: expires the payment when its time has come and its state allows it. */
export async function runExpiration(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: ServiceScope = {
    companyId: String(payload.company_id),
    environment: payload.environment === 'live' ? 'live' : 'test',
    db: deps.database.db,
    deps,
  };
  const id = String(payload.payment_id);
  await deps.database.db.transaction().execute(async (trx: Transaction<DB>) => {
    const tx = { ...scope, db: trx };
    const row = await lockPayment(trx, tx, id);
    const now = deps.clock.now();
    if (!row || !row.expires_at || new Date(row.expires_at).getTime() > now.getTime()) return;
    if (row.status === 'in_progress') {
      // A payer is paying right now: let the attempt finish, then look again.
      await deps.jobs.enqueue(trx, EXPIRE_JOB, payload, new Date(now.getTime() + EXPIRY_RECHECK_MS));
      return;
    }
    if (!PAYMENT_MACHINE.find(row.status, 'expire')) return;
    await applyPaymentTransition(trx, tx, id, 'expire');
  });
}

export function registerPaymentJobs(deps: AppDeps): void {
  deps.jobs.register(EXPIRE_JOB, (payload) => runExpiration(deps, payload));
  deps.jobs.register(POLL_ATTEMPT_JOB, (payload) => runAttemptPoll(deps, payload));
  registerMessageHandlers(deps);
}

/** The payment as it stands once its message was recorded (recordMessage wrote payments.message_*). */
function withMessage(row: PaymentRow, message: MessageRow | null): PaymentRow {
  return message ? { ...row, message_status: message.status, message_remarks: message.status === 'failed' ? message.error : null } : row;
}
