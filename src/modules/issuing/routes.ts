import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { CARD_ROUTE_ACTIONS } from './lifecycle.ts';
import {
  createIssuingCardBody,
  customerIssuingCardListQuery,
  emptyBody,
  idParams,
  issuingAuthorizationResponse,
  issuingCardListQuery,
  issuingCardResponse,
  testAuthorizationBody,
} from './schemas.ts';
import {
  changeIssuingCardStatus,
  createIssuingCard,
  createTestAuthorization,
  getIssuingCard,
  listCustomerIssuingCards,
  listIssuingCards,
  recoverIssuingCard,
} from './service.ts';

const tags = ['Issuing'];

const ACTION_SUMMARY: Record<(typeof CARD_ROUTE_ACTIONS)[number], string> = {
  block: 'Block an active card (authorizations are refused until it is unblocked)',
  unblock: 'Unblock a blocked card',
  cancel: 'Cancel an active or blocked card (final)',
};

export function issuingRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/issuing/cards', {
    config: { recover: recoverIssuingCard },
    schema: {
      tags,
      summary: 'Issue a card for a customer, spending from the customer’s wallet',
      description:
        'Sandbox only: a live key without an issuer connector is 422 10900 rail_not_configured (rail issuer) and nothing is recorded. The card is created, then active once the issuer answers (last_4, brand, exp_month, exp_year); the issuer refusing it (sandbox: a holder document ending in 9999) leaves it canceled with remarks KYC_REJECTED. The full card number and security code are never stored nor returned. See docs/issuing.md.',
      body: createIssuingCardBody,
      response: { 200: issuingCardResponse, ...errorResponses(401, 404, 409, 422, 503) },
    },
    handler: async (req) => createIssuingCard(req.ctx, req.body),
  });

  r.get('/issuing/cards', {
    schema: {
      tags,
      summary: 'List issued cards',
      description: 'Filters id, status, customer_id, type; sort created_at.',
      querystring: issuingCardListQuery,
      response: { 200: listEnvelopeSchema(issuingCardResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listIssuingCards(req.ctx, req.query, listPath(req)),
  });

  r.get('/issuing/cards/:id', {
    schema: { tags, summary: 'Get an issued card', params: idParams, response: { 200: issuingCardResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getIssuingCard(req.ctx, req.params.id),
  });

  for (const action of CARD_ROUTE_ACTIONS) {
    r.post(`/issuing/cards/:id/${action}`, {
      schema: {
        tags,
        summary: ACTION_SUMMARY[action],
        description:
          'active ↔ blocked, active or blocked → canceled (final); any other move is 422 11100 issuing_card_transition_not_allowed. The issuer is told after commit.',
        params: idParams,
        body: emptyBody,
        response: { 200: issuingCardResponse, ...errorResponses(401, 404, 409, 422) },
      },
      handler: async (req) => changeIssuingCardStatus(req.ctx, req.params.id, action),
    });
  }

  r.post('/issuing/cards/:id/test-authorizations', {
    schema: {
      tags,
      summary: 'Simulate a spend on a test card (test keys)',
      description:
        "A purchase at a merchant, approved at once: the amount leaves the customer's wallet through the ledger and shows in GET /customers/{id}/transactions (withdrawal, node_type IssuingAuthorization). 422 11101 issuing_card_not_active when the card is not active; 422 10501 insufficient_funds when the wallet is short (nothing recorded); 403 with a live key.",
      params: idParams,
      body: testAuthorizationBody,
      response: { 200: issuingAuthorizationResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => createTestAuthorization(req.ctx, req.params.id, req.body),
  });

  r.get('/customers/:id/issuing-cards', {
    schema: {
      tags: ['Customers', ...tags],
      summary: "List the customer's issued cards",
      description: 'Filters id, status, type; sort created_at.',
      params: idParams,
      querystring: customerIssuingCardListQuery,
      response: { 200: listEnvelopeSchema(issuingCardResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCustomerIssuingCards(req.ctx, req.params.id, req.query, listPath(req)),
  });
}
