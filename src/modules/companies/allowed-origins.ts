import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Executor } from '../../platform/db/database.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import type { RequestContext } from '../../platform/context.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import type { CorsPolicy } from '../../platform/http/cors.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';

/**
 * The browser origins a company allows to call POST /v1/tokens with its publishable key, per
 * environment (docs/browser-tokenization.md). Set by `PUT /v1/company/allowed-origins` (secret key)
 * or the operator (`recaudo companies set --allowed-origins`); read by the CORS policy of the route.
 */
export interface CompanyAllowedOriginsTable {
  company_id: string;
  environment: Environment;
  origin: string;
  created_at: Date;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    company_allowed_origins: CompanyAllowedOriginsTable;
  }
}

export const MAX_ALLOWED_ORIGINS = 20;

/**
 * An origin as browsers send it in `Origin`: `scheme://host[:port]`, lower case, default port
 * dropped; a trailing `/` is accepted. Live: https only; test: http too (a local page).
 * Returns the origin or the problem.
 */
export function normaliseOrigin(input: string, environment: Environment): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { problem: 'must be an origin like https://shop.example.co' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: 'must be an http or https origin' };
  if (environment === 'live' && url.protocol !== 'https:') return { problem: 'must use https with a live key' };
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/' || input.endsWith('?') || input.endsWith('#')) {
    return { problem: 'must be an origin only (scheme, host and port; no path, query or credentials)' };
  }
  return { origin: url.origin };
}

export async function listAllowedOrigins(db: Executor, tenant: Tenant): Promise<string[]> {
  const rows = await db.selectFrom('company_allowed_origins').select('origin').$call(inTenant(tenant)).orderBy('origin').execute();
  return rows.map((r) => r.origin);
}

/** Replaces the environment's list (checked first: a refused list changes nothing). */
export async function replaceAllowedOrigins(db: Executor, tenant: Tenant, inputs: readonly string[], now: Date): Promise<string[]> {
  const problems: Record<string, string[]> = {};
  const origins = new Set<string>();
  inputs.forEach((input, i) => {
    const out = normaliseOrigin(input, tenant.environment);
    if ('problem' in out) problems[`origins.${i}`] = [out.problem];
    else origins.add(out.origin);
  });
  if (inputs.length > MAX_ALLOWED_ORIGINS) problems.origins = [`must list at most ${MAX_ALLOWED_ORIGINS} origins`];
  if (Object.keys(problems).length) throw validationError(problems);
  await inTransaction(db, async (trx) => {
    await trx.deleteFrom('company_allowed_origins').$call(inTenant(tenant)).execute();
    if (origins.size === 0) return;
    await trx
      .insertInto('company_allowed_origins')
      .values([...origins].map((origin) => ({ company_id: tenant.companyId, environment: tenant.environment, origin, created_at: now })))
      .execute();
  });
  return listAllowedOrigins(db, tenant);
}

/** The CORS policy of POST /v1/tokens: the key's company and environment allow the origin. */
export function allowedOriginsPolicy(db: () => Executor): CorsPolicy {
  return {
    async allows(tenant, origin) {
      const row = await db()
        .selectFrom('company_allowed_origins')
        .select('origin')
        .$call(inTenant(tenant))
        .where('origin', '=', origin)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

const allowedOriginsResponse = z.object({
  origins: z.array(z.string()).describe('the origins allowed, e.g. https://shop.example.co'),
  is_test: z.boolean(),
});
const allowedOriginsBody = z.object({
  origins: z
    .array(z.string().max(300, 'must be at most 300 characters'))
    .max(MAX_ALLOWED_ORIGINS, `must list at most ${MAX_ALLOWED_ORIGINS} origins`)
    .describe('replaces the list; [] allows no origin. Live keys: https only'),
});

async function answer(ctx: RequestContext, origins?: string[]) {
  return { origins: origins ?? (await listAllowedOrigins(ctx.db, ctx)), is_test: ctx.environment === 'test' };
}

export function allowedOriginRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Cards'];
  r.get('/company/allowed-origins', {
    schema: {
      tags,
      summary: 'Browser origins allowed to create card tokens (CORS on POST /v1/tokens)',
      response: { 200: allowedOriginsResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => answer(req.ctx),
  });
  r.put('/company/allowed-origins', {
    schema: {
      tags,
      summary: 'Set the browser origins allowed to create card tokens',
      description:
        'Pages served from these origins may call POST /v1/tokens with the publishable key of this environment (docs/browser-tokenization.md). `scheme://host[:port]` only.',
      body: allowedOriginsBody,
      response: { 200: allowedOriginsResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => answer(req.ctx, await replaceAllowedOrigins(req.ctx.db, req.ctx, req.body.origins, req.ctx.deps.clock.now())),
  });
}
