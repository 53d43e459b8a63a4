import { z } from 'zod';
import { EVENT_CATALOGUE, EVENT_TYPES } from '../events/catalog.ts';
import { phoneE164 } from '../../platform/validation.ts';
import { FILTER_OPS, PATH_RE } from './filters.ts';
import { FLOW_RUN_STATUSES } from './tables.ts';

const scalar = z.union([z.string().max(500), z.number(), z.boolean(), z.null()]);
const path = z.string().max(600).describe('dotted path into the event data, e.g. `amount` or `customer.phone`');

export const filterSchema = z.object({
  path,
  op: z.enum(FILTER_OPS).describe('eq, ne, in, nin, gt, gte, lt, lte, exists'),
  value: z.union([scalar, z.array(scalar).max(50)]).optional(),
});

const callUrl = z.object({
  type: z.literal('call_url'),
  url: z.string().max(2048).describe('POSTed the event body, signed like webhooks; live keys: https and a public address'),
});
const sendMessage = z.object({
  type: z.literal('send_message'),
  template: z.string().min(1).max(100).describe('id or name of a selectable template (GET /templates)'),
  to: phoneE164.nullish().describe('a fixed E.164 phone'),
  to_path: z.string().regex(PATH_RE, 'must be a dotted path of the event data').nullish().describe('or the path of the phone in the event data'),
  variables: z
    .record(z.string().regex(/^[a-z0-9_]{1,40}$/i, 'variable names are letters, digits and _'), path)
    .optional()
    .describe('template variable → dotted path of the event data'),
});

export const createFlowBody = z.object({
  name: z.string().trim().min(1).max(100),
  event: z
    .enum(EVENT_TYPES, { message: 'must be a known event type' })
    .refine((type) => EVENT_CATALOGUE[type].emits, 'is not emitted by this service (see GET /v1/events/types)')
    .describe('the event type that starts the flow (one GET /v1/events/types marks emitted)'),
  filters: z.array(filterSchema).max(20).optional().describe('all must hold for the action to run'),
  action: z.discriminatedUnion('type', [callUrl, sendMessage]),
});
export type CreateFlowBody = z.infer<typeof createFlowBody>;

export const flowResponse = z.object({
  id: z.string().describe('flow_…'),
  name: z.string(),
  event: z.string(),
  filters: z.array(filterSchema),
  action: z.union([
    z.object({ type: z.literal('call_url'), url: z.string() }),
    z.object({
      type: z.literal('send_message'),
      template_id: z.string(),
      to: z.string().nullable(),
      to_path: z.string().nullable(),
      variables: z.record(z.string(), z.string()),
    }),
  ]),
  secret: z.string().optional().describe('call_url: signs the body (Signature header); shown only in the create response'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type FlowResponse = z.infer<typeof flowResponse>;

export const flowRunResponse = z.object({
  id: z.string().describe('flrun_…'),
  flow_id: z.string(),
  event_id: z.string(),
  event: z.string(),
  status: z.enum(FLOW_RUN_STATUSES),
  attempts: z.number().int(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
});
export type FlowRunResponse = z.infer<typeof flowRunResponse>;

export const flowIdParams = z.object({ id: z.string().max(100) });
