import { z } from 'zod';
import { DOCUMENT_TYPES, RESOLUTION_STATUSES } from './tables.ts';

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD');
const folio = z.number().int().min(1).max(999_999_999_999);

export const createResolutionBody = z.object({
  number: z.string().regex(/^[0-9A-Za-z-]{1,50}$/, 'must be 1 to 50 letters, digits or dashes').describe('DIAN resolution number'),
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
  technical_key: z.string().regex(/^[0-9A-Za-z]{1,200}$/, 'must be 1 to 200 letters or digits').nullish().describe('technical key of the range; required for invoice resolutions'),
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
  status: z.enum(RESOLUTION_STATUSES).describe('draft, active, or retired (replaced by another activated resolution with the same prefix and document type)'),
  next_folio: z.number().int().nullable().describe('the folio the next document takes; null when exhausted'),
  used: z.number().int(),
  remaining: z.number().int(),
  is_default: z.boolean().describe('one of the test environment\'s built-in sandbox resolutions'),
  is_test: z.boolean(),
  activated_at: z.string().nullable(),
  retired_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const idParams = z.object({ id: z.string() });
