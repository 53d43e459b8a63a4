import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { checkExpiry } from './resolutions.ts';
import { getFiscalProfile, putFiscalProfile } from './profile.ts';
import { createResolutionBody, fiscalProfileBody, fiscalProfileResponse, idParams, resolutionResponse } from './schemas.ts';
import { activateResolution, createResolution, EXPIRY_JOB, getResolution, listResolutions, resolutionList } from './service.ts';

const tags = ['Invoicing'];

export function fiscalRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/fiscal-resolutions', {
    schema: {
      tags,
      summary: 'Load a DIAN numbering resolution (draft)',
      body: createResolutionBody,
      response: { 200: resolutionResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createResolution(req.ctx, req.body),
  });

  r.post('/fiscal-resolutions/:id/activate', {
    schema: {
      tags,
      summary: 'Activate a resolution',
      description:
        'resolution_not_activatable (422) when expired or without folios. Retires the active resolution with the same prefix and document type.',
      params: idParams,
      response: { 200: resolutionResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => activateResolution(req.ctx, req.params.id),
  });

  r.get('/fiscal-resolutions', {
    schema: {
      tags,
      summary: 'List resolutions',
      description: 'filter[status], filter[document_type], filter[prefix]; sort created_at.',
      querystring: listQuerySchema(resolutionList),
      response: { 200: listEnvelopeSchema(resolutionResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listResolutions(req.ctx, req.query, listPath(req)),
  });

  r.get('/fiscal-resolutions/:id', {
    schema: {
      tags,
      summary: 'Get a resolution with its folio counts',
      params: idParams,
      response: { 200: resolutionResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getResolution(req.ctx, req.params.id),
  });

  r.get('/fiscal-profile', {
    schema: {
      tags,
      summary: 'The company fiscal profile of this environment',
      response: { 200: fiscalProfileResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getFiscalProfile(req.ctx.db, req.ctx.deps.secrets, req.ctx),
  });

  r.put('/fiscal-profile', {
    schema: {
      tags,
      summary: 'Set the company fiscal profile of this environment',
      description:
        "Fields not sent keep their value (in test, the default sandbox profile's). software_pin, certificate and certificate_password are write-only.",
      body: fiscalProfileBody,
      response: { 200: fiscalProfileResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => putFiscalProfile(req.ctx.db, req.ctx.deps.secrets, req.ctx, req.body, req.ctx.deps.clock.now()),
  });
}

export function registerFiscalJobs(deps: AppDeps): void {
  deps.jobs.register(EXPIRY_JOB, async (payload) => {
    const scope = { companyId: String(payload.company_id), environment: payload.environment as Environment, deps };
    await checkExpiry(deps.database.db, scope, String(payload.resolution_id), deps.clock.now());
  });
}
