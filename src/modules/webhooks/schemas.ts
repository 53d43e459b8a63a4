import { z } from 'zod';
import { EVENT_CATALOGUE, EVENT_TYPES } from '../events/catalog.ts';

const eventList = z
  .array(
    z
      .enum(EVENT_TYPES, { message: 'must be a known event type' })
      .refine((type) => EVENT_CATALOGUE[type].emits, 'is not emitted by this service (see GET /v1/events/types)'),
  )
  .min(1, 'must list at least one event')
  .max(EVENT_TYPES.length)
  .describe('event types to receive (SPEC.md "Event types"); only those GET /v1/events/types marks `emitted: true`');

export const PAYLOAD_FORMATS = ['standard', 'legacy'] as const;
export type PayloadFormat = (typeof PAYLOAD_FORMATS)[number];
const payloadFormat = z
  .enum(PAYLOAD_FORMATS, { message: 'must be standard or legacy' })
  .describe(
    'delivery body: `standard` {id, event, created_at, is_test, data} (default), or `legacy` {"<resource>": data, "event": {type, timestamp, environment}} (docs/webhooks.md)',
  );

export const createWebhookBody = z.object({
  name: z.string().min(1, 'is required').max(255, 'must be at most 255 characters'),
  description: z.string().max(500, 'must be at most 500 characters').nullish(),
  url: z.string().max(2048, 'must be at most 2048 characters'),
  events: eventList,
  header: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .nullish()
    .describe('static token sent as x-webhook-token; generated when absent'),
  payload_format: payloadFormat.nullish(),
});

export const updateWebhookBody = z.object({
  name: z.string().min(1, 'cannot be empty').max(255, 'must be at most 255 characters').nullish(),
  description: z.string().max(500, 'must be at most 500 characters').nullable().optional().describe('null clears it'),
  url: z.string().max(2048, 'must be at most 2048 characters').nullish(),
  events: eventList.nullish().describe('replaces the whole list'),
  header: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .nullish(),
  payload_format: payloadFormat.nullish().describe('unsent or null keeps the current format'),
});

export type CreateWebhookBody = z.infer<typeof createWebhookBody>;
export type UpdateWebhookBody = z.infer<typeof updateWebhookBody>;

export const webhookResponse = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  url: z.string(),
  events: z.array(z.string()),
  header: z.string().nullable(),
  payload_format: z.enum(PAYLOAD_FORMATS),
  secret: z.string().optional().describe('shown only in the response of the create call'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookResponse = z.infer<typeof webhookResponse>;

export const attemptResponse = z.object({
  attempted_at: z.string(),
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});

export const deliveryResponse = z.object({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string(),
  event: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed', 'cancelled']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  attempt_history: z.array(attemptResponse),
});
export type DeliveryResponse = z.infer<typeof deliveryResponse>;

export const webhookIdParams = z.object({ id: z.string() });
export const deliveryParams = z.object({ id: z.string(), delivery_id: z.string() });
