import municipalities from '../../data/municipalities.json' with { type: 'json' };
import responsibilities from '../../data/fiscal-responsibilities.json' with { type: 'json' };
import { nitCheckDigit } from '../../documents/dian/nit.ts';
import type { FieldErrors } from '../../platform/errors/api-error.ts';

/**
 * The KYB checks of POST /companies (docs/companies.md), pure: the NIT and its check digit
 * (DIAN's modulo 11, the one implementation in documents/dian/nit.ts), the CIIU activity code,
 * the DIVIPOLA city, the DIAN responsibility codes.
 */
const CITY_CODES = new Set(Object.keys(municipalities));
const RESPONSIBILITY_CODES = new Set(Object.keys(responsibilities));

/**
 * CIIU Rev. 4 A.C. (DANE's adaptation of ISIC Rev. 4) groups classes by two-digit division; these
 * are the divisions that exist (04, 34, 40, 44, 48, 54, 57, 67, 76, 83 and 89 do not). No list of
 * classes ships with the service, so a code is four digits whose division exists.
 */
const CIIU_DIVISIONS = new Set(
  [
    [1, 3],
    [5, 33],
    [35, 39],
    [41, 43],
    [45, 47],
    [49, 53],
    [55, 56],
    [58, 66],
    [68, 75],
    [77, 82],
    [84, 88],
    [90, 99],
  ].flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)),
);

export function ciiuProblem(code: string): string | null {
  if (!/^\d{4}$/.test(code)) return 'must be a CIIU Rev. 4 class code: four digits';
  if (!CIIU_DIVISIONS.has(Number(code.slice(0, 2)))) return `division ${code.slice(0, 2)} does not exist in CIIU Rev. 4 A.C.`;
  return null;
}

/** `900123456-7` (OnePay's form) or digits with `dv` apart: the NIT digits and its check digit, checked. */
export function parseNit(documentNumber: string, dv: string | undefined): { nit: string; dv: string } | string {
  const m = /^(\d{5,15})(?:-(\d))?$/.exec(documentNumber.replace(/[.\s]/g, ''));
  if (!m) return 'must be the NIT digits followed by -check digit, e.g. 900123456-7';
  const digit = m[2] ?? dv;
  if (digit === undefined) return 'needs its check digit (900123456-7)';
  if (nitCheckDigit(m[1]) !== Number(digit)) return `check digit ${digit} does not match the NIT (DIAN modulo 11)`;
  return { nit: m[1], dv: digit };
}

/** OnePay's `city_id` (a number or string) as a 5-digit DIVIPOLA code, or null when it is none. */
export function divipola(cityId: string | number): string | null {
  const code = String(cityId).padStart(5, '0');
  return /^\d{5}$/.test(code) && CITY_CODES.has(code) ? code : null;
}

/** `O_47` (OnePay) or `O-47` (DIAN) → `O-47`; null when DIAN has no such code. */
export function responsibilityCode(value: string): string | null {
  const code = value.trim().toUpperCase().replaceAll('_', '-');
  return RESPONSIBILITY_CODES.has(code) ? code : null;
}

/** The KYB data as stored and answered (normalised). */
export interface KybData {
  type: 'organization';
  name: string;
  legal_name: string;
  document_type: 'NIT';
  document_number: string;
  phone: string;
  email: string;
  website: string | null;
  economic_activity: string;
  industry: string | null;
  sales: number | null;
  fiscal_responsibilities: string[];
  retention_rules: { iva: boolean; ica: boolean; fuente: boolean };
  city_id: string;
  address: { address: string; hint: string | null; zipcode: string | null };
  documents: Record<string, string>;
  company_owner: { name: string; last_name: string; phone: string | null; email: string | null; document_type: string; dni: string };
  account: { type: string; bank_id: string; number: string; terms: boolean } | null;
}

export type AddError = (field: string, message: string) => void;

export function collector(): { errors: FieldErrors; add: AddError } {
  const errors: FieldErrors = {};
  return { errors, add: (field, message) => (errors[field] ??= []).push(message) };
}
