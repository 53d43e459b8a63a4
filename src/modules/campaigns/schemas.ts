import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { CAMPAIGN_MESSAGE_STATUSES, CAMPAIGN_STATUSES } from './tables.ts';

/** At most this many phones per request (a body stays far below the 1 MB limit). */
export const MAX_PHONES = 10_000;
const OPTIONAL_MAX = 1024;

const optional = (n: number) =>
  z
    .string()
    .max(OPTIONAL_MAX)
    .nullish()
    .describe(`template variable {{optional_${n}}}${n > 1 ? `; only with optional_${n - 1} filled (no gaps)` : ''}`);

export const importMessagesBody = z.object({
  template: z.string().min(1).max(100).describe('the id (tpl_…) or the name of a template of GET /v1/templates with selectable true'),
  phones: z
    .array(z.string().max(64))
    .min(1)
    .max(MAX_PHONES)
    .describe(`E.164 phones (1 to ${MAX_PHONES}); duplicates are sent once; invalid ones are listed in rejected (all invalid: 422)`),
  type: z.string().max(20).nullish().describe('video selects a video (video_url); anything else, or nothing, an image (image_url)'),
  image_url: z
    .string()
    .max(2048)
    .nullish()
    .describe('JPEG or PNG, at most 2 MB, short side ≥ 600 px, long side ≤ 2048 px, ratio 4:3, 9:16, 2:3 or 1:1 (either orientation); fetched once'),
  video_url: z.string().max(2048).nullish().describe('MP4, at most 16 MB; fetched once'),
  optional_1: optional(1),
  optional_2: optional(2),
  optional_3: optional(3),
});
export type ImportMessagesBody = z.infer<typeof importMessagesBody>;

export const rejectedPhone = z.object({ phone: z.string(), reason: z.string() });

export const importMessagesResponse = z.object({
  id: z.string().describe('camp_…'),
  status: z.literal('queued'),
  recipients: z.number().int().describe('distinct valid phones, one message each'),
  rejected: z.array(rejectedPhone),
});
export type ImportMessagesResponse = z.infer<typeof importMessagesResponse>;

export const messageCounts = z.object(
  Object.fromEntries(CAMPAIGN_MESSAGE_STATUSES.map((s) => [s, z.number().int()])) as Record<(typeof CAMPAIGN_MESSAGE_STATUSES)[number], z.ZodNumber>,
);

export const campaignResponse = z.object({
  id: z.string(),
  status: z.enum(CAMPAIGN_STATUSES).describe('queued → sending → completed (every message handed to the provider or failed), or cancelled'),
  template_id: z.string(),
  type: z.enum(['image', 'video']),
  media: z.object({
    url: z.string(),
    content_type: z.string().describe('read from the bytes: image/jpeg, image/png or video/mp4'),
    bytes: z.number().int(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
  }),
  optional_1: z.string().nullable(),
  optional_2: z.string().nullable(),
  optional_3: z.string().nullable(),
  recipients: z.number().int(),
  rejected: z.array(rejectedPhone),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  completed_at: z.string().nullable(),
  cancelled_at: z.string().nullable(),
});
export type CampaignResponse = z.infer<typeof campaignResponse>;

export const campaignDetailResponse = campaignResponse.extend({
  counts: messageCounts.describe('messages by status'),
});
export type CampaignDetailResponse = z.infer<typeof campaignDetailResponse>;

export const campaignMessageResponse = z.object({
  id: z.string().describe('cmsg_…; the reference the messaging provider reports with'),
  campaign_id: z.string(),
  recipient: z.string(),
  status: z.enum(CAMPAIGN_MESSAGE_STATUSES),
  error: z.string().nullable(),
  reply_text: z.string().nullable(),
  attempts: z.number().int(),
  sent_at: z.string().nullable().describe('when it was handed to the messaging provider'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CampaignMessageResponse = z.infer<typeof campaignMessageResponse>;

export const campaignList: ListSpec<'id' | 'status' | 'template_id', 'created_at'> = {
  filters: ['id', 'status', 'template_id'],
  sorts: ['created_at'],
};
export const campaignListQuery = listQuerySchema(campaignList);

export const campaignMessageList: ListSpec<'status' | 'recipient', 'created_at'> = {
  filters: ['status', 'recipient'],
  sorts: ['created_at'],
};
export const campaignMessageListQuery = listQuerySchema(campaignMessageList);

export const idParams = z.object({ id: z.string() });
export const emptyBody = z.object({}).passthrough();
