import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** migrations/0026_customer_sessions.sql */
export interface CustomerLoginCodesTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  phone: string;
  code_hash: string;
  /** The client address that asked for it (migrations/0027): the per-address daily cap counts these. */
  ip: string | null;
  wrong_attempts: ColumnType<number, number | undefined, number>;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface CustomerSessionsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  key_id: string;
  token_hash: string;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface CustomerLoginAttemptsTable {
  company_id: string;
  environment: Environment;
  phone: string;
  kind: 'request' | 'verify';
  at: Timestamp;
}

/** migrations/0034_session_approval_requests.sql */
export interface SessionApprovalRequestsTable {
  company_id: string;
  environment: Environment;
  charge_id: string;
  customer_id: string;
  phone: string;
  provider_message_id: string | null;
  created_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    session_approval_requests: SessionApprovalRequestsTable;
    customer_login_codes: CustomerLoginCodesTable;
    customer_sessions: CustomerSessionsTable;
    customer_login_attempts: CustomerLoginAttemptsTable;
  }
}
