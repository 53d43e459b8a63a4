import type { Transaction } from 'kysely';
import type { RequestContext, ServiceScope } from '../../platform/context.ts';
import type { WalletOutcome } from '../../rails/index.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import {
  collectAmount,
  collectMetadata,
  createPayerCharge,
  fieldErrors,
  isOverdue,
  lockKey,
  scopeOfContext,
  settlePayerChargeIn,
  type SettleOutcome,
  payerRuleOf,
} from './collect.ts';
import { chargeRail } from './rails.ts';
import { ACCEPT_TERMS_REQUIRED, apiConsent } from '../../platform/consent.ts';
import { WALLET_MINIMUM_PESOS, WALLETB_LIFETIME_MINUTES, type WalletaBody, type WalletbBody } from './collect-schemas.ts';
import { EXPIRED_REMARKS, FINAL, OTP_INVALID_REMARKS } from './lifecycle.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { loadCharge } from './queries.ts';
import type { ChargeResponse } from './schemas.ts';
import { applyChargeTransition } from './transition.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * Wallet request-to-pay (docs/charges.md "Wallet request-to-pay"). A request is a charge with
 * payment_method_type walleta or walletb: created, then processing once the wallet has it, then
 * paid or failed through the same transition table and events as any charge.
 */

const OPEN = ['created', 'processing'] as const;

/**
 * POST /request-to-pay/walleta: one open request per external_id (10141), checked and inserted
 * under an advisory lock on it (and a partial unique index behind that).
 */
export async function createWalletaRequest(ctx: RequestContext, body: WalletaBody, idempotencyKey: string | null): Promise<ChargeResponse> {
  const rail = await chargeRail(ctx.deps, ctx, 'walleta'); // a live key without a connector: refused before anything else
  const { errors, add } = fieldErrors();
  const amount = await collectAmount(ctx, body.amount, WALLET_MINIMUM_PESOS, add);
  const customerId = body.customer_id.toLowerCase();
  const customer = await ctx.db
    .selectFrom('customers')
    .select('id')
    .$call(inTenant(ctx))
    .where('id', '=', customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) add('customer_id', 'no such customer in this environment');
  else {
    const problem = await payerRuleOf(ctx, rail, customerId);
    if (problem) add('customer_id', problem);
  }
  const consented = apiConsent(ctx, rail, body.accept_terms);
  if (consented.missing) add('accept_terms', ACCEPT_TERMS_REQUIRED);
  const metadata = collectMetadata(body.metadata, add);
  if (Object.keys(errors).length) throw validationError(errors);

  return createPayerCharge(
    ctx,
    {
      method: 'walleta',
      title: body.title ?? 'Solicitud de pago con Billetera A',
      amount: amount!,
      customer_id: customerId,
      external_id: body.external_id,
      metadata: metadata ? JSON.stringify(metadata) : null,
      phone: body.phone,
      provider_consent: consented.consent ? JSON.stringify(consented.consent) : null,
    },
    idempotencyKey,
    async (trx) => {
      await lockKey(trx, `walleta|${ctx.companyId}|${ctx.environment}|${body.external_id}`);
      const open = await trx
        .selectFrom('charges')
        .select('id')
        .$call(inTenant(ctx))
        .where('payment_method_type', '=', 'walleta')
        .where('external_id', '=', body.external_id)
        .where('status', 'in', OPEN)
        .executeTakeFirst();
      if (open) {
        throw new ApiError('request_to_pay_in_progress', {
          message: `An open walleta request (${open.id}) has the same external_id; wait for it to end, or cancel it (POST /v1/charges/${open.id}/cancel).`,
          extra: { previous_payment_id: open.id },
        });
      }
    },
  );
}

/** Document numbers compare without the dots, spaces and dashes people write them with. */
const normalDocument = (value: string) => value.replace(/[\s.-]/g, '').toUpperCase();

/**
 * POST /request-to-pay/walletb. The sandbox rule for 10126 (customer_data_invalid): the customer
 * must have that document (type and number) on file, and the phone must be the number of one of
 * the customer's ACTIVE accounts at a wallet bank (connection_type CONFIRMATION: Nequi,
 * Daviplata). One open request per wallet account (10141), under an advisory lock on the account.
 * The request lasts 10 minutes.
 */
