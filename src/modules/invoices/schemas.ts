import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { metadata, text } from '../../platform/validation.ts';
import { invoiceLineSchema } from '../prices/lines.ts';
import { CREDIT_NOTE_STATUSES, FISCAL_STATUSES, INVOICE_STATUSES, STAMP_POLICIES } from './tables.ts';

export const INVOICE_TEST_SCENARIOS = ['stamp_rejected'] as const;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** POST /invoices: both modes (SPEC.md "What the service does"); which fields apply is checked in the service. */
export const createInvoiceBody = z.object({
  // With items (issued by Recaudo)
  customer_id: z.string().max(100).nullish().describe('required with items: a customer of the company in this environment'),
  items: z.array(invoiceLineSchema).max(500).nullish().describe('invoice lines; their presence selects the issued mode'),
  name: text(1, 255).nullish().describe('invoice title'),
  stamp_policy: z.enum(STAMP_POLICIES).nullish().describe('none (default), on_payment, on_issue or manual'),
  due_date: z.string().regex(DATE, 'must be a date YYYY-MM-DD').nullish(),
  reference: text(1, 100).nullish(),
  metadata: metadata.nullish(),
  currency: z.string().max(10).nullish().describe('COP'),
  test_scenario: z.string().max(50).nullish().describe('test keys only: stamp_rejected'),
  // Without items (imported from the company's own system)
  provider: text(1, 100).nullish().describe('without items: the system the invoice comes from'),
  provider_id: text(1, 100).nullish().describe("without items: the invoice's id in that system"),
  amount: z
    .union([z.number(), z.string().max(30)])
    .nullish()
    .describe('without items: an integer number of pesos (SPEC.md: the invoice amount is in pesos; decimals are refused)'),
});
export type CreateInvoiceBody = z.infer<typeof createInvoiceBody>;

export const creditNoteBody = z.object({
  amount: z
    .number()
    .int()
    .min(1)
    .nullish()
    .describe('integer cents; omitted: the whole invoice total (refused with credit_note_not_issuable after a partial note)'),
  reason: text(1, 500).nullish().describe('why the invoice is corrected'),
});

export const idParams = z.object({ id: z.string() });
export const creditNoteParams = z.object({ id: z.string(), credit_note_id: z.string() });

const line = z.object({
  price_id: z.string().optional().describe('catalog lines only'),
  description: z.string(),
  quantity: z.number(),
  unit_amount: z.number(),
  subtotal: z.number(),
  tax_rate: z.number(),
  tax_amount: z.number(),
  total: z.number(),
});
const totals = z.object({ subtotal: z.number(), tax_amount: z.number(), total: z.number() });

export const stampingResponse = z.object({
  type: z.enum(['invoice', 'credit_note']),
  status: z.enum(['accepted', 'rejected']),
  number: z.string().nullable(),
  cufe: z.string().optional(),
  xml_url: z.string().optional(),
  pdf_url: z.string().optional(),
  total: z.number(),
  rejection_reason: z.string().optional(),
  credit_note_id: z.string().optional(),
  created_at: z.string(),
});

export const creditNoteResponse = z.object({
  id: z.string(),
  invoice_id: z.string(),
  status: z.enum(CREDIT_NOTE_STATUSES),
  amount: z.number(),
  reason: z.string(),
  discrepancy_code: z.string(),
  origin: z.enum(['api', 'refund']),
  currency: z.string(),
  items: z.array(line),
  totals,
  number: z.string().nullable(),
  cude: z.string().nullable(),
  xml_url: z.string().nullable(),
  pdf_url: z.string().nullable(),
  stampings: z.array(stampingResponse),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const invoiceResponse = z.object({
  id: z.string(),
  status: z.enum(INVOICE_STATUSES),
  fiscal_status: z.enum(FISCAL_STATUSES).nullable(),
  stamp_policy: z.enum(STAMP_POLICIES),
  currency: z.string(),
  customer: z.object({ id: z.string(), name: z.string(), document_number: z.string().nullable() }).nullable(),
  items: z.array(line),
  totals,
  amount: z.number(),
  payment_id: z.string(),
  stampings: z.array(stampingResponse),
  name: z.string().nullable(),
  reference: z.string().nullable(),
  due_date: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  provider: z.string().nullable(),
  provider_id: z.string().nullable(),
  number: z.string().nullable(),
  cufe: z.string().nullable(),
  credited_amount: z.number(),
  credit_notes: z.array(creditNoteResponse).optional(),
  test_scenario: z.string().nullable(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type InvoiceResponse = z.infer<typeof invoiceResponse>;
export type CreditNoteResponse = z.infer<typeof creditNoteResponse>;
export type StampingResponse = z.infer<typeof stampingResponse>;

export const invoiceList: ListSpec<'id' | 'status' | 'reference' | 'provider_id' | 'fiscal_status', 'created_at'> = {
  filters: ['id', 'status', 'reference', 'provider_id', 'fiscal_status'],
  sorts: ['created_at'],
};
export const invoiceListQuery = listQuerySchema(invoiceList);
