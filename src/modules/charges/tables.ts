import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { Currency } from '../../platform/money.ts';
import type { StoredSplit } from '../payments/tables.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;
type Money = ColumnType<bigint, bigint, bigint>;

/** SPEC.md "Charge states", exactly. */
export const CHARGE_STATUSES = ['created', 'processing', 'paid', 'failed', 'refunded'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/**
 * How a charge collects: it debits a saved card or a registered account (direct debit), or the
 * payer acts on a rail: a bank-transfer link (banklink), an instant-key QR (rtkey), a wallet
 * request-to-pay (walleta, walletb). docs/charges.md.
 */
export const PAYMENT_METHOD_TYPES = ['card', 'account', 'banklink', 'rtkey', 'walleta', 'walletb'] as const;
export type PaymentMethodType = (typeof PAYMENT_METHOD_TYPES)[number];
/** The methods where the payer acts (migrations/0009_charge_rails.sql). */
export const PAYER_METHODS = ['banklink', 'rtkey', 'walleta', 'walletb'] as const satisfies readonly PaymentMethodType[];
export type PayerMethod = (typeof PAYER_METHODS)[number];
export const isPayerMethod = (m: PaymentMethodType): m is PayerMethod => (PAYER_METHODS as readonly string[]).includes(m);

/** The charges module's tables (migrations/0008_charges.sql), merged into the shared DB type. */
export interface ChargesTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: ChargeStatus;
  title: string;
  currency: Currency;
  amount: Money;
  customer_id: string;
  payment_method_type: PaymentMethodType;
  account_id: string | null;
  card_id: string | null;
  external_id: string | null;
  idempotency_key: string | null;
  splits: Json<StoredSplit[]>;
  metadata: Json<Record<string, string> | null> | null;
  test_scenario: string | null;
  /** Card charges: monthly installments (null: 1; migrations/0016). */
  installments?: number | null;
  /** Banklink through a connector: the provider's bank-session URL, the charge's `url` (migrations/0016). */
  rail_url?: string | null;
  remarks: string | null;
  network_id: string | null;
  /** JSON: the payer's consent to a provider's contracts, as the company asserted it (accept_terms; migrations/0040). */
  provider_consent: ColumnType<string | null, string | null | undefined, string | null>;
  /** The dispute the rail opened on this paid charge (disputes module; migrations/0031). */
  dispute_id?: string | null;
  intent_id: string;
  resolved: ColumnType<boolean, boolean | undefined, boolean>;
  paid_at: Timestamp | null;
  failed_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  refunded_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  // Rails the payer acts on (migrations/0009_charge_rails.sql); null for card and account charges.
  bank_id: string | null;
  redirect_url: string | null;
  reference: string | null;
  phone: string | null;
  document_type: string | null;
  document_number: string | null;
  qr_payload: string | null;
  expires_at: Timestamp | null;
}

export interface ChargeRefundsTable {
  company_id: string;
  environment: Environment;
  id: string;
  charge_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  amount: Money;
  currency: Currency;
  created_at: Timestamp;
  updated_at: Timestamp;
  succeeded_at: Timestamp | null;
  /** A refund the rail refused (migrations/0040): when, and the provider's reason. */
  failed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    charges: ChargesTable;
    charge_refunds: ChargeRefundsTable;
  }
}
