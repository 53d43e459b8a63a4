import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import {
  billParams,
  billResponse,
  createPaymentLinkBody,
  createUtilityBody,
  idParams,
  paymentLinkResponse,
  providerListQuery,
  providerResponse,
  utilityListQuery,
  utilityResponse,
} from './schemas.ts';
import {
  createUtility,
  createUtilityPaymentLink,
  getUtility,
  inquireBill,
  listProviders,
  listUtilities,
  lookUpBill,
  recoverUtility,
  type BillLookup,
} from './service.ts';

const tags = ['Utilities'];

const lookups = new WeakMap<FastifyRequest, BillLookup>();

/**
 * Route-level preValidation of the POSTs that pay or link a bill: after authentication and before
 * the v1 preHandler opens the request's idempotency transaction, the biller is asked for the
 * provider and the bill (an outside call must hold no transaction). A live key without a biller is
 * refused here (10900). Nothing is decided from the answer until the handler runs after the claim,
 * so a replayed key still answers its stored response. A body the schema refuses is left to the
 * validation that follows.
 */
function lookUp(schema: typeof createUtilityBody | typeof createPaymentLinkBody) {
  return async (req: FastifyRequest): Promise<void> => {
    if (!req.ctx) return;
    const parsed = schema.safeParse(req.body);
    if (!parsed.success) return;
    lookups.set(req, await lookUpBill(req.ctx, parsed.data.provider_id, parsed.data.reference));
  };
}

export function utilityRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/utilities/providers', {
    schema: {
      tags,
      summary: 'List the billers (utility providers) bills can be paid to',
      description:
        'The biller rail’s providers: {id, name, category, help_text}. Filter category (energy, water, gas, telecom, internet, television, sanitation). Sandbox only: a live key without a biller connector is 422 10900 rail_not_configured. See docs/utilities.md.',
      querystring: providerListQuery,
      response: { 200: listEnvelopeSchema(providerResponse), ...errorResponses(400, 401, 404, 422, 503) },
    },
    handler: async (req) => listProviders(req.ctx, req.query, listPath(req)),
  });

  r.get('/utilities/providers/:id/bills/:reference', {
    schema: {
      tags,
      summary: 'Look up a bill by its reference',
      description:
        'The bill as the biller has it: amount, due date, masked holder, status unpaid or paid. No such bill: 404 11200 utility_bill_not_found; an unknown provider: 404 10002. Sandbox bills by the reference’s last four characters: docs/testing.md.',
      params: billParams,
      response: { 200: billResponse, ...errorResponses(401, 404, 422, 503) },
    },
    handler: async (req) => inquireBill(req.ctx, req.params.id, req.params.reference),
  });

  r.post('/utilities', {
    config: { recover: recoverUtility },
    preValidation: lookUp(createUtilityBody),
    schema: {
      tags,
      summary: 'Pay a bill from the company’s balance',
      description:
        'The bill’s amount is held from the available balance (short: 422 10501 insufficient_funds, nothing created), the biller is paid outside any transaction and the utility settles paid (utility.paid) or rejected (utility.rejected, the money released). No such bill: 404 11200; paid already: 422 11201; another payment of it in flight: 409 11202 (utility_id names it). Exactly once per x-idempotency. Sandbox only: live → 422 10900. See docs/utilities.md.',
      body: createUtilityBody,
      response: { 200: utilityResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => createUtility(req.ctx, req.body, lookups.get(req)),
  });

  r.post('/utilities/payment-links', {
    preValidation: lookUp(createPaymentLinkBody),
    schema: {
      tags,
      summary: 'Let a payer pay a bill through a payment link',
      description:
        'A payment (source utility) of the bill’s amount, sent by phone or e-mail; it cannot be cancelled (DELETE /payments/{id}: 422 15001 cant_cancel_payment). Once approved, the bill is paid from the balance it fed (a utility with payment_id; utility.paid or utility.rejected). Same refusals as POST /utilities. See docs/utilities.md.',
      body: createPaymentLinkBody,
      response: { 200: paymentLinkResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => createUtilityPaymentLink(req.ctx, req.body, lookups.get(req)),
  });

  r.get('/utilities', {
    schema: {
      tags,
      summary: 'List bill payments',
      description: 'Filters id, status, provider_id, reference, payment_id; sort created_at.',
      querystring: utilityListQuery,
      response: { 200: listEnvelopeSchema(utilityResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listUtilities(req.ctx, req.query, listPath(req)),
  });

  r.get('/utilities/:id', {
    schema: { tags, summary: 'Get a bill payment', params: idParams, response: { 200: utilityResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getUtility(req.ctx, req.params.id),
  });
}
