import { z } from 'zod';
import { ONBOARDING_STATUSES } from './tables.ts';

/** POST /companies: OnePay's body (reference/peers.md f); unknown fields ignored, null = absent. */
export const createCompanyBody = z.object({
  type: z.literal('organization').nullish().describe('organization (the only type)'),
  name: z.string().trim().min(1).max(255).describe('trade name'),
  legal_name: z.string().trim().min(1).max(450),
  document_type: z.enum(['NIT', 'nit']).nullish().describe('NIT (the only type)'),
  document_number: z.string().max(30).describe('NIT with its check digit after a dash: 900123456-7'),
  dv: z
    .union([z.string().regex(/^\d$/, 'must be one digit'), z.number().int().min(0).max(9)])
    .nullish()
    .describe('check digit, when not in document_number'),
  phone: z
    .string()
    .regex(/^\+?\d{7,15}$/, 'must be a phone number (E.164, or 10 Colombian digits)')
    .describe('+573001234567 or 3001234567'),
  email: z.email('must be a valid e-mail address').max(255),
  website: z.string().url('must be a URL').max(500).nullish(),
  economic_activity: z.string().max(10).describe('CIIU Rev. 4 A.C. class code, e.g. 4791'),
  industry: z.string().max(10).nullish(),
  sales: z.number().min(0).max(1e15).nullish().describe('yearly sales, pesos'),
  fiscal_responsibilities: z.array(z.string().max(10)).min(1).max(20).describe('DIAN codes: O-13, O-15, O-23, O-47, R-99-PN… (O_47 accepted)'),
  retention_rules: z.object({ iva: z.boolean().nullish(), ica: z.boolean().nullish(), fuente: z.boolean().nullish() }).nullish(),
  city_id: z.union([z.number().int().min(0).max(99999), z.string().max(5)]).describe('DIVIPOLA municipality code (5001 or "05001")'),
  address: z.object({ address: z.string().trim().min(1).max(255), hint: z.string().max(255).nullish(), zipcode: z.string().max(10).nullish() }),
  documents: z
    .record(z.string().max(20), z.string().url('must be a URL').max(2000))
    .nullish()
    .describe('URLs of the documents: rut, ccc (chamber of commerce), dni, bank, simple'),
  company_owner: z.object({
    name: z.string().trim().min(1).max(100),
    last_name: z.string().trim().min(1).max(100),
    phone: z.string().max(20).nullish(),
    email: z.email().max(255).nullish(),
    document_type: z.string().max(10).describe('cc, ce or passport'),
    dni: z.string().trim().min(3).max(20),
  }),
  account: z
    .object({
      type: z.enum(['savings', 'checking']),
      bank_id: z.string().max(100),
      number: z.string().regex(/^\d{4,20}$/, 'must be 4 to 20 digits'),
      terms: z.boolean(),
    })
    .nullish(),
});
export type CreateCompanyBody = z.infer<typeof createCompanyBody>;

const keyPair = z.object({ secret: z.string(), publishable: z.string() });

export const companyResponse = z.object({
  id: z.string().describe('cmp_…: the new company'),
  name: z.string(),
  legal_name: z.string(),
  phone: z.string(),
  email: z.string(),
  document_type: z.literal('NIT'),
  document_number: z.string().describe('NIT-check digit'),
  economic_activity: z.string(),
  industry: z.string().nullable(),
  city_id: z.string(),
  fiscal_responsibilities: z.array(z.string()),
  status: z.enum(ONBOARDING_STATUSES).describe('pending → in_review → active | rejected'),
  status_reason: z.string().nullable().describe('why it was rejected'),
  currency: z.literal('COP'),
  live_keys_issued: z.boolean().describe('POST /companies/{id}/keys already gave the live keys'),
  is_test: z.boolean().describe('onboarded with a test key of the platform'),
  keys: z.object({ test: keyPair }).optional().describe('the new company’s test keys: only in the create response'),
  created_at: z.string(),
  updated_at: z.string(),
  activated_at: z.string().nullable(),
  rejected_at: z.string().nullable(),
});
export type CompanyResponse = z.infer<typeof companyResponse>;

export const liveKeysResponse = z.object({
  company_id: z.string(),
  environment: z.literal('live'),
  keys: keyPair.describe('shown only in this response'),
});

export const companyIdParams = z.object({ id: z.string().max(100) });
