import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * The cards module's tables (migrations/0008_charges.sql). No column ever holds a full card number
 * or a security code: brand, last four digits, expiry, holder, a keyed fingerprint and the outcome
 * class the (sandbox) card processor gives the number.
 */
export interface CardsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  holder_name: string;
  fingerprint: string;
  authorization: boolean;
  outcome_class: string;
  source: 'api' | 'token';
  /** The connector's opaque reference to the card saved at the provider (migrations/0016). */
  rail_source: string | null;
  /** JSON: the provider's terms the payer accepted, and when. */
  rail_acceptance: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface CardTokensTable {
  company_id: string;
  environment: Environment;
  id: string;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  holder_name: string;
  fingerprint: string;
  outcome_class: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  card_id: string | null;
  /** The provider's token of the same card, when a connector served cards (migrations/0016). */
  rail_token: string | null;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    cards: CardsTable;
    card_tokens: CardTokensTable;
  }
}
