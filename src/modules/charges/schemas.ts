import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { CURRENCIES } from '../../platform/money.ts';
import { metadata, text, uuid } from '../../platform/validation.ts';
import { REJECTION_REASONS } from '../payments/schemas.ts';
import { CHARGE_STATUSES, PAYMENT_METHOD_TYPES } from './tables.ts';

/** Pesos: a JSON number or a numeric string, at most 2 decimals (checked by the service, which names the field). */
const pesos = z.union([z.number(), z.string().max(40)]).describe('pesos, at most 2 decimals (e.g. 150000 or 150000.50)');
const percentage = z.union([z.number(), z.string().max(40)]).describe('percent, more than 0 and at most 100, at most 2 decimals');

/** PRODUCT.md's sandbox triggers for POST /charges; refused with a live key. */
export const CHARGE_TEST_SCENARIOS = [
  'approved',
  'pending',
  'INSUFFICIENT_FUNDS',
  'RISK_CONTROL',
  'CARD_EXPIRED',
  'TRANSACTION_REJECTED',
  'persistence_lost',
  'refundable',
] as const;
/**
 * The one test scenario whose paid charge may be refunded (SPEC.md: a test charge cannot be
 * refunded, 10806): it approves as `approved` does, and only that charge takes a refund.
 */
export const REFUNDABLE_SCENARIO = 'refundable';
/** The scenarios that make the sandbox rail reject the debit (remarks carries the code). */
export const DECLINE_SCENARIOS = ['INSUFFICIENT_FUNDS', 'RISK_CONTROL', 'CARD_EXPIRED', 'TRANSACTION_REJECTED'] as const;

const split = z.object({
  account_id: z.string().max(100).nullish().describe('a WALLET account of the company (UUID), ACTIVE'),
  wallet_id: z.string().max(100).nullish().describe('or the balance id of another company (cmp_…)'),
  amount: pesos.nullish().describe('a fixed share in pesos'),
  percentage: percentage.nullish().describe('or a share in percent of the amount'),
});

export const createChargeBody = z.object({
  amount: pesos.describe(
    'pesos, more than 0, at most 2 decimals; COP at most the company maximum per transaction; below COP 11,552,000 on an instant-key (KEY) account',
  ),
  title: text(5, 100),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  account_id: z.string().max(100).nullish().describe("one of account_id or card_id: the customer's account, ACTIVE with authorization true"),
  card_id: z.string().max(100).nullish().describe("or the customer's card (card_…), with authorization true"),
  // Not nullish: PRODUCT.md makes `currency: null` a 422 (SPEC.md's 500 is a defect not copied).
  currency: z.enum(CURRENCIES, { error: 'must be one of COP, USD, MXN' }).optional().describe('default COP; null is refused'),
  external_id: text(1, 100).nullish().describe('your reference; GET /v1/charges?filter[external_id]=… finds the charge (after a 503 90005 too)'),
  splits: z.array(split).max(10).nullish().describe('at most 10 shares of the charge toward other balances, moved when it is paid'),
  metadata: metadata.nullish(),
  test_scenario: z
    .string()
    .max(40)
    .nullish()
    .describe(`test keys only: ${CHARGE_TEST_SCENARIOS.join(', ')}`),
  installments: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be 1 to 36')
    .max(36, 'must be 1 to 36')
    .nullish()
    .describe('card charges only: monthly installments the payer chose (default 1), passed to the card processor'),
});
export type CreateChargeBody = z.infer<typeof createChargeBody>;

export const refundChargeBody = z.object({
  amount: pesos.nullish().describe('optional; when sent it must be the whole amount (a charge is refunded whole)'),
});
export const cancelChargeBody = z.object({});
export const resolveChargeBody = z.object({
  action: z.enum(['approve', 'reject']),
  remarks: z
    .string()
    .max(100)
    .nullish()
    .describe(`on reject, the rejection reason (default TRANSACTION_REJECTED): ${REJECTION_REASONS.join(', ')}`),
});
export type ResolveChargeBody = z.infer<typeof resolveChargeBody>;

const money = z.number().describe('pesos');

export const chargeResponse = z.object({
  id: z.string().describe('ch_…'),
  status: z.enum(CHARGE_STATUSES),
  amount: money,
  currency: z.enum(CURRENCIES),
  title: z.string(),
  customer_id: z.string(),
  payment_method_type: z
    .enum(PAYMENT_METHOD_TYPES)
    .describe('card, account (direct debit), banklink (bank-transfer link), rtkey (instant-key QR), walleta or walletb (wallet request-to-pay)'),
  account_id: z
    .string()
    .nullable()
    .describe("account charges: the debited account; walletb: the customer's wallet account the request was matched to"),
  card_id: z.string().nullable(),
  external_id: z.string().nullable(),
  splits: z.array(
    z.object({ account_id: z.string().nullable(), wallet_id: z.string(), amount: money.nullable(), percentage: z.number().nullable() }),
  ),
  metadata: z.record(z.string(), z.string()),
  remarks: z.string().nullable().describe('why the charge failed: a rejection reason, or CANCELLED'),
  test_scenario: z.string().nullable(),
  network_id: z.string().nullable().describe("the rail's reference of the debit"),
  payment_intent_id: z.string().describe('pi_…: the attempt, also readable at GET /v1/payment-intents/{id}; accepted wherever a charge id is'),
  is_test: z.boolean(),
  paid_at: z.string().nullable(),
  failed_at: z.string().nullable(),
  cancelled_at: z.string().nullable(),
  refunded_at: z.string().nullable(),
  disputed: z.boolean().describe('the card network or bank opened a dispute on this charge (charge.disputed); the status stays paid'),
  dispute_id: z.string().nullable().describe('dp_…: the dispute, at GET /v1/disputes/{id} (docs/disputes.md)'),
  bank_id: z.string().nullable().describe("banklink: the payer's bank"),
  redirect_url: z.string().nullable().describe('banklink: where the payer goes after the bank, with charge_id added to the query'),
  reference: z.string().nullable().describe('banklink, rtkey: your reference, shown to the payer (rtkey: EMVCo tag 62)'),
  url: z.string().nullable().describe('banklink: the bank page where the payer approves or declines; rtkey: a page with the QR'),
  qr: z
    .object({
      payload: z.string().describe('EMVCo merchant-presented payload, CRC-16 in tag 63'),
      image: z.string().describe('the QR as a PNG data URL'),
    })
    .nullable()
    .describe('rtkey: the QR to show the payer'),
  expires_at: z.string().nullable().describe('banklink, rtkey, walletb: an open charge fails with remarks EXPIRED at this time'),
  phone: z.string().nullable().describe("walleta, walletb: the payer's wallet phone"),
  document_type: z.string().nullable().describe("walletb: the payer's document type"),
  document: z.string().nullable().describe("walletb: the payer's document number"),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ChargeResponse = z.infer<typeof chargeResponse>;

export type ChargeFilter =
  'id' | 'status' | 'created_at' | 'currency' | 'amount' | 'title' | 'payment_method_type' | 'external_id' | 'customer_id' | 'key';
export const chargeList: ListSpec<ChargeFilter, 'created_at' | 'paid_at'> = {
  filters: ['id', 'status', 'created_at', 'currency', 'amount', 'title', 'payment_method_type', 'external_id', 'customer_id', 'key'],
  sorts: ['created_at', 'paid_at'],
  ranges: ['created_at', 'amount'],
};
export const chargeListQuery = listQuerySchema(chargeList);

export const idParams = z.object({ id: z.string() });
