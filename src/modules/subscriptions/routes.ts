import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { createPlan, getPlan, listPlans, planList, updatePlan } from './plans.ts';
import {
  createPlanBody,
  createSubscriptionBody,
  customerParams,
  idParams,
  planResponse,
  subscriptionResponse,
  updatePlanBody,
  updateSubscriptionBody,
} from './schemas.ts';
import {
  changeSubscription,
  createSubscription,
  getSubscription,
  listCustomerSubscriptions,
  listSubscriptions,
  subscriptionList,
  updateSubscription,
} from './service.ts';

const tags = ['Subscriptions'];
const noBody = z.object({}).loose();

export function subscriptionRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/plans', {
    schema: { tags, summary: 'Create a plan', body: createPlanBody, response: { 200: planResponse, ...errorResponses(401, 404, 409, 422) } },
    handler: async (req) => createPlan(req.ctx, req.body),
  });
  r.get('/plans', {
    schema: {
      tags,
      summary: 'List plans',
      description: 'filter[internal_id], filter[cicle_frequency]; sort created_at.',
      querystring: listQuerySchema(planList),
      response: { 200: listEnvelopeSchema(planResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listPlans(req.ctx, req.query, listPath(req)),
  });
  r.get('/plans/:id', {
    schema: { tags, summary: 'Get a plan', params: idParams, response: { 200: planResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getPlan(req.ctx, req.params.id),
  });
  r.put('/plans/:id', {
    schema: {
      tags,
      summary: 'Update a plan (unsent fields keep their value)',
      description: 'update_existing_subscriptions: true applies the new amount and complex payments to the future cycles of its subscriptions.',
      params: idParams,
      body: updatePlanBody,
      response: { 200: planResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => updatePlan(req.ctx, req.params.id, req.body),
  });

  r.post('/subscriptions', {
    schema: {
      tags,
      summary: 'Create a subscription',
      description:
        'From a plan (plan_id; the fields sent override it) or inline (name, amount_in_cents, cicle_frequency). Cycles are billed as payment links (payment_mode request).',
      body: createSubscriptionBody,
      response: { 200: subscriptionResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createSubscription(req.ctx, req.body),
  });
  r.get('/subscriptions', {
    schema: {
      tags,
      summary: 'List subscriptions',
      description: 'filter[status], filter[customer_id], filter[plan_id], filter[internal_id]; sort created_at.',
      querystring: listQuerySchema(subscriptionList),
      response: { 200: listEnvelopeSchema(subscriptionResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listSubscriptions(req.ctx, req.query, listPath(req)),
  });
  r.get('/subscriptions/:id', {
    schema: { tags, summary: 'Get a subscription', params: idParams, response: { 200: subscriptionResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getSubscription(req.ctx, req.params.id),
  });
  r.put('/subscriptions/:id', {
    schema: {
      tags,
      summary: 'Update a subscription (unsent fields keep their value)',
      params: idParams,
      body: updateSubscriptionBody,
      response: { 200: subscriptionResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => updateSubscription(req.ctx, req.params.id, req.body),
  });
  for (const action of ['cancel', 'freeze', 'unfreeze'] as const) {
    r.post(`/subscriptions/:id/${action}`, {
      schema: {
        tags,
        summary: `${action[0].toUpperCase()}${action.slice(1)} a subscription`,
        params: idParams,
        body: noBody,
        response: { 200: subscriptionResponse, ...errorResponses(401, 404, 409, 422) },
      },
      handler: async (req) => changeSubscription(req.ctx, req.params.id, action),
    });
  }
  r.get('/customers/:id/subscriptions', {
    schema: {
      tags,
      summary: "List a customer's subscriptions",
      params: customerParams,
      querystring: listQuerySchema(subscriptionList),
      response: { 200: listEnvelopeSchema(subscriptionResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCustomerSubscriptions(req.ctx, req.params.id, req.query, listPath(req)),
  });
}
