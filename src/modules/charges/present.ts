import type { Selectable } from 'kysely';
import { fromBasisPoints, toPesos } from '../../platform/money.ts';
import { iso } from '../../platform/scope.ts';
import type { ChargeResponse } from './schemas.ts';
import type { ChargesTable } from './tables.ts';

export type ChargeRow = Selectable<ChargesTable>;

/** Row → API object (and event `data`): the only place a charge's minor units become pesos. */
export function toChargeResponse(row: ChargeRow): ChargeResponse {
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
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