export async function createWalletbRequest(ctx: RequestContext, body: WalletbBody, idempotencyKey: string | null): Promise<ChargeResponse> {
  await chargeRail(ctx.deps, ctx, 'walletb'); // a live key without a connector: refused before anything else
  const { errors, add } = fieldErrors();
  const amount = await collectAmount(ctx, body.amount, WALLET_MINIMUM_PESOS, add);
  const customerId = body.customer_id.toLowerCase();
  const customer = await ctx.db
    .selectFrom('customers')
    .select(['id', 'document_type', 'document_number'])
    .$call(inTenant(ctx))
    .where('id', '=', customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) add('customer_id', 'no such customer in this environment');
  const metadata = collectMetadata(body.metadata, add);
  if (Object.keys(errors).length) throw validationError(errors);

  if (!customer!.document_type || !customer!.document_number) {
    throw new ApiError('customer_data_invalid', {
      message: 'The customer has no document on file; set document_type and document_number on the customer first.',
    });
  }
  if (customer!.document_type !== body.document_type || normalDocument(customer!.document_number) !== normalDocument(body.document)) {
    throw new ApiError('customer_data_invalid', { message: "The document or its type does not match the customer's." });
  }
  const national = body.phone.slice(3);
  const account = await ctx.db
    .selectFrom('accounts')
    .innerJoin('banks', 'banks.id', 'accounts.bank_id')
    .select(['accounts.id'])
    .where('accounts.company_id', '=', ctx.companyId)
    .where('accounts.environment', '=', ctx.environment)
    .where('accounts.customer_id', '=', customerId)
    .where('accounts.deleted_at', 'is', null)
    .where('accounts.status', '=', 'ACTIVE')
    .where('accounts.subtype', '!=', 'WALLET')
    .where('banks.connection_type', '=', 'CONFIRMATION')
    .where('accounts.account_number', '=', national)
    .orderBy('accounts.created_at')
    .executeTakeFirst();
  if (!account) {
    throw new ApiError('customer_data_invalid', {
      message: 'The phone is not the number of an active wallet account (a CONFIRMATION bank: Nequi, Daviplata) of the customer.',
    });
  }

  return createPayerCharge(
    ctx,
    {
      method: 'walletb',
      title: body.title ?? 'Solicitud de pago con Billetera B',
      amount: amount!,
      customer_id: customerId,
      external_id: body.external_id ?? null,
      metadata: metadata ? JSON.stringify(metadata) : null,
      account_id: account.id,
      phone: body.phone,
      document_type: body.document_type,
      document_number: body.document,
      lifetimeMs: WALLETB_LIFETIME_MINUTES * 60_000,
    },
    idempotencyKey,
    async (trx) => {
      await lockKey(trx, `walletb|${ctx.companyId}|${ctx.environment}|${account.id}`);
      const open = await trx
        .selectFrom('charges')
        .selectAll()
        .$call(inTenant(ctx))
        .where('payment_method_type', '=', 'walletb')
        .where('account_id', '=', account.id)
        .where('status', 'in', OPEN)
        .executeTakeFirst();
      if (open && !isOverdue(open, ctx.deps.clock.now())) {
        throw new ApiError('request_to_pay_in_progress', {
          message: `An open walletb request (${open.id}) exists for this wallet account; it ends when confirmed, cancelled or after ${WALLETB_LIFETIME_MINUTES} minutes.`,
          extra: { previous_payment_id: open.id },
        });
      }
      // One past its 10 minutes whose expire job has not run yet: it expires here, first.
      if (open) await expireIn(trx, ctx, open);
    },
  );
}

async function expireIn(trx: Transaction<DB>, ctx: RequestContext, open: ChargeRow): Promise<void> {
  await applyChargeTransition(trx, { ...ctx, db: trx }, open.id, 'expire', { remarks: EXPIRED_REMARKS });
}

/** A wallet request of the caller by id (charge or intent id), else 404; another method is 10140. */
async function loadRequest(ctx: RequestContext, id: string, method: 'walleta' | 'walletb'): Promise<ChargeRow> {
  const charge = await loadCharge(ctx, id);
  if (charge.payment_method_type !== method) {
    throw new ApiError('request_to_pay_not_available', {
      message: `${id} is not a ${method} request (it is a ${charge.payment_method_type} charge).`,
    });
  }
  return charge;
}

/**
 * POST /request-to-pay/walleta/{id}/confirm (no x-idempotency: route config idempotent false). The
 * payer acted in the wallet app; the wallet's answer settles the request: paid, or failed with the
 * reason in remarks (HTTP 200 either way, as a rejected debit). Naturally idempotent: a request
 * already settled is answered as it is.
 */
