import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { phoneE164 } from '../../platform/validation.ts';
import { customerResponse } from '../customers/schemas.ts';
import { getSession, requestLoginCode, revokeSession, verifyLoginCode } from './service.ts';

const tags = ['Customer session'];
const tokenHeader = z.looseObject({ 'x-customer-token': z.string().max(200).optional().describe('the token of POST /customers/login/verify') });
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
    handler: async (req) => requestLoginCode(req.ctx, req.body.phone),
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
}
