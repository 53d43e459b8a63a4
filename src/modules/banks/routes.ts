import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps, RequestContext } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import type { BanklinkPort } from '../../rails/index.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { bankIdParams, bankListQuery, bankResponse } from './schemas.ts';
import { getBank, getBankLogo, listBanks } from './service.ts';

const tags = ['Banks'];

/** The company's banklink rail for this environment, or null where none serves it (live without a connector). */
async function banklinkRailOf(ctx: RequestContext): Promise<BanklinkPort | null> {
  try {
    return await ctx.deps.rails.money({ companyId: ctx.companyId, environment: ctx.environment, db: ctx.db }, 'banklink');
  } catch (error) {
    if (error instanceof ApiError && error.def.codeName === 'rail_not_configured') return null;
    throw error;
  }
}

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
    handler: async (req) => listBanks(req.ctx.db, req.query, req.ctx.deps.config.baseUrl, await banklinkRailOf(req.ctx)),
  });

  r.get('/accounts/banks', {
    schema: { ...listSchema, summary: 'List the banks and wallets (same as GET /banks)' },
    handler: async (req) => listBanks(req.ctx.db, req.query, req.ctx.deps.config.baseUrl, await banklinkRailOf(req.ctx)),
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
