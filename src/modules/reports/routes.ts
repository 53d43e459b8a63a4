import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses } from '../../platform/http/openapi.ts';
import { collectionsQuery, collectionsReport } from './service.ts';

const tags = ['Reports'];

export function reportRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/reports/collections', {
    schema: {
      tags,
      summary: "A day's collections (Asobancaria 2001 or CSV)",
      description:
        'The collections (paid charges and paid payment-link attempts) the ledger recorded on one Bogotá day for the key’s company and environment. format=asobancaria (default): the Asobancaria 2001 fixed-width file (records 01, 05, 06, 08, 09 of 162 characters, CRLF, amounts with 2 implied decimals, COP only); format=csv: one row per collection. Layout: docs/reports.md.',
      querystring: collectionsQuery,
      response: { 200: z.string().describe('text/plain (asobancaria) or text/csv'), ...errorResponses(401, 403, 422) },
    },
    handler: async (req, reply) => {
      const report = await collectionsReport(req.ctx, req.query);
      return reply.type(report.contentType).header('content-disposition', `attachment; filename="${report.filename}"`).send(report.body);
    },
  });
}
