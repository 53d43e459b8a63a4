import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { SealedColumns } from '../../platform/secret-columns.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** The connectors module's tables (migrations/0016_connectors.sql). */
export interface ConnectorSettingsTable {
  company_id: string;
  environment: Environment;
  name: string;
  provider_environment: 'sandbox' | 'production';
  public_key: string;
  private_key_sealed: string;
  events_secret_sealed: string;
  integrity_secret_sealed: string;
  /** JSON: the last four characters of each secret. */
  secret_hints: string;
  /** JSON array of the rails the connector serves. */
  rails: string;
  /** Third-Party Payments (the payout rail): its own keys, all set or none (migrations/0020). */
  payouts_api_key_sealed: string | null;
  payouts_principal_id_sealed: string | null;
  payouts_events_secret_sealed: string | null;
  payouts_account_id: string | null;
  /** The company's events URLs' token (migrations/0040): names the tenant whose secrets verify an event. */
  events_token: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ConnectorEventsTable {
  id: string;
  connector: string;
  company_id: string | null;
  environment: Environment | null;
  event: string | null;
  reference: string | null;
  provider_id: string | null;
  provider_status: string | null;
  verified: boolean;
  problem: string | null;
  received_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    connector_settings: ConnectorSettingsTable;
    connector_events: ConnectorEventsTable;
    whatsapp_connectors: WhatsAppConnectorsTable;
  }
}

/** A company's WhatsApp Business connector per environment (migrations/0045_whatsapp_connector.sql). */
export interface WhatsAppConnectorsTable {
  company_id: string;
  environment: Environment;
  phone_number_id: string;
  access_token_sealed: string;
  app_secret_sealed: string;
  verify_token_sealed: string;
  /** JSON: the last four characters of each secret, for the summary. */
  secret_hints: ColumnType<string, string | undefined, string>;
  /** JSON: template name by purpose (payment_link, reminder, receipt, login_code). */
  templates: ColumnType<string, string | undefined, string>;
  language: ColumnType<string, string | undefined, string>;
  events_token: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The provider's keys and secrets: sealed at rest (src/platform/secrets.ts; docs/operations.md "Secrets at rest"). */
export const SEALED_COLUMNS: SealedColumns[] = [
  {
    table: 'connector_settings',
    key: ['company_id', 'environment', 'name'],
    columns: [
      'private_key_sealed',
      'events_secret_sealed',
      'integrity_secret_sealed',
      'payouts_api_key_sealed',
      'payouts_principal_id_sealed',
      'payouts_events_secret_sealed',
    ],
  },
  { table: 'whatsapp_connectors', key: ['company_id', 'environment'], columns: ['access_token_sealed', 'app_secret_sealed', 'verify_token_sealed'] },
];
