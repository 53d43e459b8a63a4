import type { Selectable } from 'kysely';
import { iso } from '../../platform/scope.ts';
import { fromBasisPoints, toPesos } from '../../platform/money.ts';
import type { IntentResponse, PaymentResponse } from './schemas.ts';
import type { PaymentIntentsTable, PaymentMessageStatus, PaymentsTable } from './tables.ts';

/** Rows → API objects: the only place minor units become pesos. */

/** Where the payer page of a payment is served (absolute, from PUBLIC_BASE_URL). */
export function paymentLink(baseUrl: string, id: string): string {
  return `${baseUrl}/pay/${id}`;
}

export function toPaymentResponse(row: Selectable<PaymentsTable>, baseUrl: string): PaymentResponse {
  const amount = row.amount;
  return {
    id: row.id,
    status: row.status,
    title: row.title,
    description: row.description,
    amount: amount === null ? null : toPesos(amount),
    open_amount: amount === null,
    amount_paid: toPesos(row.amount_paid),
    amount_due: amount === null ? null : toPesos(amount > row.amount_paid ? amount - row.amount_paid : 0n),
    currency: row.currency,
    reference: row.reference,
    external_id: row.external_id,
    phone: row.phone,
    email: row.email,
    channel: row.channel,
    template_id: row.template_id,
    target_wallet_id: row.target_wallet_id,
    partial_payment_config:
      row.partial_enabled && row.partial_minimum !== null ? { enabled: true, minimum_amount: toPesos(row.partial_minimum) } : null,
    options: { rtkey: row.rtkey_expires_in === null ? null : { expires_in: row.rtkey_expires_in } },
    splits: row.splits.map((s) => ({
      account_id: s.account_id,
      wallet_id: s.wallet_id ?? '',
      amount: s.amount === null ? null : toPesos(BigInt(s.amount)),
      percentage: s.percentage_bp === null ? null : fromBasisPoints(s.percentage_bp),
    })),
    document_url: row.document_url,
    tax:
      row.tax_rate_bp === null && row.tax_amount === null
        ? null
        : {
            rate: row.tax_rate_bp === null ? null : fromBasisPoints(row.tax_rate_bp),
            amount: row.tax_amount === null ? null : toPesos(row.tax_amount),
          },
    allows: row.allows,
    expires_at: row.expires_at ? iso(row.expires_at) : null,
    redirect_url: row.redirect_url,
    metadata: row.metadata ?? {},
    payment_link: paymentLink(baseUrl, row.id),
    source: row.source,
    subscription_id: row.subscription_id ?? null,
    cycle: row.cycle ?? null,
    test_scenario: row.test_scenario,
    resend_count: row.resend_count,
    last_resent_at: row.last_resent_at ? iso(row.last_resent_at) : null,
    paid_at: row.paid_at ? iso(row.paid_at) : null,
    cancelled_at: row.cancelled_at ? iso(row.cancelled_at) : null,
    receipts: row.receipts ?? true,
    message: row.message_status ? { status: row.message_status as PaymentMessageStatus, remarks: row.message_remarks ?? null } : null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toIntentResponse(row: Selectable<PaymentIntentsTable>): IntentResponse {
  return {
    id: row.id,
    payment_id: row.payment_id,
    status: row.status,
    method: row.method,
    amount: toPesos(row.amount),
    currency: row.currency,
    remarks: row.remarks,
    external_id: row.external_id,
    network_id: row.network_id,
    charge_id: row.charge_id,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    paid_at: row.paid_at ? iso(row.paid_at) : null,
  };
}
