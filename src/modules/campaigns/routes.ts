import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import {
  campaignDetailResponse,
  campaignListQuery,
  campaignMessageListQuery,
  campaignMessageResponse,
  campaignResponse,
  emptyBody,
  idParams,
  importMessagesBody,
  importMessagesResponse,
  MAX_PHONES,
} from './schemas.ts';
import {
  cancelCampaign,
  createCampaign,
  getCampaign,
  listCampaignMessages,
  listCampaigns,
  prepareCampaign,
  requireCampaignsFeature,
  type PreparedCampaign,
} from './service.ts';

const tags = ['Campaigns'];

const prepared = new WeakMap<FastifyRequest, PreparedCampaign | { refused: unknown }>();

/**
 * Route-level preValidation of POST /campaigns/import-messages, after authentication and before
 * the v1 preHandler opens the request's idempotency transaction: the feature (403 before anything
 * else), then, for a body the schema accepts, the rules and the media fetch (an outside call of up
 * to the media deadline, which must hold no transaction). A body the schema refuses is left to
 * the validation that follows.
 */
async function prepare(req: FastifyRequest): Promise<void> {
  if (!req.ctx) return;
  await requireCampaignsFeature(req.ctx);
  const parsed = importMessagesBody.safeParse(req.body);
  if (!parsed.success) return;
  // A refusal waits for the handler, after the idempotency claim: a retry of a key that already
  // succeeded replays its 202 even if the media URL stopped answering since.
  prepared.set(req, await prepareCampaign(req.ctx, parsed.data).catch((error: unknown) => ({ refused: error })));
}

export function campaignRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/campaigns/import-messages', {
    schema: {
      tags,
      summary: 'Send a template message with an image or a video to many phones',
      description: `Needs the company's campaigns feature (else 403, no code). template: the id or name of a selectable template (GET /v1/templates). phones: 1 to ${MAX_PHONES} E.164 numbers; duplicates go once, invalid ones are listed in rejected (all invalid: 422). type video takes video_url (MP4, ≤ 16 MB); otherwise image_url (JPEG or PNG, ≤ 2 MB, short side ≥ 600 px, long side ≤ 2048 px, ratio 4:3, 9:16, 2:3 or 1:1 either way). The media is fetched once and judged from its bytes; an unreachable URL is 422 media_unreachable (10012). Live keys: https and public addresses only. optional_1..3 fill the template in order without gaps. Answers 202: the messages go in the background, paced per sender and inside the contact hours; each emits payment.message.delivered|failed|replied. See docs/campaigns.md.`,
      body: importMessagesBody,
      response: { 202: importMessagesResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    preValidation: prepare,
    handler: async (req, reply) => {
      const ready = prepared.get(req);
      if (ready && 'refused' in ready) throw ready.refused;
      const out = await createCampaign(req.ctx, ready);
      return reply.code(202).send(out);
    },
  });

  r.get('/campaigns', {
    schema: {
      tags,
      summary: 'List campaigns',
      description: 'Filters id, status, template_id; sort created_at (newest first by default).',
      querystring: campaignListQuery,
      response: { 200: listEnvelopeSchema(campaignResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCampaigns(req.ctx, req.query, listPath(req)),
  });

  r.get('/campaigns/:id', {
    schema: {
      tags,
      summary: 'Get a campaign with its message counts by status',
      params: idParams,
      response: { 200: campaignDetailResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getCampaign(req.ctx, req.params.id),
  });

  r.get('/campaigns/:id/messages', {
    schema: {
      tags,
      summary: "List a campaign's messages",
      description: 'Filters status, recipient; sort created_at (newest first by default).',
      params: idParams,
      querystring: campaignMessageListQuery,
      response: { 200: listEnvelopeSchema(campaignMessageResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCampaignMessages(req.ctx, req.params.id, req.query, listPath(req)),
  });

  r.post('/campaigns/:id/cancel', {
    schema: {
      tags,
      summary: 'Cancel a campaign: messages not handed to the provider yet are cancelled',
      description: 'From queued or sending; a cancelled campaign answers as it is; a completed one is 422 campaign_not_cancellable (10700).',
      params: idParams,
      body: emptyBody,
      response: { 200: campaignDetailResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => cancelCampaign(req.ctx, req.params.id),
  });
}

/** The dispatcher job and the status listener (registered with every module's jobs). */
export { registerCampaignHandlers as registerCampaignJobs } from './dispatch.ts';
