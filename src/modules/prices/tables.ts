import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** The price catalogue (migrations/0010_invoicing_setup.sql). Amounts in cents, rates in basis points. */
export interface PricesTable {
  company_id: string;
  environment: Environment;
  id: string;
  name: string;
  unit_amount: ColumnType<bigint, bigint, bigint>;
  currency: string;
  tax_type: 'iva' | 'inc';
  tax_rate_bp: number;
  tax_behavior: 'exclusive' | 'inclusive';
  active: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    prices: PricesTable;
  }
}
