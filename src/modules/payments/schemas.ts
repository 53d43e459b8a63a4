import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { email, looseBoolean, metadata, phoneE164, text, httpsUrl } from '../../platform/validation.ts';
import {
  CHANNELS,
  CURRENCIES,
  INTENT_STATUSES,
  MESSAGE_CHANNELS,
  MESSAGE_KINDS,
  MESSAGE_STATUSES,
  PAYMENT_METHODS,
  PAYMENT_STATUSES,
} from './tables.ts';
import { paymentAllows } from './allows.ts';

/** Pesos: a JSON number or a numeric string, at most 2 decimals (checked by the service, which names the field). */
const pesos = z.union([z.number(), z.string().max(40)]).describe('pesos, at most 2 decimals (e.g. 150000 or 150000.50)');
const percentage = z.union([z.number(), z.string().max(40)]).describe('percent, more than 0 and at most 100, at most 2 decimals');

/** The sandbox outcomes a test payment's payer page applies (PRODUCT.md triggers); refused with a live key. */
export const PAYMENT_TEST_SCENARIOS = ['approved', 'pending', 'INSUFFICIENT_FUNDS', 'RISK_CONTROL', 'CARD_EXPIRED', 'TRANSACTION_REJECTED'] as const;

const split = z.object({
  account_id: z.string().max(100).nullish().describe('a WALLET account of the company (UUID), ACTIVE'),
  wallet_id: z.string().max(100).nullish().describe('or the balance id of another company (cmp_…)'),
  amount: pesos.nullish().describe('a fixed share in pesos'),
  percentage: percentage.nullish().describe('or a share in percent of the amount'),
});

const fields = {
  title: text(4, 255),
  amount: pesos.nullish().describe('pesos; required unless open_amount is true'),
  open_amount: looseBoolean.nullish().describe('true: an open-amount link, the payer chooses the amount; omit amount'),
  description: text(4, 2000).nullish(),
  reference: text(6, 30).nullish().describe('the payer can find the payment by it in the payment portal'),
  external_id: text(4, 100).nullish(),
  currency: z.enum(CURRENCIES).nullish().describe('default COP'),
  phone: phoneE164.nullish().describe('E.164; the link goes by the messaging channel'),
  email: email.nullish().describe('the link goes by e-mail (when no phone is sent)'),
  template_id: z.string().max(100).nullish().describe('a template of GET /v1/templates with selectable true (top level only, never inside metadata)'),
  target_wallet_id: z.string().max(100).nullish().describe('collect into another balance: a WALLET account id (UUID) or a balance id (cmp_…)'),
  partial_payment_config: z
    .object({
      enabled: looseBoolean,
      minimum_amount: pesos.nullish().describe('smallest payment the payer may make (default: the currency minimum)'),
    })
    .nullish(),
  options: z
    .object({
      rtkey: z
        .object({ expires_in: z.number().int().min(5).max(64800).nullish().describe('minutes the instant-key QR lives (5 to 64800, default 30)') })
        .nullish()
        .describe('instant-key (rtkey) options; rtkey must be in allows'),
    })
    .nullish(),
  splits: z.array(split).max(10).nullish().describe('at most 10 shares of the collection toward other balances'),
  document_url: httpsUrl(2048).nullish().describe('https link to the document being collected (an invoice PDF...)'),
  tax: z
    .object({
      rate: percentage.nullish().describe('percent included in the amount (e.g. 19)'),
      amount: pesos.nullish().describe('tax included in the amount, in pesos; computed from rate when omitted'),
    })
    .nullish(),
  allows: paymentAllows.nullish(),
  expires_at: z.string().max(40).nullish().describe('ISO 8601 timestamp in the future (without an offset: Bogotá time)'),
  expiration_date: z.string().max(20).nullish().describe('or a date YYYY-MM-DD: the link expires at the end of that day, Bogotá time'),
  redirect_url: z.string().max(2048).nullish().describe('where the payer goes after paying (https; http allowed with a test key)'),
  metadata: metadata.nullish(),
  test_scenario: z
    .string()
    .max(40)
    .nullish()
    .describe(`test keys only: ${PAYMENT_TEST_SCENARIOS.join(', ')}`),
};

export const createPaymentBody = z.object({
  ...fields,
  receipts: looseBoolean
    .nullish()
    .describe('false: no receipt to the payer once paid (default true: a receipt by the payment’s channel, docs/payments.md "Receipts")'),
});
export const updatePaymentBody = z.object({
  ...fields,
  title: fields.title.nullish(),
  status: z.enum(['paid_externally']).nullish().describe('paid_externally: the company collected the money outside Recaudo'),
});
export type CreatePaymentBody = z.infer<typeof createPaymentBody>;
export type UpdatePaymentBody = z.infer<typeof updatePaymentBody>;

export const resendPaymentBody = z.object({
  template_id: z.string().max(100).nullish().describe('send with another selectable template (kept for later sends)'),
});

export const cancelPaymentBody = z.object({ notify: looseBoolean.nullish().describe('tell the payer by the payment channel') });
export const cancelPaymentQuery = z.looseObject({ notify: z.string().optional().describe('true or false; same as the body field') });