export async function confirmWalleta(ctx: RequestContext, id: string): Promise<ChargeResponse> {
  const charge = await loadRequest(ctx, id, 'walleta');
  if (FINAL.includes(charge.status)) return toChargeResponse(charge, ctx.deps.config.baseUrl);
  const rail = await chargeRail(ctx.deps, ctx, 'walleta');
  // The outside-call protocol with nothing new to record (the request is recorded and its
  // reconcilers exist): the wallet is asked with a deadline, outside any transaction.
  const row = await runOutsideCall(requestOrigin(ctx), {
    rail: 'walleta',
    record: async () => ({ recorded: charge, resourceId: charge.id, safetyJobId: null }),
    call: (c) => rail.outcome({ reference: c.id, amount: c.amount, phone: c.phone! }),
    settle: async (trx, c, outcome) => {
      // A connector whose payer has not acted yet: the request stays open (its event or poll settles it).
      if (outcome.status === 'pending') return c;
      const s: ServiceScope = { ...scopeOfContext(ctx), db: trx, deps: ctx.deps };
      const settling: SettleOutcome = outcome.status === 'otp_invalid' ? { status: 'declined', remarks: OTP_INVALID_REMARKS } : outcome;
      return (await settlePayerChargeIn(trx, s, c.id, settling)).row;
    },
    // No answer from the wallet: the request stays as it is; its event, poll or expiry settles it.
    unknown: (c) => c,
    lost: () => new ApiError('service_unavailable', { message: 'The wallet answered but the outcome could not be saved; confirm again.' }),
  });
  ctx.deps.jobs.wake();
  return toChargeResponse(row, ctx.deps.config.baseUrl);
}

/** Why a walletb request that is not open takes no OTP. */
function notOpen(charge: ChargeRow): ApiError {
  if (charge.status === 'failed' && charge.remarks === OTP_INVALID_REMARKS) {
    return new ApiError('transaction_otp_invalid', {
      message: 'A wrong OTP already failed this request; it takes no other OTP. Create a new request.',
    });
  }
  if (charge.status === 'failed' && charge.remarks === EXPIRED_REMARKS) {
    return new ApiError('transaction_otp_expired', {
      message: `The request expired (${WALLETB_LIFETIME_MINUTES} minutes) and is failed. Create a new request.`,
    });
  }
  return new ApiError('request_to_pay_not_available', {
    message: `The walletb request is ${charge.status}${charge.remarks ? ` (${charge.remarks})` : ''}; it takes no OTP.`,
  });
}

/**
 * POST /request-to-pay/walletb/{id}/confirm with the payer's OTP. After the checks that change
 * nothing, the request's transaction commits (the outside-call protocol): what follows must stay even when the
 * answer is an error. Past its 10 minutes: failed (EXPIRED) and 10148. A wrong OTP: failed
 * (OTP_INVALID, charge.failed) and 10136; it takes no other OTP. The right one: the wallet's answer
 * by phone, paid or failed (HTTP 200).
 */
export async function confirmWalletb(ctx: RequestContext, id: string, otp: string): Promise<ChargeResponse> {
  const charge = await loadRequest(ctx, id, 'walletb');
  if (FINAL.includes(charge.status)) throw notOpen(charge);
  const rail = await chargeRail(ctx.deps, ctx, 'walletb');
  const expiredError = () =>
    new ApiError('transaction_otp_expired', { message: `The request expired (${WALLETB_LIFETIME_MINUTES} minutes); it is now failed.` });
  // The outside-call protocol with nothing to record: the commit keeps what follows even when the
  // answer is an error (the claim names the charge). Past its 10 minutes the wallet is not asked.
  const { settled, outcome } = await runOutsideCall(requestOrigin(ctx), {
    rail: 'walletb',
    record: async () => ({ recorded: charge, resourceId: charge.id, safetyJobId: null }),
    call: async (c): Promise<Exclude<WalletOutcome, { status: 'pending' }> | { status: 'expired' }> => {
      if (isOverdue(c, ctx.deps.clock.now())) return { status: 'expired' };
      const answer = await rail.outcome({ reference: c.id, amount: c.amount, phone: c.phone!, otp });
      // Not decided yet is no answer to an OTP: the payer retries it.
      if (answer.status === 'pending') throw new Error('the wallet has not decided yet');
      return answer;
    },
    settle: async (trx, c, answer) => {
      const s: ServiceScope = { ...scopeOfContext(ctx), db: trx, deps: ctx.deps };
      const settling: SettleOutcome = answer.status === 'otp_invalid' ? { status: 'declined', remarks: OTP_INVALID_REMARKS } : answer;
      return { settled: await settlePayerChargeIn(trx, s, c.id, settling), outcome: answer };
    },
    // No answer from the wallet: the request stays open until it answers or expires.
    unknown: (_c, error) => {
      throw new ApiError('service_unavailable', { message: `The wallet did not answer (${(error as Error)?.message}); retry with the same OTP.` });
    },
    lost: () => new ApiError('service_unavailable', { message: 'The wallet answered but the outcome could not be saved; retry with the same OTP.' }),
  });
  ctx.deps.jobs.wake();
  if (outcome.status === 'expired') throw settled.applied ? expiredError() : notOpen(settled.row);
  if (!settled.applied) throw notOpen(settled.row);
  if (settled.expired) throw expiredError();
  if (outcome.status === 'otp_invalid')
    throw new ApiError('transaction_otp_invalid', { message: 'The OTP is wrong; the request is now failed and takes no other OTP.' });
  return toChargeResponse(settled.row, ctx.deps.config.baseUrl);
}
