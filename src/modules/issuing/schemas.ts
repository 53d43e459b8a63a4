import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { metadata, text, uuid } from '../../platform/validation.ts';
import { ISSUING_CARD_STATUSES, ISSUING_CARD_TYPES } from './tables.ts';

/** Issuing cards (docs/issuing.md): shaped after OnePay's POST /issuing/cards, Stripe Issuing where it is silent. */

const address = z.object({
  line_1: text(1, 255),
  line_2: text(1, 255).nullish(),
  city: text(1, 100),
  state: text(1, 100).nullish(),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code')
    .nullish()
    .describe('default CO'),
  zip_code: text(1, 20).nullish(),
});

export const createIssuingCardBody = z.object({
  customer_id: uuid.describe('the card holder; it needs a document number (the issuer checks it)'),
  wallet_id: z.string().max(100).nullish().describe("the wallet the card spends from: the customer's wallet, whose id is the customer id (optional)"),
  nickname: text(1, 50).nullish(),
  type: z.enum(ISSUING_CARD_TYPES, { error: 'must be virtual or physical' }).optional().describe('virtual (default) or physical'),
  address: address.nullish().describe('physical cards: where the card is sent (required for them)'),
  metadata: metadata.nullish(),
});
export type CreateIssuingCardBody = z.infer<typeof createIssuingCardBody>;

export const testAuthorizationBody = z.object({
  amount: z.union([z.number(), z.string().max(40)]).describe('pesos, more than 0, at most 2 decimals'),
  currency: z.enum(['COP'], { error: 'must be COP' }).optional(),
  merchant_name: text(1, 100).nullish().describe('default "Comercio de prueba"'),
});
export type TestAuthorizationBody = z.infer<typeof testAuthorizationBody>;

const walletSummary = z.object({
  id: z.string().describe('the wallet id: the customer id'),
  balance: z.number().describe('pesos in the wallet now'),
  label: z.string().describe('the balance as es-CO writes it'),
});

export const issuingCardResponse = z.object({
  id: z.string().describe('icard_…'),
  status: z.enum(ISSUING_CARD_STATUSES).describe('created (being issued), active, blocked, canceled (final)'),
  type: z.enum(ISSUING_CARD_TYPES),
  nickname: z.string().nullable(),
  brand: z.string().nullable().describe('Visa, Mastercard; null until issued'),
  last_4: z.string().nullable().describe('the last four digits; null until issued. The full number and the security code are never stored nor shown'),
  exp_month: z.number().int().nullable(),
  exp_year: z.number().int().nullable(),
  currency: z.literal('COP'),
  customer_id: z.string(),
  wallet_id: z.string().describe('the customer id: the card spends from that customer’s wallet'),
  wallet: walletSummary,
  customer: z.object({
    id: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    document_type: z.string().nullable(),
    document_number: z.string().nullable(),
  }),
  address: z
    .object({
      line_1: z.string(),
      line_2: z.string().nullable(),
      city: z.string(),
      state: z.string().nullable(),
      country: z.string(),
      zip_code: z.string().nullable(),
    })
    .nullable(),
  remarks: z.string().nullable().describe('why the issuer refused it (KYC_REJECTED…)'),
  metadata: z.record(z.string(), z.string()).nullable(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  activated_at: z.string().nullable(),
  canceled_at: z.string().nullable(),
});
export type IssuingCardResponse = z.infer<typeof issuingCardResponse>;

export const issuingAuthorizationResponse = z.object({
  id: z.string().describe('iauth_…'),
  card_id: z.string(),
  customer_id: z.string(),
  amount: z.number().describe('pesos'),
  currency: z.string(),
  merchant_name: z.string(),
  approved: z.literal(true).describe('always true: a refused authorization is a 422 and records nothing'),
  wallet: walletSummary.describe('the wallet after the authorization'),
  is_test: z.boolean(),
  created_at: z.string(),
});
export type IssuingAuthorizationResponse = z.infer<typeof issuingAuthorizationResponse>;

export type IssuingCardFilter = 'id' | 'status' | 'customer_id' | 'type';
export const issuingCardList: ListSpec<IssuingCardFilter, 'created_at'> = {
  filters: ['id', 'status', 'customer_id', 'type'],
  sorts: ['created_at'],
};
export const issuingCardListQuery = listQuerySchema(issuingCardList);
export const customerIssuingCardList: ListSpec<'id' | 'status' | 'type', 'created_at'> = { filters: ['id', 'status', 'type'], sorts: ['created_at'] };
export const customerIssuingCardListQuery = listQuerySchema(customerIssuingCardList);
export const idParams = z.object({ id: z.string() });
export const emptyBody = z.object({}).passthrough();