/** Rejection reasons accepted by resolve (and recorded on declined intents); docs/payments.md. */
export const REJECTION_REASONS = [
  'INSUFFICIENT_FUNDS',
  'RISK_CONTROL',
  'CARD_EXPIRED',
  'TRANSACTION_REJECTED',
  'CANCELLED_BY_PAYER',
  'TIMEOUT',
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

export const resolvePaymentBody = z.object({
  action: z.enum(['approve', 'reject']),
  remarks: z
    .string()
    .max(100)
    .nullish()
    .describe(`required on reject: ${REJECTION_REASONS.join(', ')}`),
  amount: pesos.nullish().describe('open-amount links without an attempt in progress: the amount the simulated payer pays'),
});

const money = z.number().describe('pesos');

export const paymentResponse = z.object({
  id: z.string().describe('pay_…'),
  status: z.enum(PAYMENT_STATUSES),
  title: z.string(),
  description: z.string().nullable(),
  amount: money.nullable().describe('null for an open-amount link'),
  open_amount: z.boolean(),
  amount_paid: money,
  amount_due: money.nullable().describe('amount minus amount_paid; null for an open-amount link'),
  currency: z.enum(CURRENCIES),
  reference: z.string().nullable(),
  external_id: z.string().nullable(),
  phone: z.string().nullable(),
  email: z.string().nullable(),
  channel: z.enum(CHANNELS).describe('messaging (phone), email, portal (reference) or manual'),
  template_id: z.string().nullable(),
  target_wallet_id: z.string().nullable(),
  partial_payment_config: z.object({ enabled: z.literal(true), minimum_amount: money }).nullable(),
  options: z.object({ rtkey: z.object({ expires_in: z.number().int() }).nullable() }),
  splits: z.array(
    z.object({ account_id: z.string().nullable(), wallet_id: z.string(), amount: money.nullable(), percentage: z.number().nullable() }),
  ),
  document_url: z.string().nullable(),
  tax: z.object({ rate: z.number().nullable(), amount: money.nullable() }).nullable(),
  allows: z.array(z.enum(PAYMENT_METHODS)),
  expires_at: z.string().nullable(),
  redirect_url: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  payment_link: z.string().describe('absolute URL of the payer page'),
  source: z.string().describe('api, subscription (a billed cycle), or utility for utility-service invoices'),
  subscription_id: z.string().nullable().describe('the subscription whose cycle this payment bills'),
  cycle: z.number().int().nullable().describe('that cycle number (1 = the first)'),
  test_scenario: z.string().nullable(),
  resend_count: z.number().int(),
  last_resent_at: z.string().nullable(),
  paid_at: z.string().nullable(),
  cancelled_at: z.string().nullable(),
  receipts: z.boolean().describe('whether the payer gets a receipt once it is paid'),
  message: z
    .object({
      status: z.enum(MESSAGE_STATUSES),
      remarks: z.string().nullable().describe('why it failed: channel_not_configured when no channel could carry it in live'),
    })
    .nullable()
    .describe('the latest message to the payer (channel messaging or email): where it stands; null before any'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PaymentResponse = z.infer<typeof paymentResponse>;

export const intentResponse = z.object({
  id: z.string().describe('pi_…'),
  payment_id: z.string().nullable().describe('null for the attempt of a charge (see charge_id)'),
  status: z.enum(INTENT_STATUSES),
  method: z.string().describe('card, banklink, rtkey, walleta, walletb, or sandbox (resolve)'),
  amount: money,
  currency: z.enum(CURRENCIES),
  remarks: z.string().nullable().describe('the rejection reason of a declined attempt'),
  external_id: z.string().nullable(),
  network_id: z.string().nullable(),
  charge_id: z.string().nullable(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  paid_at: z.string().nullable(),
});
export type IntentResponse = z.infer<typeof intentResponse>;

export const paymentList: ListSpec<'id' | 'status' | 'reference' | 'external_id', 'created_at' | 'paid_at'> = {
  filters: ['id', 'status', 'reference', 'external_id'],
  sorts: ['created_at', 'paid_at'],
};
export const intentList: ListSpec<'id' | 'status' | 'external_id' | 'network_id', 'created_at' | 'paid_at'> = {
  filters: ['id', 'status', 'external_id', 'network_id'],
  sorts: ['created_at', 'paid_at'],
};
export const paymentIntentsList: ListSpec<never, never> = { filters: [], sorts: [] };

export const paymentListQuery = listQuerySchema(paymentList);
export const intentListQuery = listQuerySchema(intentList);
export const paymentIntentsListQuery = listQuerySchema(paymentIntentsList);

export const idParams = z.object({ id: z.string() });

/** A message that carried the payment (its link, a resend, a cancellation) to the payer. */
export const messageResponse = z.object({
  id: z.string().describe('msg_… (also the reference the provider echoes)'),
  payment_id: z.string(),
  channel: z.enum(MESSAGE_CHANNELS),
  kind: z.enum(MESSAGE_KINDS).describe('link (at create), resend, cancellation (DELETE with notify), or receipt (once paid)'),
  recipient: z.string().describe('the phone (E.164) or e-mail address it went to'),
  template_id: z.string().nullable(),
  status: z.enum(MESSAGE_STATUSES).describe('pending (recorded, not yet handed over), sent, delivered, failed, replied'),
  error: z.string().nullable().describe('why it failed, or the last error of a send being retried'),
  reply_text: z.string().nullable().describe("the payer's last reply (status replied)"),
  attempts: z.number().int().describe('send attempts made'),
  held_until: z
    .string()
    .nullable()
    .describe('a subscription cycle link recorded outside the lawful contact hours waits until then (docs/subscriptions.md)'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type MessageResponse = z.infer<typeof messageResponse>;
export const paymentMessagesList: ListSpec<never, never> = { filters: [], sorts: [] };
export const paymentMessagesListQuery = listQuerySchema(paymentMessagesList);
