import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { eventList, getEvent, listEvents } from './service.ts';

const tags = ['Events'];
const eventResponse = z.object({
  id: z.string(),
  event: z.string(),
  created_at: z.string(),
  is_test: z.boolean(),
  data: z.record(z.string(), z.unknown()),
});

export function eventRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
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
