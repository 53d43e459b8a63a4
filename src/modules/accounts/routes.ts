import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import {
  accountListQuery,
  accountResponse,
  createAccountBody,
  customerAccountListQuery,
  idParams,
  keyLookupResponse,
  keyParams,
  validateAccountBody,
} from './schemas.ts';
import { createAccount, deleteAccount, getAccount, listAccounts, listCustomerAccounts, lookupInstantKey, validateAccount } from './service.ts';

const tags = ['Accounts'];

export function accountRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/accounts', {
    schema: {
      tags,
      summary: 'Register a bank account, instant key or wallet of a customer',
      description:
        'With authorization false (the default): a payout destination, ACTIVE at once (account.connected), debit_authorized false, in test and live. With authorization true it starts PENDING (event account.pending); in test it becomes ACTIVE (account.connected) or, when account_number ends in 9999, REJECTED (account.uncompleted) a few seconds later; Nequi and Daviplata wait for POST /accounts/{id}/validate.',
      body: createAccountBody,
      response: { 200: accountResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createAccount(req.ctx, req.body),
  });

  r.get('/accounts', {
    schema: {
      tags,
      summary: 'List accounts',
      querystring: accountListQuery,
      response: { 200: listEnvelopeSchema(accountResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listAccounts(req.ctx, req.query, listPath(req)),
  });

  r.get('/accounts/rtkey/:key', {
    schema: {
      tags,
      summary: 'Look up an instant-payment key',
      description:
        'Alphanumeric keys start with @ (send it as is or as %40). With a test key this answers from the sandbox key directory (docs/accounts.md).',
      params: keyParams,
      response: { 200: keyLookupResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => lookupInstantKey(req.ctx, req.params.key),
  });

  r.get('/accounts/:id', {
    schema: { tags, summary: 'Get an account', params: idParams, response: { 200: accountResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getAccount(req.ctx, req.params.id),
  });

  r.delete('/accounts/:id', {
    schema: {
      tags,
      summary: 'Delete an account',
      description: 'Marks it INACTIVE (event account.disconnected); afterwards it is 404 record_not_found.',
      params: idParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteAccount(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });

  r.post('/accounts/:id/validate', {
    schema: {
      tags,
      summary: "Complete the enrollment with the holder's confirmation (wallets)",
      description:
        'For PENDING accounts at a bank with connection_type CONFIRMATION. Emits account.validated and account.connected. In test the right otp is 123456; otp may be omitted when the holder confirmed in the app.',
      params: idParams,
      body: validateAccountBody,
      response: { 200: accountResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => validateAccount(req.ctx, req.params.id, req.body.otp),
  });

  r.get('/customers/:id/accounts', {
    schema: {
      tags: ['Customers', ...tags],
      summary: "List a customer's accounts",
      params: idParams,
      querystring: customerAccountListQuery,
      response: { 200: listEnvelopeSchema(accountResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listCustomerAccounts(req.ctx, req.params.id, req.query, listPath(req)),
  });
}
