import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { createWebhookBody, deliveryParams, deliveryResponse, updateWebhookBody, webhookIdParams, webhookResponse } from './schemas.ts';
import {
  checkWebhookUrl,
  createWebhook,
  deleteWebhook,
  deliveryList,
  getWebhook,
  listDeliveries,
  listWebhooks,
  retryDelivery,
  updateWebhook,
  type CheckedUrl,
} from './service.ts';
import { webhookFanOut } from './fanout.ts';
import { WebhookDispatcher } from './dispatcher.ts';

const tags = ['Webhooks'];
const wrapped = <T extends z.ZodType>(schema: T) => z.object({ data: schema });

/** Wires the module's background side: fan-out at emit time and the delivery loop. */
export function registerWebhookWorkers(deps: AppDeps): WebhookDispatcher {
  deps.eventSinks.add(webhookFanOut);
  const dispatcher = new WebhookDispatcher(deps);
  deps.jobs.attach(dispatcher.poller);
  return dispatcher;
}

const checkedUrls = new WeakMap<FastifyRequest, CheckedUrl>();

/**
 * Route-level preValidation: judges the body's URL (a DNS lookup of up to 2 s) after
 * authentication and before the v1 preHandler opens a POST's idempotency transaction, so the lookup
 * holds no transaction. The verdict is only stored: the service answers it after body validation
 * and the webhook lookup, so errors come in the same order as before.
 */
async function checkBodyUrl(req: FastifyRequest): Promise<void> {
  const url = (req.body as { url?: unknown } | null | undefined)?.url;
  if (typeof url !== 'string' || url.length > 2048 || !req.ctx) return; // validation answers it
  checkedUrls.set(req, await checkWebhookUrl(req.ctx.deps, req.ctx.environment, url));
}

export function webhookRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/webhooks', {
    schema: {
      tags,
      summary: 'Create a webhook (the secret is shown only here)',
      body: createWebhookBody,
      response: { 200: wrapped(webhookResponse), ...errorResponses(401, 404, 409, 422) },
    },
    preValidation: checkBodyUrl,
    handler: async (req) => ({ data: await createWebhook(req.ctx, req.body, checkedUrls.get(req)) }),
  });
  r.get('/webhooks', {
    schema: { tags, summary: 'List webhooks', response: { 200: wrapped(z.array(webhookResponse)), ...errorResponses(401, 404) } },
    handler: async (req) => ({ data: await listWebhooks(req.ctx) }),
  });
  r.get('/webhooks/:id', {
    schema: { tags, summary: 'Get a webhook', params: webhookIdParams, response: { 200: wrapped(webhookResponse), ...errorResponses(401, 404) } },
    handler: async (req) => ({ data: await getWebhook(req.ctx, req.params.id) }),
  });
  r.put('/webhooks/:id', {
    schema: {
      tags,
      summary: 'Update a webhook (unsent fields keep their value; description null clears; events replaces the list)',
      params: webhookIdParams,
      body: updateWebhookBody,
      response: { 200: wrapped(webhookResponse), ...errorResponses(401, 404, 422) },
    },
    preValidation: checkBodyUrl,
    handler: async (req) => ({ data: await updateWebhook(req.ctx, req.params.id, req.body, checkedUrls.get(req)) }),
  });
  r.delete('/webhooks/:id', {
    schema: {
      tags,
      summary: 'Delete a webhook (its pending deliveries stop)',
      params: webhookIdParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteWebhook(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });
  r.get('/webhooks/:id/deliveries', {
    schema: {
      tags,
      summary: 'List deliveries of a webhook, with every attempt',
      params: webhookIdParams,
      querystring: listQuerySchema(deliveryList),
      response: { 200: listEnvelopeSchema(deliveryResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listDeliveries(req.ctx, req.params.id, req.query, listPath(req)),
  });
  r.post('/webhooks/:id/deliveries/:delivery_id/retry', {
    schema: {
      tags,
      summary: 'Send a delivery again now',
      params: deliveryParams,
      response: { 200: deliveryResponse, ...errorResponses(401, 404, 409) },
    },
    handler: async (req) => retryDelivery(req.ctx, req.params.id, req.params.delivery_id),
  });
}
