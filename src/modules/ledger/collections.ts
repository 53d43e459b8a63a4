import type { Executor } from '../../platform/db/database.ts';
import type { Tenant } from '../../platform/scope.ts';
import './tables.ts';

/** One collection the ledger recorded: money a payer paid into the company's balance. */
export interface LedgerCollection {
  transactionId: string;
  /** What was paid: `charge` (a charge's id) or `payment_intent` (an attempt of a payment link). */
  sourceType: string;
  sourceId: string;
  currency: string;
  /** Minor units received from the payer (> 0). */
  amount: bigint;
  at: Date;
}

/**
 * The collections posted in [from, to) for a tenant, oldest first (reports: docs/reports.md). The
 * amount is what left `external_clearing` in each `collection` transaction: the payer's money,
 * before any split. A later refund or reversal does not remove a collection from its day.
 */
export async function collectionsBetween(db: Executor, scope: Tenant, from: Date, to: Date): Promise<LedgerCollection[]> {
  const rows = await db
    .selectFrom('ledger_transactions as t')
    .innerJoin('ledger_entries as e', (join) =>
      join.onRef('e.company_id', '=', 't.company_id').onRef('e.environment', '=', 't.environment').onRef('e.transaction_id', '=', 't.id'),
    )
    .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
    .select(['t.id', 't.source_type', 't.source_id', 't.currency', 't.created_at', 'e.amount'])
    .where('t.company_id', '=', scope.companyId)
    .where('t.environment', '=', scope.environment)
    .where('t.kind', '=', 'collection')
    .where('t.created_at', '>=', from)
    .where('t.created_at', '<', to)
    .where('a.kind', '=', 'external_clearing')
    .orderBy('t.created_at')
    .orderBy('t.id')
    .execute();
  return rows.map((r) => ({
    transactionId: r.id,
    sourceType: r.source_type,
    sourceId: r.source_id,
    currency: r.currency,
    amount: -BigInt(r.amount),
    at: new Date(r.created_at),
  }));
}
