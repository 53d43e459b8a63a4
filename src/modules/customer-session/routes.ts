import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { looseBoolean, phoneE164 } from '../../platform/validation.ts';
import { customerResponse } from '../customers/schemas.ts';
import { CURRENCIES } from '../../platform/money.ts';
import { readIdempotencyKey } from '../../platform/idempotency/idempotency.ts';
import { sessionGuard } from './guard.ts';
import { addSessionCard, createSessionCharge, getSessionCharge, recoverSessionCard, recoverSessionCharge, sessionPaymentMethods } from './payer.ts';
import { getSession, requestLoginCode, revokeSession, verifyLoginCode } from './service.ts';

const tags = ['Customer session'];
const tokenHeader = z.looseObject({ 'x-customer-token': z.string().max(200).optional().describe('the token of POST /customers/login/verify') });
const sessionCard = z.object({
  id: z.string().describe('card_…: the payment_method_id of a session charge'),
  brand: z.string(),
  last_four: z.string(),
  label: z.string().describe('e.g. "Visa ····4242"'),
  expiration_date: z.string().describe('the last day of the expiry month, YYYY-MM-DD'),
  card_name: z.string(),
});
const paymentMethods = z.object({
  data: z.object({
    cards: z.array(sessionCard),
    wallets: z.array(
      z.object({ id: z.string(), subtype: z.string().describe('nequi, daviplata…'), phone: z.string().describe('masked'), label: z.string() }),
    ),
    pse: z.array(z.object({ id: z.string(), bank_name: z.string(), label: z.string() })),
  }),
});
const sessionChargeAnswer = z.object({
  charge_id: z.string().describe('ch_…: an ordinary charge (GET /v1/charges/{id}, charge.* events)'),
  status: z.enum(['created', 'processing', 'paid', 'failed', 'refunded']),
  message: z.string(),
  expires_at: z.string().nullable().describe('while it waits for approval: 5 minutes after creation'),
});
const sessionChargeView = z.object({
  charge_id: z.string(),
  status: z.enum(['created', 'processing', 'paid', 'failed', 'refunded']),
  amount: z.number().int().describe('cents (minor units)'),
  currency: z.string(),
  description: z.string(),
  remarks: z.string().nullable(),
  paid_at: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
});
const limitsNote = 'Per customer: reads 30 per minute, writes (both POSTs) 5 per minute; beyond, 429 with Retry-After.';
const sessionResponse = z.object({
  token: z.string().describe('send it as X-Customer-Token, with the same API key, for 7 days'),
  expires_at: z.string(),
  customer: customerResponse,
});

export function customerSessionRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/customers/login/request', {
    schema: {
      tags,
      summary: 'Send a login code to a customer’s phone',
      description:
        '200 whether or not the phone belongs to a customer; 418 when asked again within a minute; 429 past 1 per 30 s or 3 per hour per phone.',
      body: z.object({ phone: phoneE164 }),
      response: { 200: z.object({ message: z.string() }), ...errorResponses(401, 404, 409, 418, 422, 429) },
    },
    handler: async (req) => requestLoginCode(req.ctx, req.body.phone, req.ip),
  });
  r.post('/customers/login/verify', {
    schema: {
      tags,
      summary: 'Exchange the login code for a session token',
      description: 'A wrong or expired code is 422 (five wrong codes burn it); 429 past 1 per 30 s or 3 per hour per phone.',
      body: z.object({ phone: phoneE164, otp: z.string().regex(/^\d{6}$/, 'must be the 6 digits of the code') }),
      response: { 200: sessionResponse, ...errorResponses(401, 404, 409, 422, 429) },
    },
    handler: async (req) => verifyLoginCode(req.ctx, req.body.phone, req.body.otp),
  });
  r.get('/customers/session', {
    onRequest: sessionGuard('read'),
    schema: {
      tags,
      summary: 'The session’s customer',
      headers: tokenHeader,
      response: { 200: z.object({ customer: customerResponse, expires_at: z.string() }), ...errorResponses(401) },
    },
    handler: async (req) => getSession(req),
  });
  r.delete('/customers/session', {
    schema: {
      tags,
      summary: 'End the session (revoke its token)',
      headers: tokenHeader,
      response: { 204: z.null().describe('No content'), ...errorResponses(401) },
    },
    handler: async (req, reply) => {
      await revokeSession(req);
      return reply.code(204).send(null);
    },
  });
  r.get('/customers/session/payment-methods', {
    onRequest: sessionGuard('read'),
    schema: {
      tags,
      summary: 'The session customer’s payment methods',
      description: `Grouped as {data: {cards, wallets, pse}}: saved cards, active wallet accounts, active bank accounts. ${limitsNote}`,
      headers: tokenHeader,
      response: { 200: paymentMethods, ...errorResponses(401, 429) },
    },
    handler: async (req) => sessionPaymentMethods(req),
  });
  r.post('/customers/session/payment-methods', {
    onRequest: sessionGuard('write'),
    config: { sensitiveBody: true, recover: recoverSessionCard },
    schema: {
      tags,
      summary: 'Save a card for the session customer',
      description: `token: a single-use card token of POST /v1/tokens (publishable key), unused and younger than 10 minutes; the card is saved with authorization. ${limitsNote}`,
      headers: tokenHeader,
      body: z.object({
        token: z.string().min(1).max(100).describe('tok_…'),
        accept_terms: looseBoolean
          .nullish()
          .describe(
            "live with a payment provider: true once the payer accepted the provider's terms and personal-data authorization (required then; recorded)",
          ),
      }),
      response: { 200: sessionCard, ...errorResponses(401, 409, 422, 429) },
    },
    handler: async (req) => addSessionCard(req, req.body.token, req.body.accept_terms),
  });
  r.post('/customers/session/charges', {
    onRequest: sessionGuard('write'),
    config: { recover: recoverSessionCharge },
    schema: {
      tags,
      summary: 'Charge a saved card of the session customer',
      description: `An ordinary charge held for the payer’s approval for 5 minutes (live: requested by WhatsApp; test: approve true/false settles it at once). 422 without a code when the method is not a saved card of this customer, the card expired, or a charge is already waiting. ${limitsNote}`,
      headers: tokenHeader,
      body: z.object({
        payment_method_id: z.string().min(1).max(100).describe('a card_… of GET /customers/session/payment-methods'),
        amount: z
          .number()
          .int('must be a whole number of cents')
          .min(100, 'must be at least 100 cents')
          .max(Number.MAX_SAFE_INTEGER)
          .describe('cents (minor units), at least 100'),
        currency: z.enum(CURRENCIES, { error: 'must be one of COP, USD, MXN' }).optional().describe('default COP'),
        description: z.string().trim().min(1).max(100).describe('shown to the payer; the charge title'),
        approve: z.boolean().nullish().describe('test keys only: true approves and charges at once, false rejects'),
      }),
      response: { 200: sessionChargeAnswer, ...errorResponses(401, 409, 422, 429) },
    },
    handler: async (req) => createSessionCharge(req, req.body, readIdempotencyKey(req) ?? null),
  });
  r.get('/customers/session/charges/:chargeId', {
    onRequest: sessionGuard('read'),
    schema: {
      tags,
      summary: 'A charge of the session customer',
      description: `404 (no code) when it does not exist or belongs to another customer. ${limitsNote}`,
      headers: tokenHeader,
      params: z.object({ chargeId: z.string().max(100) }),
      response: { 200: sessionChargeView, ...errorResponses(401, 404, 429) },
    },
    handler: async (req) => getSessionCharge(req, req.params.chargeId),
  });
}
