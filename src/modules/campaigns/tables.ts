import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export const CAMPAIGN_STATUSES = ['queued', 'sending', 'completed', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const CAMPAIGN_MESSAGE_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'failed', 'replied', 'cancelled'] as const;
export type CampaignMessageStatus = (typeof CAMPAIGN_MESSAGE_STATUSES)[number];

/** The campaigns module's tables (migrations/0029_campaigns.sql), merged into the shared DB type. */
export interface CampaignsTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: CampaignStatus;
  template_id: string;
  media_type: 'image' | 'video';
  media_url: string;
  media_content_type: string;
  media_bytes: number;
  media_width: number | null;
  media_height: number | null;
  optional_1: string | null;
  optional_2: string | null;
  optional_3: string | null;
  recipients: number;
  rejected: ColumnType<{ phone: string; reason: string }[], string, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: Timestamp | null;
  cancelled_at: Timestamp | null;
}

export interface CampaignMessagesTable {
  company_id: string;
  environment: Environment;
  id: string;
  campaign_id: string;
  /** Insertion order (bigserial): the dispatcher's first in, first out. */
  seq: ColumnType<bigint, never, never>;
  recipient: string;
  status: CampaignMessageStatus;
  dispatch_token: string | null;
  sent_at: Timestamp | null;
  provider_message_id: string | null;
  error: string | null;
  reply_text: string | null;
  replied_at: Timestamp | null;
  attempts: ColumnType<number, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CampaignSendersTable {
  company_id: string;
  environment: Environment;
  bucket_tat: Timestamp | null;
  job_token: string | null;
  wake_at: Timestamp | null;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    campaigns: CampaignsTable;
    campaign_messages: CampaignMessagesTable;
    campaign_senders: CampaignSendersTable;
  }
}
