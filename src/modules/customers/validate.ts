import municipalities from '../../data/municipalities.json' with { type: 'json' };
import responsibilities from '../../data/fiscal-responsibilities.json' with { type: 'json' };
import regimes from '../../data/tax-regimes.json' with { type: 'json' };
import type { FieldErrors } from '../../platform/errors/api-error.ts';
import { nitCheckDigit } from '../../documents/dian/nit.ts';

const CITY_CODES = new Set(Object.keys(municipalities));
const RESPONSIBILITY_CODES = new Set(Object.keys(responsibilities));
const REGIME_CODES = new Set(Object.keys(regimes));
export interface CustomerShape {
  type: 'natural' | 'company';
  document_type: string | null;
  document_number: string | null;
  document_verification: string | null;
  address: { city_code?: string } | null;
  fiscal_responsibilities: string[] | null;
  tax_regime: string | null;
}

/** Rules across fields (SPEC.md Customer): types and documents agree, codes exist. */
export function customerRuleErrors(c: CustomerShape): FieldErrors {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  if (c.document_type) {
    const allowed = c.type === 'company' ? ['NIT'] : ['CC', 'CE', 'PASSPORT'];
    if (!allowed.includes(c.document_type)) add('document_type', `a ${c.type} customer takes ${allowed.join(', ')}`);
    if (!c.document_number) add('document_number', 'is required with document_type');
  } else if (c.document_number) {
    add('document_type', 'is required with document_number');
  }
  if (c.document_number && c.document_type && ['CC', 'NIT'].includes(c.document_type) && !/^\d{3,15}$/.test(c.document_number)) {
    add('document_number', `a ${c.document_type} has only digits (3 to 15)`);
  }
  if (c.document_verification !== null) {
    if (c.document_type !== 'NIT') add('document_verification', 'only applies to a NIT');
    else if (c.document_number && /^\d+$/.test(c.document_number) && nitCheckDigit(c.document_number) !== Number(c.document_verification)) {
      add('document_verification', 'does not match the NIT check digit');
    }
  }
  if (c.address?.city_code && !CITY_CODES.has(c.address.city_code)) add('address.city_code', 'is not a DIVIPOLA municipality code');
  for (const code of c.fiscal_responsibilities ?? []) {
    if (!RESPONSIBILITY_CODES.has(code)) add('fiscal_responsibilities', `unknown DIAN responsibility code ${code}`);
  }
  if (c.tax_regime !== null && !REGIME_CODES.has(c.tax_regime)) add('tax_regime', `must be one of ${[...REGIME_CODES].join(', ')}`);
  return errors;
}
