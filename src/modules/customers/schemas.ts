import { z } from 'zod';
import { email, metadata, phoneE164, text, uuid } from '../../platform/validation.ts';

export const CUSTOMER_TYPES = ['natural', 'company'] as const;
export const DOCUMENT_TYPES = ['CC', 'CE', 'PASSPORT', 'NIT'] as const;

const address = z.object({
  line: text(1, 255).nullish(),
  city_code: z
    .string()
    .regex(/^\d{5}$/, 'must be a 5-digit DIVIPOLA municipality code')
    .describe('DIVIPOLA municipality code, e.g. 11001 (Bogotá)'),
});

const fields = {
  type: z.enum(CUSTOMER_TYPES).nullish().describe('natural (CC, CE, PASSPORT) or company (NIT)'),
  user_type: z.enum(CUSTOMER_TYPES).nullish().describe('alias of type'),
  first_name: text(1, 100).nullish(),
  last_name: text(1, 100).nullish(),
  email: email.nullish(),
  phone: phoneE164.nullish(),
  document_type: z.enum(DOCUMENT_TYPES).nullish(),
  document_number: z
    .string()
    .regex(/^[A-Za-z0-9-]{3,20}$/, 'must be 3 to 20 letters, digits or dashes')
    .nullish(),
  document_verification: z.string().regex(/^\d$/, 'must be one digit').nullish().describe('NIT check digit'),
  address: address.nullish(),
  fiscal_responsibilities: z.array(z.string().max(20)).max(20).nullish().describe('DIAN codes such as R-99-PN, O-13'),
  related_to: uuid.nullish().describe('id of a related customer'),
  tax_regime: z.string().max(10).nullish().describe('DIAN regime code: 48 (IVA responsible) or 49 (not responsible)'),
  metadata: metadata.nullish(),
};

export const createCustomerBody = z.object({
  ...fields,
  first_name: text(1, 100),
  test_clock: z.string().max(100).nullish().describe('test keys: a test clock (clock_…) the customer lives on (docs/subscriptions.md)'),
});
export const updateCustomerBody = z.object(fields);
export type CreateCustomerBody = z.infer<typeof createCustomerBody>;
export type UpdateCustomerBody = z.infer<typeof updateCustomerBody>;

export const customerResponse = z.object({
  id: z.string(),
  type: z.enum(CUSTOMER_TYPES),
  user_type: z.enum(CUSTOMER_TYPES),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  document_type: z.string().nullable(),
  document_number: z.string().nullable(),
  document_verification: z.string().nullable(),
  address: z.object({ line: z.string().nullable(), city_code: z.string() }).nullable(),
  fiscal_responsibilities: z.array(z.string()),
  related_to: z.string().nullable(),
  tax_regime: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  test_clock: z.string().nullable().describe('the test clock the customer lives on'),
  created_at: z.string(),
  updated_at: z.string(),
  is_test: z.boolean(),
});
export type CustomerResponse = z.infer<typeof customerResponse>;

export const idParams = z.object({ id: z.string() });
