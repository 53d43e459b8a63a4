import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { readIdempotencyKey } from '../../platform/idempotency/idempotency.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import {
  balanceCashoutBody,
  CASHOUT_TEST_SCENARIOS,
  cashoutListQuery,
  cashoutResponse,
  createCashoutBody,
  emptyBody,
  idParams,
  payoutAccountBody,
  payoutAccountResponse,
  rejectCashoutBody,
  resolveCashoutBody,
} from './schemas.ts';
import {
  approveCashout,
  cancelCashout,
  cashOutBalance,
  createCashout,
  getCashout,
  getPayoutAccount,
  listCashouts,
  recoverBalanceCashout,
  recoverCashout,
  rejectCashout,
  resolveCashout,
  setPayoutAccount,
} from './service.ts';

const tags = ['Cash-outs'];

export function cashoutRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/cashouts', {
    config: { recover: recoverCashout },
    schema: {
      tags,
      summary: 'Send money to a customer’s bank account',
      description: `Statuses created → (require_approval →) processing → completed | rejected, or cancelled (events cashout.*). The amount is held from the available balance (or the customer's wallet when it covers it) at creation: short is 422 10501 insufficient_funds and nothing is created. ACH takes 1–3 Colombian business days, TURBO hours, INSTANT seconds (a KEY account of a natural person). A duplicate external_id is 409 naming the first cash-out. test_scenario (test keys): ${CASHOUT_TEST_SCENARIOS.join(', ')}. See docs/cashouts.md.`,
      body: createCashoutBody,
      response: { 200: cashoutResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => createCashout(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.get('/cashouts', {
    schema: {
      tags,
      summary: 'List cash-outs',
      description: 'Filters id, status, external_id, customer_id, method; sort created_at.',
      querystring: cashoutListQuery,
      response: { 200: listEnvelopeSchema(cashoutResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCashouts(req.ctx, req.query, listPath(req)),
  });

  r.get('/cashouts/:id', {
    schema: { tags, summary: 'Get a cash-out', params: idParams, response: { 200: cashoutResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getCashout(req.ctx, req.params.id),
  });

  r.post('/cashouts/:id/cancel', {
    schema: {
      tags,
      summary: 'Cancel a cash-out not sent yet',
      description:
        'From require_approval (a created cash-out is already at the payout rail); else 422 10511 cashout_not_cancellable. The held money returns to the balance.',
      params: idParams,
      body: emptyBody,
      response: { 200: cashoutResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => cancelCashout(req.ctx, req.params.id),
  });

  r.post('/cashouts/:id/approve', {
    config: { recover: recoverCashout },
    schema: {
      tags,
      summary: 'Approve a cash-out above the approval threshold',
      description:
        'require_approval → processing, then the payout rail is called; else 422 10514. The key that created it cannot approve it: 422 10512 cashout_approver_is_creator (maker-checker: approve with another key of the company, `recaudo keys create`).',
      params: idParams,
      body: emptyBody,
      response: { 200: cashoutResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => approveCashout(req.ctx, req.params.id),
  });

  r.post('/cashouts/:id/reject', {
    schema: {
      tags,
      summary: 'Reject a cash-out waiting for approval',
      description: 'require_approval → rejected (remarks, default REJECTED_BY_APPROVER); the held money returns to the balance; else 422 10514.',
      params: idParams,
      body: rejectCashoutBody,
      response: { 200: cashoutResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => rejectCashout(req.ctx, req.params.id, req.body.remarks ?? null),
  });

  r.post('/cashouts/:id/resolve', {
    schema: {
      tags,
      summary: 'Resolve a test cash-out (sandbox)',
      description:
        'Test cash-outs with a test key only (else 403): complete or reject a processing one, return a completed one (remarks RETURNED, the money back).',
      params: idParams,
      body: resolveCashoutBody,
      response: { 200: cashoutResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => resolveCashout(req.ctx, req.params.id, req.body),
  });

  r.post('/balances', {
    // A retry after a run that recorded the cash-out and died answers 204 again, never a second one.
    config: { recover: recoverBalanceCashout },
    schema: {
      tags: ['Balances'],
      summary: 'Cash out the company’s balance to its own account',
      description:
        "204: an ACH cash-out of amount (default: the whole available balance) to account_id (default: the company's payout account, PUT /v1/company/payout-account). 422 10500 balance_is_empty, 10501 insufficient_funds, 10809 company_account_not_found. GET /v1/cashouts lists it.",
      body: balanceCashoutBody,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 409, 422, 503) },
    },
    handler: async (req, reply) => {
      await cashOutBalance(req.ctx, req.body, readIdempotencyKey(req) ?? null);
      return reply.code(204).send(null);
    },
  });

  r.get('/company/payout-account', {
    schema: { tags: ['Balances'], summary: "The company's payout account", response: { 200: payoutAccountResponse, ...errorResponses(401) } },
    handler: async (req) => getPayoutAccount(req.ctx),
  });

  r.put('/company/payout-account', {
    schema: {
      tags: ['Balances'],
      summary: "Set the company's payout account",
      description: 'An ACTIVE account of this environment (not WALLET or KEY): where POST /balances pays when it names no account.',
      body: payoutAccountBody,
      response: { 200: payoutAccountResponse, ...errorResponses(401, 422) },
    },
    handler: async (req) => setPayoutAccount(req.ctx, req.body.account_id),
  });
}
