import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { RequestContext } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { toPesos } from '../../platform/money.ts';
import { getBalances } from './service.ts';

const tags = ['Balances'];

export const balanceResponse = z.object({
  currency: z.string().describe('ISO 4217 code; COP is always listed'),
  available: z
    .number()
    .describe('pesos (major units, at most 2 decimals): collected and settled, plus what other companies moved to this balance (splits)'),
  pending: z.number().describe('pesos: collected, not settled yet'),
  held: z
    .number()
    .describe('pesos: taken from available for cash-outs on their way out (docs/cashouts.md); back to available if one is rejected or cancelled'),
});
export const balancesResponse = z.object({ data: z.array(balanceResponse) });

/** GET /balances: the company's balances in the key's environment, from the ledger (docs/ledger.md). */
export async function listBalances(ctx: RequestContext): Promise<z.infer<typeof balancesResponse>> {
  const balances = await getBalances(ctx.db, ctx);
  return {
    data: balances.map((b) => ({ currency: b.currency, available: toPesos(b.available), pending: toPesos(b.pending), held: toPesos(b.held) })),
  };
}

export function ledgerRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/balances', {
    schema: {
      tags,
      summary: "The company's balances, per currency",
      description:
        'Derived from the double-entry ledger, for the environment of the key: available (collected and settled, plus money other companies moved to this balance with splits) and pending (collected, not settled yet), in pesos. Answers {data: [...]}, one object per currency, sorted by currency; COP is always there. See docs/ledger.md.',
      response: { 200: balancesResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => listBalances(req.ctx),
  });
}
