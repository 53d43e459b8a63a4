import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;
type Money = ColumnType<bigint, bigint, bigint>;

export const PAYMENT_STATUSES = [
  'pending',
  'in_progress',
  'declined',
  'approved',
  'paid_externally',
  'cancelled',
  'expired',
  'refunded',
  'disputed',
  'partially_paid',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export { CURRENCIES, type Currency } from '../../platform/money.ts';
import type { Currency } from '../../platform/money.ts';

export const PAYMENT_METHODS = ['card', 'banklink', 'rtkey', 'walleta', 'walletb'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];

export const CHANNELS = ['messaging', 'email', 'portal', 'manual'] as const;
export type Channel = (typeof CHANNELS)[number];

export const INTENT_STATUSES = ['in_progress', 'approved', 'declined'] as const;
export type IntentStatus = (typeof INTENT_STATUSES)[number];

/** A split as stored: amounts in minor units, percentages in basis points (1 % = 100). */
export interface StoredSplit {
  account_id: string | null;
  wallet_id: string | null;
  amount: string | null;
  percentage_bp: number | null;
}

/** The payments module's tables (migrations/0005_payments.sql), merged into the shared DB type. */
export interface PaymentsTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: PaymentStatus;
  source: ColumnType<string, string | undefined, string>;
  /** The subscription and cycle this payment bills (migrations/0021_subscriptions.sql). */
  subscription_id: ColumnType<string | null, string | null | undefined, string | null>;
  cycle: ColumnType<number | null, number | null | undefined, number | null>;
  title: string;
  description: string | null;
  currency: Currency;
  amount: Money | null;
  amount_paid: ColumnType<bigint, bigint | undefined, bigint>;
  partial_enabled: boolean;
  partial_minimum: Money | null;
  reference: string | null;
  external_id: string | null;
  phone: string | null;
  email: string | null;
  channel: Channel;
  template_id: string | null;
  target_wallet_id: string | null;
  target_wallet_company_id: string | null;
  splits: Json<StoredSplit[]>;
  document_url: string | null;
  tax_rate_bp: number | null;
  tax_amount: Money | null;
  allows: Json<PaymentMethod[]>;
  rtkey_expires_in: number | null;
  expires_at: Timestamp | null;
  redirect_url: string | null;
  metadata: Json<Record<string, string> | null> | null;
  test_scenario: string | null;
  resend_count: ColumnType<number, number | undefined, number>;
  last_resent_at: Timestamp | null;
  cancel_notify: boolean | null;
  paid_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The latest message's status and why it failed (migration 0044); null before any message. */
  message_status: ColumnType<string | null, string | null | undefined, string | null>;
  /** Whether the payer gets a receipt once paid (migration 0046; `receipts: false` at create). */
  receipts: ColumnType<boolean, boolean | undefined, boolean>;
  message_remarks: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface PaymentIntentsTable {
  company_id: string;
  environment: Environment;
  id: string;
  /** Null for the intent of a charge (migrations/0008_charges.sql): a charge is its own attempt. */
  payment_id: string | null;
  status: IntentStatus;
  method: string;
  amount: Money;
  currency: Currency;
  remarks: string | null;
  external_id: string | null;
  network_id: string | null;
  charge_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  paid_at: Timestamp | null;
  /**
   * migrations/0041: a payment-page attempt through a provider records the provider's contracts
   * the payer accepted first (their permalinks) and when; null for every other attempt.
   */
  consent_terms_permalink: string | null;
  consent_personal_data_permalink: string | null;
  consent_accepted_at: Timestamp | null;
}

export const MESSAGE_CHANNELS = ['messaging', 'email'] as const;
export type MessageChannel = (typeof MESSAGE_CHANNELS)[number];
export const MESSAGE_KINDS = ['link', 'resend', 'cancellation', 'receipt'] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];
export const MESSAGE_STATUSES = ['pending', 'sent', 'delivered', 'failed', 'replied'] as const;
export type PaymentMessageStatus = (typeof MESSAGE_STATUSES)[number];

/** migrations/0006_payment_messages.sql: every message that carries a payment to its payer. */
export interface PaymentMessagesTable {
  company_id: string;
  environment: Environment;
  id: string;
  payment_id: string;
  channel: MessageChannel;
  kind: MessageKind;
  recipient: string;
  template_id: string | null;
  status: PaymentMessageStatus;
  provider_message_id: string | null;
  error: string | null;
  reply_text: string | null;
  replied_at: Timestamp | null;
  attempts: ColumnType<number, number | undefined, number>;
  /** Not sent before this time: a collection message due outside the contact hours (0022). */
  held_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** payment.issue records (migrations/0031): one per (attempt, code). */
export interface PaymentIssuesTable {
  company_id: string;
  environment: Environment;
  id: string;
  payment_id: string;
  intent_id: string;
  code: 'late_approval';
  amount: ColumnType<bigint, bigint, bigint>;
  currency: string;
  message: string;
  created_at: ColumnType<Date, Date | string, Date | string>;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    payments: PaymentsTable;
    payment_intents: PaymentIntentsTable;
    payment_messages: PaymentMessagesTable;
    payment_issues: PaymentIssuesTable;
  }
}
