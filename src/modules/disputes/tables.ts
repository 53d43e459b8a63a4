import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * A dispute's statuses (docs/disputes.md), after Stripe's: open and waiting for the network's
 * decision (`needs_response`), then `won` (the money comes back to the company) or `lost`.
 */
export const DISPUTE_STATUSES = ['needs_response', 'won', 'lost'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/** The disputes module's table (migrations/0031_disputes_payment_issues.sql), merged into the shared DB type. */
export interface DisputesTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: DisputeStatus;
  charge_id: string | null;
  payment_id: string | null;
  intent_id: string | null;
  amount: ColumnType<bigint, bigint, bigint>;
  currency: string;
  reason: string;
  rail: string;
  rail_dispute_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  closed_at: Timestamp | null;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    disputes: DisputesTable;
  }
}
