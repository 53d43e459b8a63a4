import { z } from 'zod';

export const SUPPORTED_TYPES = ['savings', 'checking', 'electronic_deposit'] as const;
export const BANK_ORDERS = ['priority', 'name'] as const;

export const bankResponse = z.object({
  id: z.string().describe('UUID, stable across installs'),
  code: z.string().describe('ACH Colombia / Superfinanciera entity code, e.g. 1007'),
  name: z.string(),
  supported_types: z.array(z.enum(SUPPORTED_TYPES)),
  mask: z.string().nullable().describe('account-number mask (# is a digit)'),
  transaction_avg: z.number().nullable().describe('average debit settlement time, in hours'),
  available: z.boolean().describe('available for authorized debits'),
  banklink: z.boolean().describe('enabled for bank-transfer collection'),
  connection_type: z.enum(['CONFIRMATION', 'DATA']).describe('CONFIRMATION: the holder confirms the enrollment (POST /accounts/{id}/validate)'),
  priority: z.number().int().describe('display rank, 1 first'),
  logo: z.string().describe('absolute URL of the SVG logo'),
  instructions: z.string().describe('HTML help text for the payer (Spanish)'),
  base64_logo: z.string().describe('the SVG logo as a data URL'),
});
export type BankResponse = z.infer<typeof bankResponse>;

/** The bank as embedded in an account. */
export const bankSummary = z.object({ id: z.string(), name: z.string(), logo: z.string(), base64_logo: z.string() });
export type BankSummary = z.infer<typeof bankSummary>;

export const bankListQuery = z.looseObject({
  banklink: z.string().optional().describe('true or false'),
  'filter[banklink]': z.string().optional().describe('alias of banklink'),
  order: z.string().optional().describe('priority, -priority, name or -name (default priority)'),
  sort: z.string().optional().describe('alias of order'),
});

export const bankIdParams = z.object({ id: z.string() });
