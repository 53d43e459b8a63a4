import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { corsPreflight } from '../../platform/http/cors.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { allowedOriginsPolicy } from '../companies/allowed-origins.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import {
  cardListQuery,
  cardResponse,
  createCardBody,
  createTokenBody,
  customerCardListQuery,
  idParams,
  tokenizedCardBody,
  tokenResponse,
} from './schemas.ts';
import {
  createCard,
  recoverCard,
  recoverToken,
  createCardFromToken,
  createToken,
  deleteCard,
  getCard,
  listCards,
  listCustomerCards,
} from './service.ts';

const tags = ['Cards'];
const cardErrors =
  'Card data: 10104 card_number (Luhn, length by brand), 10102 card_cvv (3 digits, 4 for American Express), 10122 card_expired (a real month, not past, at most 20 years ahead). The number and the code are never stored, logged or returned.';

export function cardRoutes(app: FastifyInstance, deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/cards', {
    config: { sensitiveBody: true, recover: recoverCard },
    schema: {
      tags,
      summary: "Save a customer's card",
      description: `Keeps brand, last four digits, expiry, holder and a fingerprint. authorization must be true to charge the card. ${cardErrors}`,
      body: createCardBody,
      response: { 200: cardResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createCard(req.ctx, req.body),
  });

  r.post('/cards/tokenized', {
    config: { recover: recoverCard },
    schema: {
      tags,
      summary: 'Save a card from a card token',
      description:
        'card_token from POST /v1/tokens (publishable key): single use, valid 10 minutes, same company and environment; otherwise 422 on card_token.',
      body: tokenizedCardBody,
      response: { 200: cardResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createCardFromToken(req.ctx, req.body),
  });

  r.get('/cards', {
    schema: {
      tags,
      summary: 'List cards',
      description: 'filter[customer_id] (or customer_id); sort created_at.',
      querystring: cardListQuery,
      response: { 200: listEnvelopeSchema(cardResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCards(req.ctx, req.query, listPath(req)),
  });

  r.get('/cards/:id', {
    schema: { tags, summary: 'Get a card', params: idParams, response: { 200: cardResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getCard(req.ctx, req.params.id),
  });

  r.delete('/cards/:id', {
    schema: {
      tags,
      summary: 'Delete a card',
      description: 'It can no longer be charged; afterwards 404.',
      params: idParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteCard(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });

  r.get('/customers/:id/cards', {
    schema: {
      tags,
      summary: "List the customer's cards",
      params: idParams,
      querystring: customerCardListQuery,
      response: { 200: listEnvelopeSchema(cardResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCustomerCards(req.ctx, req.params.id, req.query, listPath(req)),
  });

  // Browsers on the company's allowed origins may call it (docs/browser-tokenization.md).
  const cors = allowedOriginsPolicy(() => deps.database.db);
  r.options('/tokens', { config: { auth: 'none', cors }, schema: { hide: true } }, corsPreflight('POST'));

  r.post('/tokens', {
    config: { auth: 'publishable', sensitiveBody: true, recover: recoverToken, cors },
    schema: {
      tags,
      summary: 'Create a card token (publishable key)',
      description: `With the publishable key (pk_test_… / pk_live_…), from a browser: a single-use token (tok_…) valid 10 minutes, for POST /v1/cards/tokenized. Cross-origin from the company's allowed origins (PUT /v1/company/allowed-origins; CORS). ${cardErrors}`,
      security: [{ apiKey: [] }],
      body: createTokenBody,
      response: { 200: tokenResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createToken(req.ctx, req.body),
  });
}
