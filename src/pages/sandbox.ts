import { luhnValid } from '../modules/cards/card-data.ts';
import { bogotaMonth } from '../platform/clock.ts';

/**
 * The payer's form input: card checks, phones, amounts, decline texts. Pure functions: the card
 * number and CVV pass through here and are never kept anywhere. Outcomes are the rails' (the
 * sandbox table, src/rails/sandbox-table.ts), never decided here.
 */

export type FieldErrors = Record<string, string>;

export interface CardInput {
  card_number: string;
  exp_month: string;
  exp_year: string;
  cvv: string;
  holder_name: string;
}

export interface CheckedCard {
  /** Digits only. Lives for the request; never stored, logged or echoed back. */
  pan: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
}

// One Luhn check for the API and the pages.
export { luhnValid };

export function cardBrand(pan: string): string {
  if (/^4/.test(pan)) return 'Visa';
  if (/^(5[1-5]|2[2-7])/.test(pan)) return 'Mastercard';
  if (/^3[47]/.test(pan)) return 'American Express';
  if (/^3(0[0-5]|[68])/.test(pan)) return 'Diners Club';
  if (/^(6011|65|64[4-9])/.test(pan)) return 'Discover';
  return 'Tarjeta';
}

/** The card holder's name as the card shows it, or why not (the same check on every card form). */
export function holderNameError(name: string): string | null {
  const holder = name.trim().replace(/\s+/g, ' ');
  if (holder.length < 2) return 'Escribe el nombre como aparece en la tarjeta.';
  if (holder.length > 100 || /[\d<>{}]/.test(holder)) return 'El nombre no es válido.';
  return null;
}

/**
 * Validates a card form: Luhn (code 10104 in the API), expiry (10122), CVV (10102), holder name.
 * Messages are Spanish, keyed by form field.
 */
export function checkCard(input: CardInput, now: Date): { errors: FieldErrors; card: CheckedCard | null } {
  const errors: FieldErrors = {};
  const pan = input.card_number.replace(/[\s-]/g, '');
  if (pan === '') errors.card_number = 'Escribe el número de la tarjeta.';
  else if (!/^\d{12,19}$/.test(pan)) errors.card_number = 'El número de la tarjeta debe tener entre 12 y 19 dígitos.';
  else if (!luhnValid(pan)) errors.card_number = 'El número de la tarjeta no es válido. Revísalo.';

  const month = input.exp_month.trim();
  let year = input.exp_year.trim();
  if (/^\d{2}$/.test(year)) year = `20${year}`;
  const m = /^\d{1,2}$/.test(month) ? Number(month) : NaN;
  if (!(m >= 1 && m <= 12)) errors.exp_month = 'Elige el mes de vencimiento.';
  else if (!/^\d{4}$/.test(year)) errors.exp_year = 'Elige el año de vencimiento.';
  else {
    const expiry = Number(year) * 12 + (m - 1);
    const current = bogotaMonth(now);
    if (expiry < current) errors.exp_year = 'La tarjeta está vencida. Revisa la fecha o usa otra tarjeta.';
    else if (expiry > current + 20 * 12) errors.exp_year = 'El año de vencimiento no es válido.';
  }

  const cvv = input.cvv.trim();
  const amex = /^3[47]/.test(pan);
  if (cvv === '') errors.cvv = 'Escribe el código de seguridad (CVV).';
  else if (!(amex ? /^\d{4}$/ : /^\d{3}$/).test(cvv))
    errors.cvv = amex ? 'El código de seguridad tiene 4 dígitos.' : 'El código de seguridad tiene 3 dígitos.';

  const holder = holderNameError(input.holder_name);
  if (holder) errors.holder_name = holder;

  if (Object.keys(errors).length) return { errors, card: null };
  return { errors, card: { pan, brand: cardBrand(pan), last4: pan.slice(-4), expMonth: m, expYear: Number(year) } };
}

/** What a payment attempt's rail answered. */
export type AttemptOutcome = { status: 'approved' } | { status: 'declined'; remarks: string } | { status: 'pending' };

/** A Colombian mobile number as E.164: `3991111111`, `399 111 1111`, `+57 399 111 1111`. */
export function normalisePhone(value: string): string | null {
  const compact = value.replace(/[\s().-]/g, '');
  if (/^3\d{9}$/.test(compact)) return `+57${compact}`;
  if (/^57 ?3\d{9}$/.test(compact)) return `+${compact}`;
  if (/^\+573\d{9}$/.test(compact)) return compact;
  return null;
}

/** Spanish words for the rejection reasons of docs/payments.md. */
export const DECLINE_TEXT: Record<string, string> = {
  TRANSACTION_REJECTED: 'La entidad financiera rechazó la transacción.',
  CARD_EXPIRED: 'La tarjeta está vencida según el banco emisor.',
  INSUFFICIENT_FUNDS: 'No hay fondos suficientes.',
  RISK_CONTROL: 'La transacción fue bloqueada por control de riesgo.',
  CANCELLED_BY_PAYER: 'Cancelaste el intento de pago.',
  TIMEOUT: 'El medio de pago no respondió a tiempo.',
};

export function declineText(remarks: string | null): string {
  return (remarks && DECLINE_TEXT[remarks]) || 'El pago no fue aprobado.';
}

/**
 * Pesos as a Colombian payer writes them → minor units: `150000`, `150.000`, `$ 150.000`,
 * `1.500,50`, `1500,5`, `1500.50`. Null when it is not an amount.
 */
export function parsePesosInput(value: string): bigint | null {
  let text = value.replace(/[\s$\u00a0]/g, '').replace(/^COP/i, '');
  if (text === '') return null;
  let whole: string;
  let frac = '';
  if (/^\d{1,3}(\.\d{3})+(,\d{1,2})?$/.test(text)) {
    // es-CO: dots group thousands, a comma starts the decimals.
    [whole, frac = ''] = text.replace(/\./g, '').split(',');
  } else if (/^\d{1,3}(,\d{3})+(\.\d{1,2})?$/.test(text)) {
    [whole, frac = ''] = text.replace(/,/g, '').split('.');
  } else if (/^\d+([.,]\d{1,2})?$/.test(text)) {
    text = text.replace(',', '.');
    [whole, frac = ''] = text.split('.');
  } else {
    return null;
  }
  if (whole.length > 15) return null;
  return BigInt(whole) * 100n + BigInt(frac.padEnd(2, '0') || '0');
}
