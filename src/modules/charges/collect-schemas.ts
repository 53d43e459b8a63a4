import { z } from 'zod';
import { looseBoolean, metadata, text, uuid } from '../../platform/validation.ts';
import { DOCUMENT_TYPES } from '../customers/schemas.ts';

/** Request bodies of the rails a payer acts on (docs/charges.md). Amount rules are checked by the services, which name the field. */

const pesos = z.union([z.number(), z.string().max(40)]);

/** SPEC.md "Limits". */
export const BANKLINK_MINIMUM_PESOS = 1000;
export const RTKEY_MINIMUM_PESOS = 1000;
export const WALLET_MINIMUM_PESOS = 500;
export const RTKEY_EXPIRES_IN = { min: 5, max: 64_800, default: 30 } as const;
/** A banklink session at the (sandbox) bank lasts this long; then the open charge expires. */
export const BANKLINK_SESSION_MINUTES = 30;
/** SPEC.md: a walletb request lasts 10 minutes. */
export const WALLETB_LIFETIME_MINUTES = 10;
/** SPEC.md: same customer, bank and amount within 2 minutes is a duplicate (15005). */
export const BANKLINK_DUPLICATE_WINDOW_MS = 120_000;

const httpUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' || u.protocol === 'http:';
    } catch {
      return false;
    }
  }, 'must be an http or https URL');

/** A Colombian mobile as E.164 (wallets live on mobiles). */
export const walletPhone = z
  .string()
  .regex(/^\+573\d{9}$/, 'must be a Colombian mobile number: +57 and 10 digits starting with 3, e.g. +573001234567');

const acceptTerms = looseBoolean
  .nullish()
  .describe(
    "live with a payment provider: true once the payer accepted the provider's terms and personal-data authorization (required then; recorded)",
  );

const title = text(5, 100).nullish().describe('5–100 characters, shown to the payer; a default names the method');

export const banklinkBody = z.object({
  amount: pesos.describe(`pesos, at least ${BANKLINK_MINIMUM_PESOS}, at most 2 decimals, within the company maximum per transaction`),
  bank_id: uuid.describe('a bank with banklink: true (GET /v1/banks?banklink=true)'),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  redirect_url: httpUrl.describe('where the payer goes after the bank, with charge_id added to the query'),
  external_id: text(1, 100).nullish().describe('your reference (does not make a duplicate a new charge)'),
  reference: text(1, 100).nullish().describe('shown to the payer at the bank (does not make a duplicate a new charge)'),
  title,
  metadata: metadata.nullish(),
  accept_terms: acceptTerms,
});
export type BanklinkBody = z.infer<typeof banklinkBody>;

export const rtkeyBody = z.object({
  amount: pesos.describe(
    `pesos, at least ${RTKEY_MINIMUM_PESOS} and below 11,552,000 (the instant-key limit), at most 2 decimals, within the company maximum per transaction`,
  ),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  expires_in: z
    .number()
    .int('must be a whole number of minutes')
    .min(RTKEY_EXPIRES_IN.min, `must be at least ${RTKEY_EXPIRES_IN.min} minutes`)
    .max(RTKEY_EXPIRES_IN.max, `must be at most ${RTKEY_EXPIRES_IN.max} minutes`)
    .nullish()
    .describe(`minutes the QR can be paid, ${RTKEY_EXPIRES_IN.min}–${RTKEY_EXPIRES_IN.max} (default ${RTKEY_EXPIRES_IN.default})`),
  reference: z
    .string()
    .regex(/^[\x20-\x7e]{1,25}$/, 'must be 1–25 printable ASCII characters (EMVCo tag 62)')
    .nullish()
    .describe('EMVCo reference label (tag 62); default: the charge id without its prefix'),
  external_id: text(1, 100).nullish(),
  title,
  metadata: metadata.nullish(),
  test_scenario: z.string().max(40).nullish().describe('test keys only: qr_failure (the scheme refuses the QR: 400 90100)'),
});
export type RtkeyBody = z.infer<typeof rtkeyBody>;

export const walletaBody = z.object({
  amount: pesos.describe(`pesos, at least ${WALLET_MINIMUM_PESOS}, at most 2 decimals, within the company maximum per transaction`),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  phone: walletPhone.describe("the payer's walleta phone, +57"),
  external_id: text(1, 100).describe('your reference; one open request per external_id (10141)'),
  title,
  metadata: metadata.nullish(),
  accept_terms: acceptTerms,
});
export type WalletaBody = z.infer<typeof walletaBody>;

export const walletbBody = z.object({
  amount: pesos.describe(`pesos, at least ${WALLET_MINIMUM_PESOS}, at most 2 decimals, within the company maximum per transaction`),
  document: z
    .string()
    .min(7, 'must be at least 7 characters')
    .max(11, 'must be at most 11 characters')
    .describe("the payer's document number, 7–11 characters"),
  document_type: z.enum(DOCUMENT_TYPES, { error: `must be one of ${DOCUMENT_TYPES.join(', ')}` }),
  customer_id: uuid.describe('a customer of the company, in the same environment, with that document'),
  phone: walletPhone.describe("the phone of one of the customer's wallet accounts, +57"),
  external_id: text(1, 100).nullish(),
  title,
  metadata: metadata.nullish(),
});
export type WalletbBody = z.infer<typeof walletbBody>;

export const walletbConfirmBody = z.object({
  otp: z.string().length(6, 'must be 6 characters').describe('the code the payer received in the wallet app (sandbox: 123456)'),
});

export const emptyBody = z.object({});
export const requestIdParams = z.object({ id: z.string() });
