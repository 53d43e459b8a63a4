import { createHmac } from 'node:crypto';
import { ApiError } from '../../platform/errors/api-error.ts';
import { bogotaMonth } from '../../platform/clock.ts';
import { sandboxCardOutcome } from '../../rails/sandbox-table.ts';

/**
 * Card data checks (docs/charges.md "Cards"). Pure functions: the card number and the security
 * code pass through here and are never kept, logged or returned; what leaves is the brand, the
 * last four digits, the expiry, a keyed fingerprint and the sandbox outcome class of the number.
 */

export const CARD_BRANDS = ['visa', 'mastercard', 'amex', 'diners', 'discover', 'jcb', 'unionpay', 'unknown'] as const;
export type CardBrand = (typeof CARD_BRANDS)[number];

/** Card numbers by brand: the prefixes (IIN ranges) and the lengths each network issues. */
const BRAND_RULES: { brand: Exclude<CardBrand, 'unknown'>; prefix: RegExp; lengths: number[] }[] = [
  { brand: 'amex', prefix: /^3[47]/, lengths: [15] },
  { brand: 'diners', prefix: /^3(?:0[0-5]|095|[689])/, lengths: [14, 15, 16, 17, 18, 19] },
  { brand: 'jcb', prefix: /^35(?:2[89]|[3-8])/, lengths: [16, 17, 18, 19] },
  { brand: 'visa', prefix: /^4/, lengths: [13, 16, 19] },
  { brand: 'mastercard', prefix: /^(?:5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/, lengths: [16] },
  { brand: 'discover', prefix: /^(?:6011|64[4-9]|65|622(?:12[6-9]|1[3-9]\d|[2-8]\d\d|9[01]\d|92[0-5]))/, lengths: [16, 17, 18, 19] },
  { brand: 'unionpay', prefix: /^62/, lengths: [16, 17, 18, 19] },
];

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return digits.length > 0 && sum % 10 === 0;
}

export function detectBrand(pan: string): CardBrand {
  return BRAND_RULES.find((r) => r.prefix.test(pan))?.brand ?? 'unknown';
}

/** The sandbox outcome class of a number (the sandbox table's test cards; any other approves). */
export function outcomeClass(pan: string): string {
  return sandboxCardOutcome(pan);
}

/** The longest a card may still be valid for: cards are issued for at most 20 years. */
const MAX_YEARS_AHEAD = 20;

export interface CardDataInput {
  card_number: string;
  expiration_month: string | number;
  expiration_year: string | number;
  cvv?: string | number | null;
  ccv?: string | number | null;
}

export interface CheckedCard {
  /** Digits only. Lives for the request; never stored, logged or returned. */
  pan: string;
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
  outcomeClass: string;
}

function text(value: string | number | null | undefined): string {
  return value === null || value === undefined ? '' : String(value).trim();
}

/**
 * Checks the card number (Luhn, length by brand: 10104 card_number), the security code (3 digits,
 * 4 for American Express: 10102 card_cvv) and the expiry (a real month, not in the past, at most
 * 20 years ahead: 10122 card_expired), in that order; the first problem is the answer.
 */
export function checkCardData(input: CardDataInput, now: Date): CheckedCard {
  const pan = input.card_number.replace(/[\s-]/g, '');
  if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) {
    throw new ApiError('card_number', { errors: { card_number: ['is not a valid card number'] } });
  }
  const brand = detectBrand(pan);
  const rule = BRAND_RULES.find((r) => r.brand === brand);
  if (rule && !rule.lengths.includes(pan.length)) {
    throw new ApiError('card_number', { errors: { card_number: [`a ${brand} card number has ${rule.lengths.join(' or ')} digits`] } });
  }

  const field = input.cvv !== undefined && input.cvv !== null ? 'cvv' : 'ccv';
  const cvv = text(input.cvv ?? input.ccv);
  const cvvLength = brand === 'amex' ? 4 : 3;
  if (!new RegExp(`^\\d{${cvvLength}}$`).test(cvv)) {
    throw new ApiError('card_cvv', { errors: { [field]: [`must be ${cvvLength} digits`] } });
  }

  const monthText = text(input.expiration_month);
  let yearText = text(input.expiration_year);
  if (/^\d{2}$/.test(yearText)) yearText = `20${yearText}`;
  const month = /^\d{1,2}$/.test(monthText) ? Number(monthText) : NaN;
  if (!(month >= 1 && month <= 12)) throw new ApiError('card_expired', { errors: { expiration_month: ['must be a month from 1 to 12'] } });
  if (!/^\d{4}$/.test(yearText)) throw new ApiError('card_expired', { errors: { expiration_year: ['must be a year such as 2030 or 30'] } });
  const year = Number(yearText);
  const expiry = year * 12 + (month - 1);
  const current = bogotaMonth(now);
  if (expiry < current) throw new ApiError('card_expired', { errors: { expiration_year: ['the card has expired'] } });
  if (expiry > current + MAX_YEARS_AHEAD * 12)
    throw new ApiError('card_expired', { errors: { expiration_year: [`must be at most ${MAX_YEARS_AHEAD} years ahead`] } });

  return { pan, brand, last4: pan.slice(-4), expMonth: month, expYear: year, outcomeClass: outcomeClass(pan) };
}

/**
 * The card's fingerprint: HMAC-SHA256 of the company and the number, keyed with the server's
 * card-data secret. Equal for the same card within a company, useless for finding the number.
 */
export function cardFingerprint(secret: string, companyId: string, pan: string): string {
  return createHmac('sha256', secret).update(`${companyId}\n${pan}`).digest('hex').slice(0, 32);
}
