/** SPEC.md: the currencies of payments and charges. */
export const CURRENCIES = ['COP', 'USD', 'MXN'] as const;
export type Currency = (typeof CURRENCIES)[number];

/**
 * Money at the edge: the API speaks pesos (numbers with at most 2 decimals), the database integer
 * minor units (bigint centavos). Parsing goes through the decimal text, never through float math.
 */

/** SPEC.md Limits: COP 1,000; USD 1; MXN 5 (in minor units). */
export const MINIMUM_MINOR: Record<Currency, bigint> = { COP: 100_000n, USD: 100n, MXN: 500n };

const DECIMAL = /^(\d{1,15})(?:\.(\d{1,2}))?$/;

/**
 * Pesos (JSON number or numeric string) → minor units; null when not a non-negative amount with
 * at most 2 decimals and 15 integer digits. JSON numbers are read through their shortest decimal
 * text (15000.5 → "15000.5"), which is exact for every value a client can mean with 2 decimals.
 */
export function parseMinor(value: unknown): bigint | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return null;
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return null;
  }
  const m = DECIMAL.exec(text);
  if (!m) return null;
  return BigInt(m[1]) * 100n + BigInt((m[2] ?? '').padEnd(2, '0'));
}

/** Minor units → pesos as a JSON number (exact for every amount below 2^53 centavos). */
export function toPesos(minor: bigint): number {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const text = `${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
  return Number(negative ? `-${text}` : text);
}

/** A percentage with at most 2 decimals (0 < p <= 100) → basis points; null when invalid. */
export function parseBasisPoints(value: unknown, { allowZero = false } = {}): number | null {
  const minor = parseMinor(value);
  if (minor === null || minor > 10_000n || (!allowZero && minor === 0n)) return null;
  return Number(minor);
}

export function fromBasisPoints(bp: number): number {
  return toPesos(BigInt(bp));
}

/** round_half_up(a / b) for non-negative bigints. */
export function divRoundHalfUp(a: bigint, b: bigint): bigint {
  return (2n * a + b) / (2n * b);
}

/** Tax contained in a tax-inclusive total (PRODUCT.md's inclusive formula): total - round_half_up(total / (1 + rate)). */
export function inclusiveTax(total: bigint, rateBp: number): bigint {
  return total - divRoundHalfUp(total * 10_000n, 10_000n + BigInt(rateBp));
}

/** A percentage share of an amount, rounded down so shares never exceed the whole. */
export function percentageOf(total: bigint, bp: number): bigint {
  return (total * BigInt(bp)) / 10_000n;
}

export function formatPesos(minor: bigint, currency: Currency): string {
  return `${currency} ${toPesos(minor).toLocaleString('es-CO', { minimumFractionDigits: 0, maximumFractionDigits: 2 })}`;
}
