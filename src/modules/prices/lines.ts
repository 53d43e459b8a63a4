import { z } from 'zod';
import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { CURRENCIES, formatPesos, fromBasisPoints, MINIMUM_MINOR, type Currency } from '../../platform/money.ts';
import { text } from '../../platform/validation.ts';
import { maxTransactionCop } from '../payments/queries.ts';
import { taxSchema } from './schemas.ts';
import { findPrices } from './service.ts';
import { lineAmounts, resolveTaxInput, sumLines, TAX_CODES, type ResolvedTax } from './tax.ts';

/**
 * Invoice lines (SPEC.md "Invoice line"): a catalog line (`price_id`; the price supplies name,
 * unit amount and tax, the line may override `tax`, `quantity`, `description`) or a free line
 * (`description` + `unit_amount`). One resolver for preview and invoices, so both give identical
 * numbers for identical lines.
 */
export const invoiceLineSchema = z.object({
  description: text(1, 500).nullish().describe('required with unit_amount; overrides the price name on a catalog line'),
  unit_amount: z.number().int().min(1).nullish().describe('integer cents (free lines); for inclusive tax, the amount containing the tax'),
  quantity: z.number().int().min(1).max(1_000_000).nullish().describe('integer, default 1'),
  tax: taxSchema.nullish().describe('free lines: default no tax (IVA 0 %); catalog lines: default the price tax, a sent tax replaces it'),
  price_id: z.string().max(100).nullish().describe('a catalog price (price_...) of the same company, environment and currency'),
});
export type InvoiceLineInput = z.infer<typeof invoiceLineSchema>;

export interface ResolvedLine {
  price_id: string | null;
  description: string;
  quantity: number;
  unit_amount: bigint;
  subtotal: bigint;
  tax_code: '01' | '04';
  tax_rate_bp: number;
  tax_behavior: 'exclusive' | 'inclusive';
  tax_amount: bigint;
  total: bigint;
}

export interface ResolvedInvoice {
  currency: string;
  lines: ResolvedLine[];
  subtotal: bigint;
  tax_amount: bigint;
  total: bigint;
}

const NO_TAX: ResolvedTax = { type: 'iva', rateBp: 0, behavior: 'exclusive' };

/**
 * Resolves request lines into priced lines with PRODUCT.md's tax math. Errors, in this order:
 * 422 validation_error for a tax rate DIAN does not list (`items.<i>.tax.rate`); 422
 * invalid_invoice_line for a line that cannot be resolved (`items.<i>[.field]`, the message names
 * the first such index); 422 invalid_invoice_line for a total outside the collectible range (`total`).
 */
