import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { DISPUTE_REASONS } from '../../rails/disputes.ts';
import { disputeListQuery, disputeResponse, idParams, openDisputeBody, resolveDisputeBody } from './schemas.ts';
import { disputeCharge, disputePayment, getDispute, listDisputes, resolveDispute } from './service.ts';

const tags = ['Disputes'];
const HELD =
  'The disputed amount is held (moved from available to held in GET /v1/balances) while the dispute is open; 422 10010 insufficient_balance when available cannot cover it (nothing recorded).';

/** Disputes (docs/disputes.md): reads, and the sandbox helpers that make the sandbox rail report one. */
export function disputeRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/charges/:id/dispute', {
    schema: {
      tags,
      summary: 'Open a dispute on a paid test charge (sandbox)',
      description: `The sandbox card network (or bank) disputes the charge, as a real rail reports a chargeback. Test charges with a test key only (else 403). The charge id or its intent id. 422 10807 charge_is_not_paid when not paid; 10805 charge_refunded when a refund is in progress. The charge stays paid with disputed: true and dispute_id (charge.disputed). A charge is disputed once: asking again answers its dispute. reason: ${DISPUTE_REASONS.join(', ')}. ${HELD}`,
      params: idParams,
      body: openDisputeBody,
      response: { 200: disputeResponse, ...errorResponses(401, 403, 404, 409, 422, 503) },
    },
    handler: async (req) => disputeCharge(req.ctx, req.params.id, req.body),
  });

  r.post('/payments/:id/dispute', {
    schema: {
      tags,
      summary: 'Open a dispute on an approved test payment (sandbox)',
      description: `The sandbox rail of the payment's last approved attempt disputes it. Test payments with a test key only (else 403). 422 validation_error on status unless the payment is approved. The payment moves to disputed (payment.disputed). A payment is disputed once: asking again answers its dispute. ${HELD}`,
      params: idParams,
      body: openDisputeBody,
      response: { 200: disputeResponse, ...errorResponses(401, 403, 404, 409, 422, 503) },
    },
    handler: async (req) => disputePayment(req.ctx, req.params.id, req.body),
  });

  r.post('/disputes/:id/resolve', {
    schema: {
      tags,
      summary: 'Decide a test dispute (sandbox)',
      description:
        'The sandbox network decides the dispute: won (the held amount returns to available; a payment goes back to approved) or lost (the amount leaves for good; a payment becomes refunded, payment.refunded). Test disputes with a test key only (else 403); 422 (no code) when the dispute is already won or lost.',
      params: idParams,
      body: resolveDisputeBody,
      response: { 200: disputeResponse, ...errorResponses(401, 403, 404, 409, 422, 503) },
    },
    handler: async (req) => resolveDispute(req.ctx, req.params.id, req.body.outcome),
  });

  r.get('/disputes', {
    schema: {
      tags,
      summary: 'List disputes',
      description: 'Filters id, status (needs_response, won, lost), charge_id, payment_id, reason; sort created_at.',
      querystring: disputeListQuery,
      response: { 200: listEnvelopeSchema(disputeResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listDisputes(req.ctx, req.query, listPath(req)),
  });

  r.get('/disputes/:id', {
    schema: { tags, summary: 'Get a dispute', params: idParams, response: { 200: disputeResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getDispute(req.ctx, req.params.id),
  });
}
