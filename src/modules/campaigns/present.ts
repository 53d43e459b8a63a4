import type { Selectable } from 'kysely';
import { iso } from '../../platform/scope.ts';
import type { RejectedPhone } from './recipients.ts';
import type { CampaignMessageResponse, CampaignResponse } from './schemas.ts';
import type { CampaignMessagesTable, CampaignsTable } from './tables.ts';

export type CampaignRow = Selectable<CampaignsTable>;
export type CampaignMessageRow = Selectable<CampaignMessagesTable>;

export function toCampaignResponse(row: CampaignRow): CampaignResponse {
  const rejected = typeof row.rejected === 'string' ? (JSON.parse(row.rejected) as RejectedPhone[]) : row.rejected;
  return {
    id: row.id,
    status: row.status,
    template_id: row.template_id,
    type: row.media_type,
    media: {
      url: row.media_url,
      content_type: row.media_content_type,
      bytes: row.media_bytes,
      width: row.media_width,
      height: row.media_height,
    },
    optional_1: row.optional_1,
    optional_2: row.optional_2,
    optional_3: row.optional_3,
    recipients: row.recipients,
    rejected,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    completed_at: row.completed_at ? iso(row.completed_at) : null,
    cancelled_at: row.cancelled_at ? iso(row.cancelled_at) : null,
  };
}

export function toCampaignMessageResponse(row: CampaignMessageRow): CampaignMessageResponse {
  return {
    id: row.id,
    campaign_id: row.campaign_id,
    recipient: row.recipient,
    status: row.status,
    error: row.error,
    reply_text: row.reply_text,
    attempts: row.attempts,
    sent_at: row.sent_at ? iso(row.sent_at) : null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * The data of a campaign message's `payment.message.*` event: the campaign as the API returns it,
 * plus `message` (the same keys as a payment message's, `kind: "campaign"`), so one webhook
 * handler reads both.
 */
export function campaignMessageEventData(campaign: CampaignRow, message: CampaignMessageRow): Record<string, unknown> {
  const summary: Record<string, unknown> = {
    id: message.id,
    campaign_id: message.campaign_id,
    channel: 'messaging',
    kind: 'campaign',
    recipient: message.recipient,
    status: message.status,
  };
  if (message.status === 'replied') summary.reply_text = message.reply_text;
  if (message.status === 'failed') summary.error = message.error;
  return { ...toCampaignResponse(campaign), message: summary };
}
