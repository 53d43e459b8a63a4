import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { createWalletTransactionBody, idParams, walletBalanceResponse, walletTransactionResponse } from './schemas.ts';
import { createWalletDeposit, getWalletBalance, listWalletTransactions, walletTransactionList } from './service.ts';

const tags = ['Wallets'];

/** Customer wallets (docs/wallets.md). */
export function walletRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/customers/:id/balance', {
    schema: {
      tags,
      summary: "The customer's wallet balance",
      description: "What the customer's wallet holds, in pesos (COP), with its es-CO label. A customer whose wallet never held money has 0.",
      params: idParams,
      response: { 200: walletBalanceResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getWalletBalance(req.ctx, req.params.id),
  });

  r.post('/customers/:id/transactions', {
    schema: {
      tags,
      summary: "Deposit into the customer's wallet from the company's balance",
      description:
        "Moves `amount` pesos from the company's available balance (GET /v1/balances) to the customer's wallet, at once (`type: deposit`, `confirmed: true`), with the event wallet.transaction.created. A balance short of the amount is 422 10501 insufficient_funds and moves nothing.",
      params: idParams,
      body: createWalletTransactionBody,
      response: { 200: walletTransactionResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createWalletDeposit(req.ctx, req.params.id, req.body),
  });

  r.get('/customers/:id/transactions', {
    schema: {
      tags,
      summary: "List the movements of the customer's wallet",
      description: 'Deposits, cash-out withdrawals and their returns, newest first (list envelope; filter[type], filter[id]).',
      params: idParams,
      querystring: listQuerySchema(walletTransactionList),
      response: { 200: listEnvelopeSchema(walletTransactionResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listWalletTransactions(req.ctx, req.params.id, req.query, listPath(req)),
  });
}
