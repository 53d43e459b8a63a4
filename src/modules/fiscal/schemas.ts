import { z } from 'zod';
import { DIAN_MODES, DIAN_TIMEOUT_MAX_MS, DIAN_TIMEOUT_MIN_MS } from './dian-settings.ts';
import { DOCUMENT_TYPES, RESOLUTION_STATUSES } from './tables.ts';

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD');
const folio = z.number().int().min(1).max(999_999_999_999);

export const createResolutionBody = z.object({
  number: z
    .string()
    .regex(/^[0-9A-Za-z-]{1,50}$/, 'must be 1 to 50 letters, digits or dashes')
    .describe('DIAN resolution number'),
  prefix: z
    .string()
    .regex(/^[A-Z0-9]{0,4}$/, 'must be 0 to 4 upper-case letters or digits')
    .nullish()
    .describe('numbering prefix as authorized by DIAN (0 to 4 upper-case letters or digits); default none'),
  document_type: z.enum(DOCUMENT_TYPES).describe('invoice or credit_note (credit notes need their own resolution and prefix)'),
  from: folio.describe('first folio of the authorized range'),
  to: folio.describe('last folio of the authorized range'),
  valid_from: date.describe('first day the range may be used (Bogotá)'),
  valid_until: date.describe('last day the range may be used (Bogotá)'),
  technical_key: z
    .string()
    .regex(/^[0-9A-Za-z]{1,200}$/, 'must be 1 to 200 letters or digits')
    .nullish()
    .describe('technical key of the range; required for invoice resolutions'),
});
export type CreateResolutionBody = z.infer<typeof createResolutionBody>;

export const resolutionResponse = z.object({
  id: z.string(),
  number: z.string(),
  prefix: z.string(),
  document_type: z.enum(DOCUMENT_TYPES),
  from: z.number().int(),
  to: z.number().int(),
  valid_from: z.string(),
  valid_until: z.string(),
  technical_key: z.string().nullable(),
  status: z
    .enum(RESOLUTION_STATUSES)
    .describe('draft, active, or retired (replaced by another activated resolution with the same prefix and document type)'),
  next_folio: z.number().int().nullable().describe('the folio the next document takes; null when exhausted'),
  used: z.number().int(),
  remaining: z.number().int(),
  is_default: z.boolean().describe("one of the test environment's built-in sandbox resolutions"),
  is_test: z.boolean(),
  activated_at: z.string().nullable(),
  retired_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const idParams = z.object({ id: z.string() });

// ---- Company fiscal profile (GET/PUT /fiscal-profile) ----

/** PUT /fiscal-profile: fields not sent keep their value (in test: the default profile's). */
export const fiscalProfileBody = z.object({
  nit: z
    .string()
    .regex(/^\d{5,15}$/, 'must be the NIT digits (5 to 15), without the check digit')
    .optional(),
  dv: z
    .union([z.string().regex(/^\d$/, 'must be one digit'), z.number().int().min(0).max(9)])
    .optional()
    .describe('NIT check digit'),
  legal_name: z.string().min(1).max(450).optional(),
  trade_name: z.string().min(1).max(450).nullish(),
  address: z
    .object({
      line: z.string().min(1).max(255),
      city_code: z.string().regex(/^\d{5}$/, 'must be a 5-digit DIVIPOLA municipality code'),
    })
    .optional(),
  email: z.email('must be a valid e-mail address').max(255).nullish(),
  phone: z
    .string()
    .regex(/^\+?[0-9 ()-]{7,20}$/, 'must be a phone number')
    .nullish(),
  fiscal_responsibilities: z.array(z.string().max(20)).min(1).max(20).optional().describe('DIAN responsibility codes, e.g. O-13, O-15, R-99-PN'),
  tax_regime: z.string().max(10).optional().describe('48 (IVA responsible) or 49 (not responsible)'),
  software_id: z.string().min(1).max(100).optional().describe('software id registered with DIAN'),
  software_pin: z.string().min(1).max(100).optional().describe('write-only: never returned'),
  certificate: z
    .string()
    .max(300_000)
    .nullish()
    .describe('write-only: the signing certificate as base64 PKCS#12 (with certificate_password); null removes it'),
  certificate_password: z.string().max(500).optional().describe('write-only: password of the PKCS#12'),
  dian: z
    .object({
      endpoint: z.string().min(1).max(500).optional().describe('habilitacion, produccion, or an https URL of the DIAN web service'),
      mode: z
        .enum(DIAN_MODES)
        .optional()
        .describe('sync (SendBillSync), async (SendBillAsync + GetStatusZip) or test_set (SendTestSetAsync, habilitación)'),
      test_set_id: z
        .string()
        .regex(/^[0-9A-Za-z-]{1,100}$/, 'must be the test set id DIAN gave (letters, digits, dashes)')
        .nullish()
        .describe('required in test_set mode'),
      timeout_ms: z.number().int().min(DIAN_TIMEOUT_MIN_MS).max(DIAN_TIMEOUT_MAX_MS).optional().describe('per web-service call; default 30000'),
    })
    .strict()
    .optional()
    .describe('DIAN web-service settings (docs/dian-webservice.md); fields not sent keep their value'),
});
export type FiscalProfileBody = z.infer<typeof fiscalProfileBody>;

export const fiscalProfileResponse = z.object({
  configured: z.boolean().describe('false in live until the profile is set'),
  is_default: z.boolean().describe('test only: the built-in sandbox profile, not yet overridden'),
  is_test: z.boolean(),
  nit: z.string().nullable(),
  dv: z.string().nullable(),
  legal_name: z.string().nullable(),
  trade_name: z.string().nullable(),
  address: z.object({ line: z.string(), city_code: z.string() }).nullable(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  fiscal_responsibilities: z.array(z.string()),
  tax_regime: z.string().nullable(),
  software_id: z.string().nullable(),
  software_pin_set: z.boolean(),
  certificate: z
    .object({ subject: z.string(), issuer: z.string(), serial: z.string(), valid_from: z.string(), valid_until: z.string() })
    .nullable()
    .describe('summary of the signing certificate; the PKCS#12 and its password are never returned'),
  dian: z
    .object({ endpoint: z.string(), mode: z.enum(DIAN_MODES), test_set_id: z.string().nullable(), timeout_ms: z.number().int() })
    .nullable()
    .describe('DIAN web-service settings; null while the profile is not configured'),
  updated_at: z.string().nullable(),
});
export type FiscalProfileResponse = z.infer<typeof fiscalProfileResponse>;
