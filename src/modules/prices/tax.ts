import taxRates from '../../data/tax-rates.json' with { type: 'json' };
import { divRoundHalfUp, fromBasisPoints, parseBasisPoints } from '../../platform/money.ts';

/**
 * PRODUCT.md's tax math, in integer cents (bigint) with rates in basis points (19 % = 1900), so no
 * float ever touches money. The one implementation used by prices, preview and invoices.
 */

export const TAX_TYPES = ['iva', 'inc'] as const;
export type TaxType = (typeof TAX_TYPES)[number];
export const TAX_BEHAVIORS = ['exclusive', 'inclusive'] as const;
export type TaxBehavior = (typeof TAX_BEHAVIORS)[number];

/** DIAN tax scheme codes (TipoImpuesto): 01 IVA, 04 INC. */
export const TAX_CODES: Record<TaxType, '01' | '04'> = { iva: '01', inc: '04' };

/** The rates DIAN lists per tax (TarifaImpuestoIVA / TarifaImpuestoINC, generated into src/data/tax-rates.json). */
export const ALLOWED_RATES_BP: Record<TaxType, readonly number[]> = { iva: taxRates.iva, inc: taxRates.inc };

export function allowedRatesText(type: TaxType): string {
  return ALLOWED_RATES_BP[type].map((bp) => String(fromBasisPoints(bp))).join(', ');
}

/** A percent rate of the given tax → basis points, or the error message when DIAN does not list it. */
export function taxRateBp(type: TaxType, rate: number): { bp: number } | { error: string } {
  const bp = parseBasisPoints(rate, { allowZero: true });
  if (bp === null || !ALLOWED_RATES_BP[type].includes(bp)) {
    return { error: `must be one of the ${type.toUpperCase()} rates DIAN allows: ${allowedRatesText(type)}` };
  }
  return { bp };
}

export interface LineAmounts {
  subtotal: bigint;
  taxAmount: bigint;
  total: bigint;
}

/**
 * One line: gross = unit_amount × quantity. Exclusive: subtotal = gross, tax = round_half_up(subtotal
 * × rate). Inclusive: total = gross, subtotal = round_half_up(total / (1 + rate)), tax = total − subtotal.
 */
export function lineAmounts(unitAmount: bigint, quantity: number, rateBp: number, behavior: TaxBehavior): LineAmounts {
  if (unitAmount < 0n || !Number.isSafeInteger(quantity) || quantity < 0 || !Number.isInteger(rateBp) || rateBp < 0) {
    throw new RangeError('lineAmounts: negative or non-integer input');
  }
  const gross = unitAmount * BigInt(quantity);
  const rate = BigInt(rateBp);
  if (behavior === 'exclusive') {
    const taxAmount = divRoundHalfUp(gross * rate, 10_000n);
    return { subtotal: gross, taxAmount, total: gross + taxAmount };
  }
  const subtotal = divRoundHalfUp(gross * 10_000n, 10_000n + rate);
  return { subtotal, taxAmount: gross - subtotal, total: gross };
}

/** Invoice totals: sums of the line values. */
export function sumLines(lines: readonly LineAmounts[]): LineAmounts {
  let subtotal = 0n;
  let taxAmount = 0n;
  let total = 0n;
  for (const l of lines) {
    subtotal += l.subtotal;
    taxAmount += l.taxAmount;
    total += l.total;
  }
  return { subtotal, taxAmount, total };
}

export interface ResolvedTax {
  type: TaxType;
  rateBp: number;
  behavior: TaxBehavior;
}

/**
 * A tax object of a request (price or line) → the tax it means; missing behavior is exclusive,
 * missing type is IVA. A rate DIAN does not list for the type is reported under `<path>.rate`.
 */
export function resolveTaxInput(
  input: { rate: number; behavior?: TaxBehavior | null; type?: TaxType | null },
  path: string,
  errors: Record<string, string[]>,
): ResolvedTax | null {
  const type = input.type ?? 'iva';
  const rate = taxRateBp(type, input.rate);
  if ('error' in rate) {
    (errors[`${path}.rate`] ??= []).push(rate.error);
    return null;
  }
  return { type, rateBp: rate.bp, behavior: input.behavior ?? 'exclusive' };
}
