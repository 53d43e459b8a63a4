import type { AppDeps } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { prefixedId } from '../../platform/ids.ts';
import { toPesos } from '../../platform/money.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { toPaymentResponse } from './present.ts';
import { lockPayment } from './queries.ts';

/**
 * payment.issue (docs/payments.md "payment.issue"): a payment has a problem a person must look at.
 * The one trigger today: **late approval** — the rail (a connector's event or poll) reports an
 * attempt approved after Recaudo had already closed it as declined (the provider had no record of
 * it for an hour: TIMEOUT, or the payer abandoned it). Money moved at the provider that the
 * payment does not show; nothing is changed automatically (the payment may have been paid by
 * another attempt meanwhile, or cancelled or expired): the company reconciles it — refund the
 * payer at the provider, or mark the payment paid externally.
 *
 * Raised once per (attempt, code) — a unique index on payment_issues — so a rail repeating
 * itself emits one event. The event's data is the payment as it is now plus `issue`.
 */

export const PAYMENT_ISSUE_CODES = ['late_approval'] as const;
export type PaymentIssueCode = (typeof PAYMENT_ISSUE_CODES)[number];

/** The attempt `intentId` was approved by the rail after it was settled declined: raise late_approval once. True when raised now. */
export async function raiseLateApproval(deps: AppDeps, scope: Tenant, intentId: string): Promise<boolean> {
  return inTransaction(deps.database.db, async (trx) => {
    const intent = await trx.selectFrom('payment_intents').selectAll().$call(inTenant(scope)).where('id', '=', intentId).executeTakeFirst();
    if (!intent?.payment_id || intent.status !== 'declined') return false;
    // Lock order everywhere: the payment first.
    const payment = await lockPayment(trx, scope, intent.payment_id);
    if (!payment) return false;
    const now = deps.clock.now();
    const message = `The rail approved attempt ${intent.id} (${toPesos(intent.amount)} ${intent.currency}) after it was recorded as declined (${intent.remarks ?? 'no reason'}); the payment is ${payment.status}. Reconcile it: refund the payer at the provider or mark the payment paid externally.`;
    const inserted = await trx
      .insertInto('payment_issues')
      .values({
        company_id: scope.companyId,
        environment: scope.environment,
        id: prefixedId('pis', now.getTime()),
        payment_id: payment.id,
        intent_id: intent.id,
        code: 'late_approval',
        amount: intent.amount,
        currency: intent.currency,
        message,
        created_at: now,
      })
      .onConflict((oc) => oc.columns(['company_id', 'environment', 'intent_id', 'code']).doNothing())
      .returning(['id'])
      .executeTakeFirst();
    if (!inserted) return false;
    await emitEvent(
      { ...scope, db: trx, deps },
      'payment.issue',
      {
        ...toPaymentResponse(payment, deps.config.baseUrl),
        issue: { id: inserted.id, code: 'late_approval', intent_id: intent.id, amount: toPesos(intent.amount), message, created_at: iso(now) },
      },
      now,
    );
    return true;
  });
}
