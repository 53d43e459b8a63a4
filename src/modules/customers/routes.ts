import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { createCustomerBody, customerResponse, idParams, updateCustomerBody } from './schemas.ts';
import { createCustomer, customerList, deleteCustomer, getCustomer, listCustomers, updateCustomer } from './service.ts';

const tags = ['Customers'];

export function customerRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/customers', {
    schema: {
      tags,
      summary: 'Create a customer',
      body: createCustomerBody,
      response: { 200: customerResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createCustomer(req.ctx, req.body),
  });

  r.get('/customers', {
    schema: {
      tags,
      summary: 'List customers',
      querystring: listQuerySchema(customerList),
      response: { 200: listEnvelopeSchema(customerResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCustomers(req.ctx, req.query, listPath(req)),
  });

  r.get('/customers/:id', {
    schema: { tags, summary: 'Get a customer', params: idParams, response: { 200: customerResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getCustomer(req.ctx, req.params.id),
  });

  r.put('/customers/:id', {
    schema: {
      tags,
      summary: 'Update a customer (unsent fields keep their value)',
      params: idParams,
      body: updateCustomerBody,
      response: { 200: customerResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => updateCustomer(req.ctx, req.params.id, req.body),
  });

  r.delete('/customers/:id', {
    schema: { tags, summary: 'Delete a customer', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) } },
    handler: async (req, reply) => {
      await deleteCustomer(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });
  // The customer's related collections live with their modules: cards (src/modules/cards/routes.ts),
  // issued cards (src/modules/issuing/routes.ts).
}
