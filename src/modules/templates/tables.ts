import type { ColumnType } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export const TEMPLATE_STATUSES = ['approved', 'pending', 'rejected'] as const;
export const TEMPLATE_STAGES = ['payment_request', 'reminder', 'expiration_notice', 'payment_confirmation', 'cancellation'] as const;
export const TEMPLATE_PROVIDERS = ['whatsapp', 'sms', 'email'] as const;

/** The message-template catalogue (migrations/0005_payments.sql), merged into the shared DB type. */
export interface MessageTemplatesTable {
  id: string;
  name: string;
  status: (typeof TEMPLATE_STATUSES)[number];
  stage: (typeof TEMPLATE_STAGES)[number];
  provider: (typeof TEMPLATE_PROVIDERS)[number];
  predefined: boolean;
  selectable: boolean;
  body: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    message_templates: MessageTemplatesTable;
  }
}
