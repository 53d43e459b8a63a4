import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { companyIdParams, companyResponse, createCompanyBody, liveKeysResponse } from './schemas.ts';
import { companyList, createOnboarding, getOnboarding, issueCompanyLiveKeys, listOnboardings } from './service.ts';

const tags = ['Companies'];
const platformNote =
  'Platform keys only (a company the operator flagged with recaudo companies set --platform true): else 403 platform_only (11400).';

export function onboardingRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/companies', {
    schema: {
      tags,
      summary: 'Onboard a company (KYB)',
      description: `${platformNote} OnePay's body; checks the NIT check digit (DIAN modulo 11), the CIIU activity code, the DIVIPOLA city (city_id) and the DIAN responsibility codes (O_47 or O-47). The new company starts pending, with its test keys in this response only and its test fiscal profile prefilled; live keys once active (POST /companies/{id}/keys). docs/companies.md.`,
      body: createCompanyBody,
      response: { 200: companyResponse, ...errorResponses(401, 403, 409, 422) },
    },
    handler: async (req) => createOnboarding(req.ctx, req.body),
  });
  r.get('/companies', {
    schema: {
      tags,
      summary: 'The companies this platform onboarded',
      description: `${platformNote} filter[status]; sort created_at.`,
      querystring: listQuerySchema(companyList),
      response: { 200: listEnvelopeSchema(companyResponse), ...errorResponses(400, 401, 403, 422) },
    },
    handler: async (req) => listOnboardings(req.ctx, req.query, listPath(req)),
  });
  r.get('/companies/:id', {
    schema: {
      tags,
      summary: 'One company this platform onboarded',
      description: platformNote,
      params: companyIdParams,
      response: { 200: companyResponse, ...errorResponses(401, 403, 404) },
    },
    handler: async (req) => getOnboarding(req.ctx, req.params.id),
  });
  r.post('/companies/:id/keys', {
    // Never stored for replay: the answer carries live secrets. A retry is answered 409 (taken once).
    config: { idempotent: false },
    schema: {
      tags,
      summary: 'Take the live keys of an active company (once)',
      description: `${platformNote} Issues and answers the company's live secret and publishable keys, shown only here: 422 company_not_active (11401) before its review approves it, 409 company_keys_already_issued (11402) the second time (the operator rotates keys with recaudo keys rotate). Only with the platform's live key (a test key: 404 environment_key_mismatch); no x-idempotency: the answer carries live secrets and is never stored for a replay.`,
      params: companyIdParams,
      response: { 200: liveKeysResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => issueCompanyLiveKeys(req.ctx, req.params.id),
  });
}
