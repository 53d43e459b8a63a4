import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { createCreditNote, getCreditNote } from './credit-notes.ts';
import { createInvoiceBody, creditNoteBody, creditNoteParams, creditNoteResponse, idParams, invoiceListQuery, invoiceResponse } from './schemas.ts';
import { createInvoice, getDocument, getInvoice, listInvoices, stampInvoice } from './service.ts';

const tags = ['Invoices'];

export function invoiceRoutes(app: FastifyInstance, _deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/invoices', {
    schema: {
      tags,
      summary: 'Create an invoice (issued with items, or imported without)',
      description:
        'With items: customer_id, items, name, stamp_policy (none default, on_payment, on_issue, manual), due_date, reference, metadata, test_scenario (test keys: stamp_rejected). Without items: provider, provider_id, reference, amount (an integer number of pesos): imported, collected, never stamped. 201 with the invoice (status CREATED, fiscal_status null) and its payment. 422 customer_not_invoiceable lists every missing receiver field; 422 invalid_invoice_line. Accepts Idempotency-Key. See docs/invoicing.md.',
      body: createInvoiceBody,
      response: { 201: invoiceResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req, reply) => reply.code(201).send(await createInvoice(req.ctx, req.body)),
  });

  r.get('/invoices', {
    schema: {
      tags,
      summary: 'List invoices',
      description:
        'Filters id, status (CREATED, PAID, CANCELED, REFUNDED), reference, provider_id, fiscal_status (pending, stamped, rejected, null); sort created_at.',
      querystring: invoiceListQuery,
      response: { 200: listEnvelopeSchema(invoiceResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listInvoices(req.ctx, req.query, listPath(req)),
  });

  r.get('/invoices/:id', {
    schema: {
      tags,
      summary: 'Get an invoice with its credit notes and stamping history',
      params: idParams,
      response: { 200: invoiceResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getInvoice(req.ctx, req.params.id),
  });

  r.post('/invoices/:id/stamp', {
    schema: {
      tags,
      summary: 'Stamp a manual invoice',
      description:
        'Queues the stamping of an invoice with stamp_policy manual (or any invoice whose last stamping was rejected); the outcome arrives as invoice.stamped or invoice.stamp_rejected. 422 invoice_not_stampable when imported, without lines, policy none/on_issue/on_payment, already stamped or a stamping in progress; 422 resolution_not_activatable at once (nothing queued) when no active invoice resolution has folios left.',
      params: idParams,
      response: { 200: invoiceResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => stampInvoice(req.ctx, req.params.id),
  });

  r.post('/invoices/:id/credit-notes', {
    schema: {
      tags,
      summary: 'Issue a credit note on a stamped invoice',
      description:
        'amount: integer cents (omitted: the whole invoice, so after a partial note it is credit_note_not_issuable); reason. The credit note is stamped under the credit_note resolution (CUDE); invoice.credit_note_issued when accepted. 422 credit_note_not_issuable when the invoice is not stamped or the amount exceeds what remains.',
      params: idParams,
      body: creditNoteBody,
      response: { 200: creditNoteResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createCreditNote(req.ctx, req.params.id, req.body ?? {}),
  });

  r.get('/invoices/:id/credit-notes/:credit_note_id', {
    schema: { tags, summary: 'Get a credit note', params: creditNoteParams, response: { 200: creditNoteResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getCreditNote(req.ctx, req.params.id, req.params.credit_note_id),
  });

  const docs = [
    { path: '/invoices/:id/xml', kind: 'xml', params: idParams, summary: 'The accepted invoice XML (legal document)' },
    { path: '/invoices/:id/pdf', kind: 'pdf', params: idParams, summary: 'The invoice PDF (graphical representation)' },
    { path: '/invoices/:id/credit-notes/:credit_note_id/xml', kind: 'xml', params: creditNoteParams, summary: 'The accepted credit note XML' },
    { path: '/invoices/:id/credit-notes/:credit_note_id/pdf', kind: 'pdf', params: creditNoteParams, summary: 'The credit note PDF' },
  ] as const;
  for (const d of docs) {
    r.get(d.path, {
      schema: {
        tags,
        summary: d.summary,
        description: '404 record_not_found until a document is accepted by the tax authority.',
        params: d.params,
        response: { 200: z.string().describe(d.kind === 'xml' ? 'application/xml' : 'application/pdf'), ...errorResponses(401, 404) },
      },
      handler: async (req, reply) => {
        const params = req.params as { id: string; credit_note_id?: string };
        const body = await getDocument(req.ctx, params.id, params.credit_note_id ?? null, d.kind);
        return reply.type(d.kind === 'xml' ? 'application/xml; charset=utf-8' : 'application/pdf').send(body as string);
      },
    });
  }
}
