import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { connectLinkResponse, createConnectLinkBody, idParams } from './schemas.ts';
import { createConnectLink, deleteConnectLink, getConnectLink } from './service.ts';

const tags = ['Connect links'];

export function connectLinkRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/connect-links', {
    schema: {
      tags,
      summary: 'Create a connect link',
      description:
        'A page where the customer enrolls a bank account, a Nequi or Daviplata account or a card themselves; send them `url`. Each enrollment emits `connect_link.completed`.',
      body: createConnectLinkBody,
      response: { 200: connectLinkResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createConnectLink(req.ctx, req.body),
  });

  r.get('/connect-links/:id', {
    schema: { tags, summary: 'Get a connect link', params: idParams, response: { 200: connectLinkResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getConnectLink(req.ctx, req.params.id),
  });

  r.delete('/connect-links/:id', {
    schema: {
      tags,
      summary: 'Delete a connect link',
      params: idParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteConnectLink(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });
}
