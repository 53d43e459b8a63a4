import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { looseBoolean, text, uuid } from '../../platform/validation.ts';
import { CARD_BRANDS } from './card-data.ts';

/** Card data as a browser or a server sends it: month, year and code as strings or numbers. */
const monthOrYear = z.union([z.string().max(8), z.number().int()]);
const securityCode = z.union([z.string().max(8), z.number().int().nonnegative()]);

const cardData = {
  card_number: z.string().max(40).describe('the full card number (spaces and dashes allowed); never stored, logged or returned'),
  expiration_month: monthOrYear.describe('1 to 12, string or number'),
  expiration_year: monthOrYear.describe('2030 or 30, string or number'),
  cvv: securityCode.nullish().describe('security code: 3 digits, 4 for American Express; never stored'),
  ccv: securityCode.nullish().describe('alias of cvv'),
  holder_name: text(2, 100).describe('as printed on the card'),
};

export const createCardBody = z.object({
  ...cardData,
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  authorization: looseBoolean.nullish().describe('true when the holder authorized charges on this card (required to charge it); default false'),
  accept_terms: looseBoolean
    .nullish()
    .describe(
      "live with a payment provider: true once the payer accepted the provider's terms and personal-data authorization (required then; recorded)",
    ),
});
export type CreateCardBody = z.infer<typeof createCardBody>;

export const createTokenBody = z.object(cardData);
export type CreateTokenBody = z.infer<typeof createTokenBody>;

export const tokenizedCardBody = z.object({
  card_token: z.string().max(100).describe('tok_… from POST /v1/tokens (publishable key), unused and younger than 10 minutes'),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  authorization: looseBoolean.nullish().describe('true when the holder authorized charges on this card; default false'),
  accept_terms: looseBoolean
    .nullish()
    .describe(
      "live with a payment provider: true once the payer accepted the provider's terms and personal-data authorization (required then; recorded)",
    ),
});
export type TokenizedCardBody = z.infer<typeof tokenizedCardBody>;

/**
 * A card tokenized by the payer's browser at the provider itself (createCardFromProviderToken; a
 * connect link's page, no API route): the provider's single-use token and what its tokenization
 * answered of the card. Never a card number or a security code.
 */
export interface ProviderTokenCardInput {
  /** The provider's single-use card token (Wompi: tok_prod_…), not a Recaudo tok_ token. */
  provider_token: string;
  /** The provider's brand name (VISA, MASTERCARD...). */
  brand: string;
  last4: string;
  exp_month: string | number;
  exp_year: string | number;
  holder_name: string;
  customer_id: string;
  authorization?: boolean | null;
  /** The payer accepted the provider's contracts (required in live on a connector that needs it). */
  accept_terms?: boolean | null;
  /** Who asserted that acceptance, recorded with it (default: the request's API key). */
  asserted_by?: string;
}

export const cardResponse = z.object({
  id: z.string().describe('card_…'),
  customer_id: z.string(),
  brand: z.enum(CARD_BRANDS),
  last4: z.string(),
  exp_month: z.number().int(),
  exp_year: z.number().int(),
  holder_name: z.string(),
  fingerprint: z.string().describe('the same for the same card number within the company'),
  authorization: z.boolean(),
  expired: z.boolean().describe('the expiry month has passed'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CardResponse = z.infer<typeof cardResponse>;

export const tokenResponse = z.object({
  id: z.string().describe('tok_…: single use, valid 10 minutes'),
  card: z.object({ brand: z.enum(CARD_BRANDS), last4: z.string(), exp_month: z.number().int(), exp_year: z.number().int(), holder_name: z.string() }),
  used: z.boolean(),
  is_test: z.boolean(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type TokenResponse = z.infer<typeof tokenResponse>;

export const cardList: ListSpec<'customer_id', 'created_at'> = { filters: ['customer_id'], sorts: ['created_at'] };
export const customerCardList: ListSpec<never, 'created_at'> = { filters: [], sorts: ['created_at'] };
export const cardListQuery = listQuerySchema(cardList).extend({ customer_id: z.string().optional().describe('alias of filter[customer_id]') });
export const customerCardListQuery = listQuerySchema(customerCardList);

export const idParams = z.object({ id: z.string() });
