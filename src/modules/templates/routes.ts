import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { templateListQuery, templateResponse } from './schemas.ts';
import { listTemplates } from './service.ts';

export function templateRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/templates', {
    schema: {
      tags: ['Payments'],
      summary: 'List message templates',
      description:
        'The message templates a payment can be delivered with. A payment may use a template whose selectable is true. filter[predefined] and filter[selectable] take true or false (anything else is 422).',
      querystring: templateListQuery,
      response: { 200: listEnvelopeSchema(templateResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listTemplates(req.ctx, req.query, listPath(req)),
  });
}
