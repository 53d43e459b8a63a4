import { E164_RE } from '../../platform/validation.ts';
import type { FieldErrors } from '../../platform/errors/api-error.ts';

/** A phone of the request that gets no message, and why. */
export interface RejectedPhone {
  phone: string;
  reason: string;
}

/**
 * The request's phones as recipients: each must be E.164 as sent (`+`, country code, 7 to 15
 * digits; no spaces or dashes: we do not guess a number), duplicates collapse to one message in
 * the order first seen, and every invalid one is listed once in `rejected` (not fatal).
 */
export function splitPhones(phones: readonly string[]): { recipients: string[]; rejected: RejectedPhone[] } {
  const recipients = new Set<string>();
  const rejected = new Map<string, RejectedPhone>();
  for (const phone of phones) {
    if (E164_RE.test(phone)) recipients.add(phone);
    else if (!rejected.has(phone)) rejected.set(phone, { phone, reason: 'not an E.164 phone number (such as +573001234567)' });
  }
  return { recipients: [...recipients], rejected: [...rejected.values()] };
}

/** A filled template variable: present and not only spaces. */
const filled = (v: string | null | undefined): v is string => typeof v === 'string' && v.trim().length > 0;

/**
 * `optional_1..3` fill the template's variables in order without gaps: optional_n may be filled
 * only when every optional before it is. The answer names each field that leaves a gap behind it,
 * and the values to store (unfilled ones null).
 */
export function orderedOptionals(values: readonly (string | null | undefined)[]): { errors: FieldErrors | null; optionals: (string | null)[] } {
  const errors: FieldErrors = {};
  values.forEach((value, i) => {
    if (!filled(value)) return;
    const missing = values.slice(0, i).findIndex((before) => !filled(before));
    if (missing >= 0) errors[`optional_${i + 1}`] = [`optional_${missing + 1} must be filled before optional_${i + 1} (no gaps)`];
  });
  return { errors: Object.keys(errors).length ? errors : null, optionals: values.map((v) => (filled(v) ? v : null)) };
}

/**
 * The text a recipient reads: the template's body with the company's name and the optional texts
 * (what a campaign does not know, like a payment link, is left out), then the media's address for
 * providers that send plain text.
 */
export function campaignText(body: string, variables: Record<string, string>, mediaUrl: string): string {
  const text = body
    .replace(/\{\{\s*([a-z0-9_]+)\s*\}\}/gi, (_, name: string) => variables[name] ?? '')
    .replace(/[ \t]+/g, ' ')
    .replace(/ ([.,:;!?])/g, '$1')
    .trim();
  return `${text}\n${mediaUrl}`;
}
