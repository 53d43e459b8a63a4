import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { EnrollableMethod } from '../payments/allows.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * What a payer enrolled on a connect link's page (migrations/0028_connect_link_page.sql): the
 * account or the card, once per form (`form_key`, a hash of the page's form token).
 */
export interface ConnectLinkEnrollmentsTable {
  company_id: string;
  environment: Environment;
  id: string;
  connect_link_id: string;
  form_key: string;
  account_id: string | null;
  card_id: string | null;
  created_at: Timestamp;
  /** Codes tried on the page's wallet step (migrations/0042); at WALLET_CODE_ATTEMPTS it locks. */
  code_attempts: ColumnType<number, number | undefined, number>;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    connect_link_enrollments: ConnectLinkEnrollmentsTable;
  }
  /** What the link's page offers to enroll (migrations/0030; docs/accounts.md "Connect links"). */
  interface ConnectLinksTable {
    allows: ColumnType<EnrollableMethod[], string | undefined, string>;
  }
}
