import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { previewBody, previewInvoice, previewResponse } from './preview.ts';
import { createPriceBody, idParams, priceResponse, updatePriceBody } from './schemas.ts';
import { createPrice, getPrice, listPrices, priceList, updatePrice } from './service.ts';

const tags = ['Invoicing'];

export function priceRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/prices', {
    schema: {
      tags,
      summary: 'Create a catalog price',
      body: createPriceBody,
      response: { 200: priceResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createPrice(req.ctx, req.body),
  });

  r.get('/prices', {
    schema: {
      tags,
      summary: 'List catalog prices',
      description: 'filter[active] (true|false), filter[currency]; sort created_at.',
      querystring: listQuerySchema(priceList),
      response: { 200: listEnvelopeSchema(priceResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listPrices(req.ctx, req.query, listPath(req)),
  });

  r.get('/prices/:id', {
    schema: { tags, summary: 'Get a catalog price', params: idParams, response: { 200: priceResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getPrice(req.ctx, req.params.id),
  });

  r.put('/prices/:id', {
    schema: {
      tags,
      summary: 'Update a catalog price (unsent fields keep their value)',
      params: idParams,
      body: updatePriceBody,
      response: { 200: priceResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => updatePrice(req.ctx, req.params.id, req.body),
  });

  r.post('/invoices/preview', {
    schema: {
      tags,
      summary: 'Preview the lines and totals of an invoice',
      description:
        'Resolves catalog and free lines with the tax math of the invoice; creates nothing. invalid_invoice_line (422) names the line that cannot be resolved, or a total outside the collectible range.',
      body: previewBody,
      response: { 200: previewResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => previewInvoice(req.ctx, req.body),
  });
}
