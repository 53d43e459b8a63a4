import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { bankIdParams, bankListQuery, bankResponse } from './schemas.ts';
import { getBank, getBankLogo, listBanks } from './service.ts';

const tags = ['Banks'];

export function bankRoutes(app: FastifyInstance, deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const listSchema = {
    tags,
    description: 'Not paginated: page and per_page are ignored.',
    querystring: bankListQuery,
    response: { 200: z.array(bankResponse), ...errorResponses(400, 401, 404, 422) },
  };

  r.get('/banks', {
    schema: { ...listSchema, summary: 'List the banks and wallets' },
    handler: async (req) => listBanks(req.ctx.db, req.query, req.ctx.deps.config.baseUrl),
  });

  r.get('/accounts/banks', {
    schema: { ...listSchema, summary: 'List the banks and wallets (same as GET /banks)' },
    handler: async (req) => listBanks(req.ctx.db, req.query, req.ctx.deps.config.baseUrl),
  });

  r.get('/banks/:id', {
    schema: { tags, summary: 'Get a bank', params: bankIdParams, response: { 200: bankResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getBank(req.ctx.db, req.params.id, req.ctx.deps.config.baseUrl),
  });

  // Public: the logo URL is put in <img> tags of payer pages, which send no API key.
  r.get('/banks/:id/logo.svg', {
    config: { auth: 'none' },
    schema: {
      tags,
      summary: 'Bank logo (SVG, no authentication)',
      security: [],
      params: bankIdParams,
      response: { 200: z.string().describe('image/svg+xml'), ...errorResponses(404) },
    },
    handler: async (req, reply) => {
      const svg = await getBankLogo(deps.database.db, req.params.id);
      return reply.type('image/svg+xml; charset=utf-8').header('cache-control', 'public, max-age=86400').send(svg);
    },
  });
}
