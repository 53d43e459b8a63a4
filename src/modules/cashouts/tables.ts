import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** PRODUCT.md "Cash-outs and wallets": the statuses, exactly. */
export const CASHOUT_STATUSES = ['created', 'require_approval', 'processing', 'completed', 'rejected', 'cancelled'] as const;
export type CashoutStatus = (typeof CASHOUT_STATUSES)[number];

export const CASHOUT_METHODS = ['ACH', 'TURBO', 'INSTANT'] as const;
export type CashoutMethod = (typeof CASHOUT_METHODS)[number];

/** The cash-outs module's tables (migrations/0019_cashouts.sql), merged into the shared DB type. */
export interface CashoutsTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: CashoutStatus;
  amount: ColumnType<bigint, bigint, bigint>;
  currency: string;
  method: CashoutMethod;
  account_id: string;
  customer_id: string;
  origin: 'customer' | 'balance';
  source: 'company_available' | 'customer_wallet';
  external_id: string | null;
  description: string | null;
  remarks: string | null;
  test_scenario: string | null;
  idempotency_key: string | null;
  network_id: string | null;
  expected_arrival_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  processed_at: Timestamp | null;
  completed_at: Timestamp | null;
  rejected_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  /** Principals (migration 0043): an API key's id (`key_…`); null for work no key started. */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  approved_by: ColumnType<string | null, string | null | undefined, string | null>;
  rejected_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CompanyPayoutAccountsTable {
  company_id: string;
  environment: Environment;
  account_id: string;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    cashouts: CashoutsTable;
    company_payout_accounts: CompanyPayoutAccountsTable;
  }
}
