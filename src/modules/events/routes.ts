import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { eventList, getEvent, listEvents } from './service.ts';
import { EVENT_CATALOGUE, EVENT_TYPES } from './catalog.ts';

const tags = ['Events'];
export const eventResponse = z.object({
  id: z.string(),
  event: z.string(),
  created_at: z.string(),
  is_test: z.boolean(),
  data: z.record(z.string(), z.unknown()),
});

export const eventTypeResponse = z.object({
  type: z.string().describe('the event type, e.g. charge.paid'),
  emitted: z.boolean().describe('true: the service emits it today, and webhooks may subscribe to it; false: listed by SPEC.md, no emitter yet'),
  resource: z.string().describe('the object key of the `legacy` webhook body'),
});

/** The catalogue as the API shows it; the same list for every caller. */
const EVENT_TYPE_LIST = EVENT_TYPES.map((type) => ({ type, emitted: EVENT_CATALOGUE[type].emits, resource: EVENT_CATALOGUE[type].resource }));

export function eventRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/events/types', {
    schema: {
      tags,
      summary: 'The event catalogue: every event type, whether the service emits it, its legacy-body key',
      description: 'A webhook may subscribe only to types with `emitted: true`; any other is 422 on `events`.',
      response: { 200: z.object({ data: z.array(eventTypeResponse) }), ...errorResponses(401, 404) },
    },
    handler: async () => ({ data: EVENT_TYPE_LIST }),
  });
  r.get('/events', {
    schema: {
      tags,
      summary: 'List events (the webhook delivery bodies); filter[created_at][gte|gt|lte|lt] for ranges',
      querystring: listQuerySchema(eventList),
      response: { 200: listEnvelopeSchema(eventResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listEvents(req.ctx, req.query, listPath(req)),
  });
  r.get('/events/:id', {
    schema: { tags, summary: 'Get an event', params: z.object({ id: z.string() }), response: { 200: eventResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getEvent(req.ctx, req.params.id),
  });
}
