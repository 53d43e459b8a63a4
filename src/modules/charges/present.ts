import type { Selectable } from 'kysely';
import { fromBasisPoints, toPesos } from '../../platform/money.ts';
import { qrPngDataUrl } from '../../rails/emvco.ts';
import { iso } from '../../platform/scope.ts';
import type { ChargeResponse } from './schemas.ts';
import type { ChargesTable } from './tables.ts';

export type ChargeRow = Selectable<ChargesTable>;

/** The payer's page of a banklink (the sandbox bank) or rtkey (the QR) charge. */
export function chargePageUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/pay/${id}`;
}

/**
 * Row → API object (and event `data`): the only place a charge's minor units become pesos.
 * `baseUrl` (config PUBLIC_BASE_URL) builds the payer's `url` of banklink and rtkey charges.
 */
export function toChargeResponse(row: ChargeRow, baseUrl: string): ChargeResponse {
  const payerPage = row.payment_method_type === 'banklink' || row.payment_method_type === 'rtkey';
  return {
    id: row.id,
    status: row.status,
    amount: toPesos(row.amount),
    currency: row.currency,
    title: row.title,
    customer_id: row.customer_id,
    payment_method_type: row.payment_method_type,
    account_id: row.account_id,
    card_id: row.card_id,
    external_id: row.external_id,
    splits: row.splits.map((s) => ({
      account_id: s.account_id,
      wallet_id: s.wallet_id ?? '',
      amount: s.amount === null ? null : toPesos(BigInt(s.amount)),
      percentage: s.percentage_bp === null ? null : fromBasisPoints(s.percentage_bp),
    })),
    metadata: row.metadata ?? {},
    remarks: row.remarks,
    test_scenario: row.test_scenario,
    network_id: row.network_id,
    payment_intent_id: row.intent_id,
    is_test: row.environment === 'test',
    paid_at: row.paid_at ? iso(row.paid_at) : null,
    failed_at: row.failed_at ? iso(row.failed_at) : null,
    cancelled_at: row.cancelled_at ? iso(row.cancelled_at) : null,
    refunded_at: row.refunded_at ? iso(row.refunded_at) : null,
    disputed: Boolean(row.dispute_id),
    dispute_id: row.dispute_id ?? null,
    bank_id: row.bank_id,
    redirect_url: row.redirect_url,
    reference: row.reference,
    url: row.rail_url ?? (payerPage ? chargePageUrl(baseUrl, row.id) : null),
    qr: row.qr_payload ? { payload: row.qr_payload, image: qrPngDataUrl(row.qr_payload) } : null,
    expires_at: row.expires_at ? iso(row.expires_at) : null,
    phone: row.phone,
    document_type: row.document_type,
    document: row.document_number,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