export async function resolveInvoiceLines(
  db: Executor,
  scope: { companyId: string; environment: Environment },
  items: InvoiceLineInput[],
  opts: { currency?: string } = {},
): Promise<ResolvedInvoice> {
  if (items.length === 0) throw validationError({ items: ['must have at least one line'] });
  if (opts.currency !== undefined && !(CURRENCIES as readonly string[]).includes(opts.currency)) {
    throw validationError({ currency: [`must be one of ${CURRENCIES.join(', ')}`] });
  }
  const prices = await findPrices(
    db,
    scope.companyId,
    items.flatMap((item) => (item.price_id ? [item.price_id] : [])),
  );
  const usable = (id: string | null | undefined) => {
    const price = id ? prices.get(id) : undefined;
    return price && price.environment === scope.environment ? price : undefined;
  };
  // The invoice currency: the caller's, else the first catalog line's, else COP.
  const currency = (opts.currency ?? items.map((item) => usable(item.price_id)?.currency).find(Boolean) ?? 'COP') as Currency;

  const fieldErrors: FieldErrors = {};
  const lineErrors: FieldErrors = {};
  let firstBad: { index: number; message: string } | null = null;
  const bad = (index: number, key: string, message: string) => {
    (lineErrors[key] ??= []).push(message);
    firstBad ??= { index, message };
  };

  const lines: ResolvedLine[] = [];
  items.forEach((item, index) => {
    const path = `items.${index}`;
    const override = item.tax ? resolveTaxInput(item.tax, `${path}.tax`, fieldErrors) : null;
    let description: string;
    let unitAmount: bigint;
    let tax: ResolvedTax;
    let priceId: string | null = null;
    if (item.price_id) {
      const price = usable(item.price_id);
      if (!price) return bad(index, `${path}.price_id`, `no price ${item.price_id} in this environment`);
      if (!price.active) return bad(index, `${path}.price_id`, `price ${price.id} is inactive`);
      if (price.currency !== currency) return bad(index, `${path}.price_id`, `price ${price.id} is in ${price.currency}, the invoice in ${currency}`);
      if (item.unit_amount !== null && item.unit_amount !== undefined) {
        return bad(index, `${path}.unit_amount`, 'cannot be combined with price_id (the price supplies the amount)');
      }
      priceId = price.id;
      description = item.description ?? price.name;
      unitAmount = price.unit_amount;
      tax = override ?? { type: price.tax_type, rateBp: price.tax_rate_bp, behavior: price.tax_behavior };
    } else if (item.description && item.unit_amount !== null && item.unit_amount !== undefined) {
      description = item.description;
      unitAmount = BigInt(item.unit_amount);
      tax = override ?? NO_TAX;
    } else {
      return bad(index, path, 'needs either price_id, or description and unit_amount');
    }
    if (item.tax && !override) return; // rate error already recorded
    const quantity = item.quantity ?? 1;
    const amounts = lineAmounts(unitAmount, quantity, tax.rateBp, tax.behavior);
    lines.push({
      price_id: priceId,
      description,
      quantity,
      unit_amount: unitAmount,
      subtotal: amounts.subtotal,
      tax_code: TAX_CODES[tax.type],
      tax_rate_bp: tax.rateBp,
      tax_behavior: tax.behavior,
      tax_amount: amounts.taxAmount,
      total: amounts.total,
    });
  });

  if (Object.keys(fieldErrors).length) throw validationError(fieldErrors);
  const first = firstBad as { index: number; message: string } | null;
  if (first) {
    throw new ApiError('invalid_invoice_line', { message: `Invoice line ${first.index} cannot be resolved: ${first.message}.`, errors: lineErrors });
  }

  const totals = sumLines(lines.map((l) => ({ subtotal: l.subtotal, taxAmount: l.tax_amount, total: l.total })));
  await assertCollectible(db, scope.companyId, currency, totals.total);
  return { currency, lines, subtotal: totals.subtotal, tax_amount: totals.taxAmount, total: totals.total };
}

/** The total must be collectible: at least the payment minimum of the currency, at most the company maximum (COP). */
async function assertCollectible(db: Executor, companyId: string, currency: Currency, total: bigint): Promise<void> {
  const minimum = MINIMUM_MINOR[currency];
  let problem: string | null = null;
  if (total < minimum) problem = `must be at least ${formatPesos(minimum, currency)} (${minimum} cents)`;
  else if (currency === 'COP') {
    const maximum = (await maxTransactionCop(db, companyId)) * 100n;
    if (total > maximum) problem = `exceeds the maximum per transaction of ${formatPesos(maximum, 'COP')} (${maximum} cents)`;
  }
  if (problem === null && total > BigInt(Number.MAX_SAFE_INTEGER)) problem = `exceeds ${Number.MAX_SAFE_INTEGER} cents`;
  if (problem) {
    throw new ApiError('invalid_invoice_line', {
      message: `The invoice total is outside the collectible range: it ${problem}.`,
      errors: { total: [problem] },
    });
  }
}

/** A resolved line as the API shows it (SPEC.md "Invoice preview line"), plus price_id for catalog lines. */
export function presentLine(line: ResolvedLine): {
  description: string;
  quantity: number;
  unit_amount: number;
  subtotal: number;
  tax_rate: number;
  tax_amount: number;
  total: number;
  price_id?: string;
} {
  return {
    ...(line.price_id ? { price_id: line.price_id } : {}),
    description: line.description,
    quantity: line.quantity,
    unit_amount: Number(line.unit_amount),
    subtotal: Number(line.subtotal),
    tax_rate: fromBasisPoints(line.tax_rate_bp),
    tax_amount: Number(line.tax_amount),
    total: Number(line.total),
  };
}

/** The preview line schema (response), shared with the invoice `items`. */
export const previewLineSchema = z.object({
  price_id: z.string().optional(),
  description: z.string(),
  quantity: z.number().int(),
  unit_amount: z.number().int().describe('cents'),
  subtotal: z.number().int().describe('cents, before tax'),
  tax_rate: z.number().describe('percent'),
  tax_amount: z.number().int().describe('cents'),
  total: z.number().int().describe('cents'),
});
