import { chargeRail } from './rails.ts';
import type { RequestContext } from '../../platform/context.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { findBanklinkBank, takesBanklink } from '../banks/service.ts';
import { customerExists } from '../accounts/queries.ts';
import { ACCEPT_TERMS_REQUIRED, apiConsent } from '../../platform/consent.ts';
import { collectAmount, collectMetadata, createPayerCharge, fieldErrors, lockKey, payerRuleOf } from './collect.ts';
import { BANKLINK_DUPLICATE_WINDOW_MS, BANKLINK_MINIMUM_PESOS, BANKLINK_SESSION_MINUTES, type BanklinkBody } from './collect-schemas.ts';
import type { ChargeResponse } from './schemas.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * POST /charges/banklink (docs/charges.md "Banklink"): a bank-transfer link. The charge answers
 * `processing` with `url`, the (sandbox) bank's page where the payer approves or declines; the
 * bank then sends the payer to `redirect_url` with `charge_id`. Same customer, bank and amount
 * created less than 2 minutes ago is 429 15005, whatever external_id or reference say: the check
 * and the insert run under an advisory lock on (company, environment, customer, bank, amount), so
 * it holds under concurrency on both engines.
 */
export async function createBanklinkCharge(ctx: RequestContext, body: BanklinkBody, idempotencyKey: string | null): Promise<ChargeResponse> {
  const rail = await chargeRail(ctx.deps, ctx, 'banklink'); // a live key without a connector: refused before anything else
  const { errors, add } = fieldErrors();
  const amount = await collectAmount(ctx, body.amount, BANKLINK_MINIMUM_PESOS, add);
  const customerId = body.customer_id.toLowerCase();
  if (!(await customerExists(ctx.db, ctx, customerId))) add('customer_id', 'no such customer in this environment');
  else {
    const problem = await payerRuleOf(ctx, rail, customerId);
    if (problem) add('customer_id', problem);
  }
  const consented = apiConsent(ctx, rail, body.accept_terms);
  if (consented.missing) add('accept_terms', ACCEPT_TERMS_REQUIRED);
  const bank = await findBanklinkBank(ctx.db, body.bank_id, rail);
  if (!bank || bank.is_platform) add('bank_id', 'no such bank');
  else if (!(await takesBanklink(rail, bank))) {
    add('bank_id', `${bank.name} does not take bank-transfer (banklink) payments; see GET /v1/banks?banklink=true`);
  }
  const metadata = collectMetadata(body.metadata, add);
  if (Object.keys(errors).length) throw validationError(errors);

  const bankId = bank!.id;
  return createPayerCharge(
    ctx,
    {
      method: 'banklink',
      title: body.title ?? (body.reference ? `Pago ${body.reference}` : 'Pago por transferencia bancaria'),
      amount: amount!,
      customer_id: customerId,
      external_id: body.external_id ?? null,
      metadata: metadata ? JSON.stringify(metadata) : null,
      bank_id: bankId,
      redirect_url: body.redirect_url,
      reference: body.reference ?? null,
      provider_consent: consented.consent ? JSON.stringify(consented.consent) : null,
      lifetimeMs: BANKLINK_SESSION_MINUTES * 60_000,
    },
    idempotencyKey,
    async (trx) => {
      await lockKey(trx, `banklink|${ctx.companyId}|${ctx.environment}|${customerId}|${bankId}|${amount}`);
      // Read after the lock: a request that waited sees the time the other one's charge was made.
      const now = ctx.deps.clock.now();
      const previous = await trx
        .selectFrom('charges')
        .select(['id', 'created_at'])
        .$call(inTenant(ctx))
        .where('payment_method_type', '=', 'banklink')
        .where('customer_id', '=', customerId)
        .where('bank_id', '=', bankId)
        .where('amount', '=', amount!)
        .where('created_at', '>', new Date(now.getTime() - BANKLINK_DUPLICATE_WINDOW_MS))
        .orderBy('created_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (previous) {
        const elapsedMs = Math.max(0, now.getTime() - new Date(previous.created_at).getTime());
        throw new ApiError('banklink_payment_duplicate', {
          extra: {
            previous_payment_id: previous.id,
            previous_payment_created_at: new Date(previous.created_at).toISOString(),
            time_elapsed_seconds: Math.floor(elapsedMs / 1000),
          },
          headers: { 'retry-after': String(Math.max(1, Math.ceil((BANKLINK_DUPLICATE_WINDOW_MS - elapsedMs) / 1000))) },
        });
      }
    },
  );
}
