import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** docs/issuing.md: created (the issuer is issuing it) → active ↔ blocked → canceled (final). */
export const ISSUING_CARD_STATUSES = ['created', 'active', 'blocked', 'canceled'] as const;
export type IssuingCardStatus = (typeof ISSUING_CARD_STATUSES)[number];
export const ISSUING_CARD_TYPES = ['virtual', 'physical'] as const;
export type IssuingCardType = (typeof ISSUING_CARD_TYPES)[number];

/** The issuing module's tables (migrations/0032_issuing_utilities.sql), merged into the shared DB type. */
export interface IssuingCardsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  status: IssuingCardStatus;
  type: IssuingCardType;
  nickname: string | null;
  address: ColumnType<Record<string, string | null> | null, string | null, string | null>;
  brand: string | null;
  last_4: string | null;
  exp_month: number | null;
  exp_year: number | null;
  network_id: string | null;
  remarks: string | null;
  metadata: ColumnType<Record<string, string> | null, string | null, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  activated_at: Timestamp | null;
  canceled_at: Timestamp | null;
}

export interface IssuingAuthorizationsTable {
  company_id: string;
  environment: Environment;
  id: string;
  card_id: string;
  customer_id: string;
  amount: ColumnType<bigint, bigint, never>;
  currency: string;
  merchant_name: string;
  ledger_transaction_id: string;
  created_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    issuing_cards: IssuingCardsTable;
    issuing_authorizations: IssuingAuthorizationsTable;
  }
}
