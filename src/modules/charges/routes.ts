import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { readIdempotencyKey } from '../../platform/idempotency/idempotency.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { REJECTION_REASONS } from '../payments/schemas.ts';
import { cancelCharge, refundCharge, resolveCharge } from './operations.ts';
import {
  cancelChargeBody,
  CHARGE_TEST_SCENARIOS,
  chargeListQuery,
  chargeResponse,
  createChargeBody,
  idParams,
  refundChargeBody,
  resolveChargeBody,
} from './schemas.ts';
import { collectRoutes } from './collect-routes.ts';
import { createCharge, getCharge, listCharges, recoverCharge } from './service.ts';
import { registerChargeJobs } from './settle.ts';

const tags = ['Charges'];
const anyId = 'The path id is the charge id (ch_…) or the id of its payment intent (pi_…, payment_intent_id).';

export function chargeRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/charges', {
    config: { recover: recoverCharge },
    schema: {
      tags,
      summary: 'Charge a saved card or a registered account',
      description: `Statuses created → processing → paid | failed (events charge.created, charge.processing, charge.paid, charge.failed). A card is paid (or failed) at once; an account debit answers processing and is paid when the bank settles it. A debit rejected by the bank or by risk rules is still 200, with status failed and the reason in remarks. 503 90005 charge_persistence_lost: the charge exists and settles by itself; a retry with the same x-idempotency value is always safe: it answers that charge as it is now and never charges again. test_scenario (test keys): ${CHARGE_TEST_SCENARIOS.join(', ')}. See docs/charges.md.`,
      body: createChargeBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => createCharge(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.get('/charges', {
    schema: {
      tags,
      summary: 'List charges',
      description:
        'Filters id, status, created_at, currency, amount, title, payment_method_type, external_id, customer_id, key (the x-idempotency value of the create); amount (pesos) and created_at also as ranges: filter[amount][gte|gt|lte|lt], filter[created_at][gte|gt|lte|lt] (a date YYYY-MM-DD stands for its whole UTC day). Sort created_at, paid_at.',
      querystring: chargeListQuery,
      response: { 200: listEnvelopeSchema(chargeResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCharges(req.ctx, req.query, listPath(req)),
  });

  r.get('/charges/:id', {
    schema: { tags, summary: 'Get a charge', description: anyId, params: idParams, response: { 200: chargeResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getCharge(req.ctx, req.params.id),
  });

  r.post('/charges/:id/refund', {
    config: { recover: recoverCharge },
    schema: {
      tags,
      summary: 'Refund a paid charge (whole)',
      description: `${anyId} 10805 charge_refunded (refunded, or a refund in progress), 10807 charge_is_not_paid, 10806 charge_is_test (a test charge; one created with test_scenario refundable and paid by the sandbox rail refunds), 10010 insufficient_balance. Answers the charge, refunded (charge.refunded).`,
      params: idParams,
      body: refundChargeBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => refundCharge(req.ctx, req.params.id, req.body),
  });

  r.post('/charges/:id/cancel', {
    schema: {
      tags,
      summary: 'Cancel a charge that is not settled',
      description: `${anyId} Only created or processing charges (else 10808 charge_not_cancellable); the charge fails with remarks CANCELLED (charge.failed).`,
      params: idParams,
      body: cancelChargeBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => cancelCharge(req.ctx, req.params.id),
  });

  r.post('/charges/:id/resolve', {
    schema: {
      tags,
      summary: 'Resolve a test charge (sandbox)',
      description: `${anyId} Test charges with a test key only (else 403). Only from created or processing (else 422). approve → paid; reject → failed with remarks (${REJECTION_REASONS.join(', ')}; default TRANSACTION_REJECTED).`,
      params: idParams,
      body: resolveChargeBody,
      response: { 200: chargeResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => resolveCharge(req.ctx, req.params.id, req.body),
  });

  // Banklink and rtkey charges, wallet request-to-pay.
  collectRoutes(app);
}

export function registerChargeWorkers(deps: AppDeps): void {
  registerChargeJobs(deps);
}
