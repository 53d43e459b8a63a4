import type { ColumnType, Generated } from 'kysely';

/** Table types for kysely. Each module's tables are declared here so one Kysely<DB> serves all. */

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T = unknown> = ColumnType<T, string, string>;
export type Environment = 'test' | 'live';

export interface CompaniesTable {
  id: string;
  name: string;
  nit: string | null;
  features: Json<string[]>;
  max_transaction_cop: ColumnType<bigint, bigint | undefined, bigint>;
  /** Cash-outs above this (minor units) wait for approval (docs/cashouts.md); null: none. */
  cashout_approval_threshold: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface ApiKeysTable {
  id: string;
  company_id: string;
  environment: Environment;
  kind: 'secret' | 'publishable';
  key_hash: string;
  key_hint: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  revoked_at: Timestamp | null;
  /** A second (third…) secret key's name (`recaudo keys create --name`, migration 0043); null for the main key. */
  name: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface IdempotencyKeysTable {
  company_id: string;
  environment: Environment;
  key: string;
  fingerprint: string;
  status_code: number | null;
  response_body: string | null;
  completed_at: Timestamp | null;
  /** migrations/0014: the resource an early-committed claim recorded, and how long its request holds it. */
  resource_id: ColumnType<string | null, string | null | undefined, string | null>;
  held_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface RateLimitWindowsTable {
  bucket: string;
  window_start: ColumnType<bigint, bigint | number, bigint | number>;
  hits: number;
}

export interface EventsTable {
  company_id: string;
  environment: Environment;
  id: string;
  type: string;
  data: Json<Record<string, unknown>>;
  payload: string;
  created_at: Timestamp;
}

export interface JobsTable {
  id: string;
  kind: string;
  payload: Json<Record<string, unknown>>;
  run_at: Timestamp;
  attempts: Generated<number>;
  max_attempts: Generated<number>;
  locked_until: Timestamp | null;
  last_error: string | null;
  created_at: Generated<Date>;
}

export interface Address {
  line?: string;
  city_code?: string;
}

export interface CustomersTable {
  company_id: string;
  environment: Environment;
  id: string;
  type: 'natural' | 'company';
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
  document_type: string | null;
  document_number: string | null;
  document_verification: string | null;
  address: Json<Address | null> | null;
  fiscal_responsibilities: Json<string[] | null> | null;
  related_to: string | null;
  tax_regime: string | null;
  metadata: Json<Record<string, string> | null> | null;
  /** The test clock the customer lives on (migrations/0023_test_clocks.sql). */
  test_clock: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface BanksTable {
  id: string;
  code: string;
  name: string;
  supported_types: Json<string[]>;
  mask: string | null;
  transaction_avg: ColumnType<string | null, number | null, number | null>;
  available: boolean;
  banklink: boolean;
  connection_type: 'CONFIRMATION' | 'DATA';
  priority: number;
  instructions: string;
  is_platform: boolean;
  logo_text: string;
  logo_color: string;
}

export type AccountSubtype = 'SAVINGS' | 'CHECKING' | 'ELECTRONIC_DEPOSIT' | 'KEY' | 'WALLET';
export type AccountStatus = 'PENDING' | 'ACTIVE' | 'REJECTED' | 'INACTIVE';

export interface AccountsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  bank_id: string | null;
  subtype: AccountSubtype;
  status: AccountStatus;
  title: string | null;
  account_number: string;
  authorization: boolean;
  re_enroll: boolean;
  external_id: string | null;
  related_customer_id: string | null;
  wallet_company_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface ConnectLinksTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  single_use: boolean;
  redirect_url: string | null;
  token: string;
  status: 'active' | 'used' | 'deleted';
  uses: Generated<number>;
  created_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface DB {
  companies: CompaniesTable;
  api_keys: ApiKeysTable;
  idempotency_keys: IdempotencyKeysTable;
  rate_limit_windows: RateLimitWindowsTable;
  events: EventsTable;
  jobs: JobsTable;
  customers: CustomersTable;
  banks: BanksTable;
  accounts: AccountsTable;
  connect_links: ConnectLinksTable;
}
