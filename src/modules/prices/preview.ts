import { z } from 'zod';
import type { RequestContext } from '../../platform/context.ts';
import { CURRENCIES } from '../../platform/money.ts';
import { invoiceLineSchema, presentLine, previewLineSchema, resolveInvoiceLines } from './lines.ts';

/** POST /invoices/preview: the lines and totals an invoice with these items would have. Creates nothing. */
export const previewBody = z.object({
  items: z.array(invoiceLineSchema).min(1, 'must have at least one line').max(200, 'at most 200 lines'),
  currency: z.enum(CURRENCIES).optional().describe('default: the currency of the first catalog line, else COP'),
});
export type PreviewBody = z.infer<typeof previewBody>;

export const previewResponse = z.object({
  data: z.object({
    items: z.array(previewLineSchema),
    subtotal: z.number().int().describe('cents'),
    tax_amount: z.number().int().describe('cents'),
    total: z.number().int().describe('cents'),
  }),
});
export type PreviewResponse = z.infer<typeof previewResponse>;

export async function previewInvoice(ctx: RequestContext, body: PreviewBody): Promise<PreviewResponse> {
  const resolved = await resolveInvoiceLines(ctx.db, ctx, body.items, { currency: body.currency });
  return {
    data: {
      items: resolved.lines.map(presentLine),
      subtotal: Number(resolved.subtotal),
      tax_amount: Number(resolved.tax_amount),
      total: Number(resolved.total),
    },
  };
}
