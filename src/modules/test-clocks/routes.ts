import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import {
  advanceTestClock,
  createTestClock,
  deleteTestClock,
  frozenTime,
  getTestClock,
  listTestClocks,
  testClockList,
  testClockResponse,
} from './service.ts';

const tags = ['Test clocks'];
const idParams = z.object({ id: z.string().max(100) });

export function testClockRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/test-clocks', {
    schema: {
      tags,
      summary: 'Create a test clock (test keys only)',
      body: z.object({ frozen_time: frozenTime, name: z.string().max(100).nullish() }),
      response: { 200: testClockResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => createTestClock(req.ctx, req.body),
  });
  r.get('/test-clocks', {
    schema: {
      tags,
      summary: 'List test clocks',
      description: 'filter[status]; sort created_at.',
      querystring: listQuerySchema(testClockList),
      response: { 200: listEnvelopeSchema(testClockResponse), ...errorResponses(400, 401, 403, 404, 422) },
    },
    handler: async (req) => listTestClocks(req.ctx, req.query, listPath(req)),
  });
  r.get('/test-clocks/:id', {
    schema: { tags, summary: 'Get a test clock', params: idParams, response: { 200: testClockResponse, ...errorResponses(401, 403, 404) } },
    handler: async (req) => getTestClock(req.ctx, req.params.id),
  });
  r.post('/test-clocks/:id/advance', {
    schema: {
      tags,
      summary: 'Advance a test clock',
      description:
        'Moves the clock forward to frozen_time: everything scheduled for its customers up to then runs in time order, in the background (status advancing, then ready).',
      params: idParams,
      body: z.object({ frozen_time: frozenTime }),
      response: { 200: testClockResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => advanceTestClock(req.ctx, req.params.id, req.body),
  });
  r.delete('/test-clocks/:id', {
    schema: {
      tags,
      summary: 'Delete a test clock',
      params: idParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 403, 404) },
    },
    handler: async (req, reply) => {
      await deleteTestClock(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });
}
