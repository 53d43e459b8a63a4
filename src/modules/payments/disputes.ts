import type { Transaction } from 'kysely';
import type { AppDeps, ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import type { DisputeReporting } from '../../rails/disputes.ts';
import type { MoneyRail } from '../../rails/index.ts';
import { lockPayment, type IntentRow, type PaymentRow } from './queries.ts';
import { applyPaymentTransition } from './transition.ts';

/**
 * What the payments module does for a dispute (docs/disputes.md): SPEC.md names `disputed` among
 * the payment states, so the payment moves approved → disputed (payment.disputed), and back to
 * approved when the dispute is won, or to refunded (payment.refunded) when it is lost — the
 * lifecycle table's rows `dispute`, `dispute_won`, `dispute_lost`. The money is the dispute's
 * (held, released or paid out by the disputes module), never posted here.
 */

/** The payment, locked (404 when it is not the scope's). */
export async function lockPaymentForDispute(trx: Transaction<DB>, scope: Tenant, paymentId: string): Promise<PaymentRow> {
  const payment = await lockPayment(trx, scope, paymentId);
  if (!payment) throw new ApiError('record_not_found');
  return payment;
}

/** The attempt whose rail disputes the (locked) payment: its last approved one; 422 unless the payment is approved. */
export async function disputableAttempt(trx: Transaction<DB>, scope: Tenant, payment: PaymentRow): Promise<IntentRow> {
  if (payment.status !== 'approved' || payment.amount_paid <= 0n) {
    throw validationError({ status: [`the payment is ${payment.status}; only an approved payment (paid through Recaudo) can be disputed`] });
  }
  const intent = await trx
    .selectFrom('payment_intents')
    .selectAll()
    .$call(inTenant(scope))
    .where('payment_id', '=', payment.id)
    .where('status', '=', 'approved')
    .orderBy('paid_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (!intent) throw validationError({ status: ['the payment has no approved attempt to dispute'] });
  return intent;
}

/** The payment an attempt (pi_…) belongs to, or null (a charge's attempt has none). */
export async function paymentOfIntent(trx: Transaction<DB>, scope: Tenant, intentId: string): Promise<string | null> {
  const row = await trx.selectFrom('payment_intents').select('payment_id').$call(inTenant(scope)).where('id', '=', intentId).executeTakeFirst();
  return row?.payment_id ?? null;
}

/** The rail an attempt was paid on (a sandbox attempt, POST /payments/{id}/resolve: the card rail's sandbox). */
export async function intentDisputeRail(
  deps: AppDeps,
  scope: Tenant,
  intent: Pick<IntentRow, 'method'>,
): Promise<{ rail: MoneyRail; port: DisputeReporting }> {
  const rail = (intent.method === 'sandbox' ? 'card' : intent.method) as MoneyRail;
  return { rail, port: (await deps.rails.money(scope, rail)) as DisputeReporting };
}

/** approved → disputed (payment.disputed), in the dispute's transaction. */
export function markPaymentDisputed(trx: Transaction<DB>, scope: ServiceScope, paymentId: string): Promise<PaymentRow> {
  return applyPaymentTransition(trx, scope, paymentId, 'dispute');
}

/** The dispute closed: won → approved; lost → refunded (payment.refunded). */
export function closePaymentDispute(trx: Transaction<DB>, scope: ServiceScope, paymentId: string, outcome: 'won' | 'lost'): Promise<PaymentRow> {
  return applyPaymentTransition(trx, scope, paymentId, outcome === 'won' ? 'dispute_won' : 'dispute_lost');
}
