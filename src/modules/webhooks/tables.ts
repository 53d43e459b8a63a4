import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { SealedColumns } from '../../platform/secret-columns.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** The webhooks module's tables (migrations/0004_webhooks.sql), merged into the shared DB type. */
export interface WebhooksTable {
  company_id: string;
  environment: Environment;
  id: string;
  name: string;
  description: string | null;
  url: string;
  events: ColumnType<string[], string, string>;
  header: string | null;
  secret: string | null;
  /** 'standard' | 'legacy' (migrations/0030); defaults to 'standard'. */
  payload_format: ColumnType<PayloadFormatColumn, PayloadFormatColumn | undefined, PayloadFormatColumn>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

type PayloadFormatColumn = 'standard' | 'legacy';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface WebhookDeliveriesTable {
  company_id: string;
  environment: Environment;
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  /** The webhook's format when the event was fanned out (migrations/0030). */
  payload_format: ColumnType<PayloadFormatColumn, PayloadFormatColumn | undefined, PayloadFormatColumn>;
  status: DeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  max_attempts: number | null;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Timestamp;
  completed_at: Timestamp | null;
}

export interface WebhookAttemptsTable {
  company_id: string;
  environment: Environment;
  id: string;
  delivery_id: string;
  attempted_at: Timestamp;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_excerpt: string | null;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    webhooks: WebhooksTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}

/** The signing secret and the x-webhook-token value: sealed at rest (src/platform/secrets.ts; docs/operations.md "Secrets at rest"). */
export const SEALED_COLUMNS: SealedColumns[] = [{ table: 'webhooks', key: ['company_id', 'environment', 'id'], columns: ['secret', 'header'] }];
