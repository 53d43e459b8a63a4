import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** docs/utilities.md: created → (processing →) paid | rejected. */
export const UTILITY_STATUSES = ['created', 'processing', 'paid', 'rejected'] as const;
export type UtilityStatus = (typeof UTILITY_STATUSES)[number];

/** The utilities module's tables (migrations/0032_issuing_utilities.sql), merged into the shared DB type. */
export interface UtilitiesTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: UtilityStatus;
  provider_id: string;
  provider_name: string;
  reference: string;
  amount: ColumnType<bigint, bigint, never>;
  currency: string;
  due_date: ColumnType<string | null, string | null, never>;
  holder_name: string | null;
  payment_id: string | null;
  link_id: string | null;
  metadata: ColumnType<Record<string, string> | null, string | null, string | null>;
  remarks: string | null;
  network_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  processed_at: Timestamp | null;
  paid_at: Timestamp | null;
  rejected_at: Timestamp | null;
}

export interface UtilityPaymentLinksTable {
  company_id: string;
  environment: Environment;
  id: string;
  provider_id: string;
  provider_name: string;
  reference: string;
  amount: ColumnType<bigint, bigint, never>;
  payment_id: string;
  created_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    utilities: UtilitiesTable;
    utility_payment_links: UtilityPaymentLinksTable;
  }
}
