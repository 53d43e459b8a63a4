import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { email, metadata, phoneE164 } from '../../platform/validation.ts';
import { UTILITY_STATUSES } from './tables.ts';

/** Utilities, bill payments (docs/utilities.md): shaped after OnePay's POST /utilities and GET /utilities/providers. */

/** A bill reference as billers print them: 4 to 30 letters, digits or dashes. */
export const BILL_REFERENCE = /^[0-9A-Za-z-]{4,30}$/;
const reference = z.string().regex(BILL_REFERENCE, 'must be 4 to 30 letters, digits or dashes (the reference printed on the bill)');
const providerId = z.string().min(1).max(40).describe('a provider of GET /v1/utilities/providers');

export const providerResponse = z.object({
  id: z.string().describe("the biller's code (convenio)"),
  name: z.string(),
  category: z.enum(['energy', 'water', 'gas', 'telecom', 'internet', 'television', 'sanitation']),
  help_text: z.string().describe('where the payer finds the reference on the bill'),
});
export type ProviderResponse = z.infer<typeof providerResponse>;

export const providerList: ListSpec<'category', never> = { filters: ['category'], sorts: [] };
export const providerListQuery = listQuerySchema(providerList);

export const billParams = z.object({ id: z.string(), reference: z.string() });
export const billResponse = z.object({
  provider_id: z.string(),
  provider_name: z.string(),
  reference: z.string(),
  status: z.enum(['unpaid', 'paid']).describe('paid: the biller has it paid already (POST /utilities is refused with 11201)'),
  amount: z.number().describe('pesos'),
  currency: z.literal('COP'),
  due_date: z.string().describe('YYYY-MM-DD'),
  holder_name: z.string().describe('the holder as the biller shows it, masked'),
  is_test: z.boolean(),
});
export type BillResponse = z.infer<typeof billResponse>;

export const createUtilityBody = z.object({
  provider_id: providerId,
  reference,
  metadata: metadata.nullish(),
});
export type CreateUtilityBody = z.infer<typeof createUtilityBody>;

export const utilityResponse = z.object({
  id: z.string().describe('util_…'),
  status: z.enum(UTILITY_STATUSES).describe('created → (processing →) paid | rejected'),
  provider_id: z.string(),
  provider_name: z.string(),
  reference: z.string(),
  amount: z.number().describe('pesos: the bill as the biller answered it'),
  currency: z.string(),
  due_date: z.string().nullable(),
  holder_name: z.string().nullable(),
  remarks: z.string().nullable().describe('why it was rejected: REJECTED_BY_BILLER, BILL_ALREADY_PAID, INSUFFICIENT_FUNDS…'),
  network_id: z.string().nullable().describe("the biller's reference of the payment"),
  payment_id: z
    .string()
    .nullable()
    .describe('the payment of the utility payment link that collected this bill (null when paid straight from the balance)'),
  link_id: z.string().nullable(),
  metadata: z.record(z.string(), z.string()).nullable(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  processed_at: z.string().nullable(),
  paid_at: z.string().nullable(),
  rejected_at: z.string().nullable(),
});
export type UtilityResponse = z.infer<typeof utilityResponse>;

export type UtilityFilter = 'id' | 'status' | 'provider_id' | 'reference' | 'payment_id';
export const utilityList: ListSpec<UtilityFilter, 'created_at'> = {
  filters: ['id', 'status', 'provider_id', 'reference', 'payment_id'],
  sorts: ['created_at'],
};
export const utilityListQuery = listQuerySchema(utilityList);
export const idParams = z.object({ id: z.string() });

/** OnePay's direct-debit link allows 4,320 minutes by default, at most 43,200 (30 days). */
export const LINK_DEFAULT_MINUTES = 4_320;
export const createPaymentLinkBody = z.object({
  provider_id: providerId,
  reference,
  phone: phoneE164.nullish().describe('the link goes to the payer by the messaging channel'),
  email: email.nullish().describe('or by e-mail'),
  expiration_minutes: z
    .number()
    .int()
    .min(60)
    .max(43_200)
    .nullish()
    .describe(`minutes the link lives: 60 to 43,200 (default ${LINK_DEFAULT_MINUTES}, 3 days)`),
});
export type CreatePaymentLinkBody = z.infer<typeof createPaymentLinkBody>;

export const paymentLinkResponse = z.object({
  id: z.string().describe('ulink_…'),
  url: z.string().describe("the payment's link (payment_link) the payer pays the bill at"),
  payment_id: z.string().describe('the payment (source utility): it cannot be cancelled (15001)'),
  provider_id: z.string(),
  provider_name: z.string(),
  reference: z.string(),
  amount: z.number().describe('pesos'),
  expires_at: z.string(),
  is_test: z.boolean(),
  created_at: z.string(),
});
export type PaymentLinkResponse = z.infer<typeof paymentLinkResponse>;
