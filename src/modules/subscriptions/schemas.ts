import { z } from 'zod';
import { looseBoolean, metadata, text } from '../../platform/validation.ts';
import { CURRENCIES, PAYMENT_METHODS } from '../payments/tables.ts';
import { allowsField, PAYMENT_BRAND_KEYS } from '../payments/allows.ts';
import { FREQUENCIES } from './calendar.ts';
import { SUBSCRIPTION_STATUSES } from './tables.ts';

/** Amounts are integer cents, as OnePay sends them (`amount_in_cents`). */
const cents = z.number().int().min(1).max(1_000_000_000_000);
/** `allows` of plans and subscriptions: the array or OnePay's object of booleans (docs/payments.md "allows"). */
const cycleAllows = allowsField(PAYMENT_METHODS, PAYMENT_BRAND_KEYS, 'payment methods the cycle links offer; default all');
const dayCount = (max: number) => z.number().int().min(0).max(max);

const trial = z.object({
  has_trial: looseBoolean.nullish(),
  trial_days: z.number().int().min(0).max(365).nullish(),
  start_trial_date: z.string().max(10).nullish().describe('ignored: the trial starts on start_date'),
});

const complexPayment = z.object({
  amount_in_cents: cents,
  apply_on_cicle: z.number().int().min(1).max(10_000).describe('the first cycle (1-based) billed at this amount'),
  for_cicles: z.number().int().min(1).max(10_000).nullish().describe('how many cycles (default 1)'),
  label: z.string().max(100).nullish(),
  target_price: z.unknown().optional().describe('accepted and ignored'),
});

const planFields = {
  name: text(4, 255),
  description: z.string().max(5000).nullish(),
  internal_id: z.string().max(100).nullish(),
  currency: z.enum(CURRENCIES).nullish().describe('default COP'),
  amount_in_cents: cents,
  reference_price_in_cents: z.union([cents, z.string().regex(/^\d{1,13}$/)]).nullish(),
  cicle_frequency: z.enum(FREQUENCIES),
  cicles: z.number().int().min(0).max(10_000).nullish().describe('number of cycles; null or 0: unbounded'),
  trial: trial.nullish(),
  complex_payments: z.array(complexPayment).max(50).nullish(),
  allows: cycleAllows.nullish(),
  metadata: metadata.nullish(),
};

export const createPlanBody = z.object(planFields);
export const updatePlanBody = createPlanBody.partial().extend({
  update_existing_subscriptions: looseBoolean
    .nullish()
    .describe('true: subscriptions of this plan bill their future cycles with the new amount and complex payments'),
});
export type CreatePlanBody = z.infer<typeof createPlanBody>;
export type UpdatePlanBody = z.infer<typeof updatePlanBody>;

const trialResponse = z.object({ has_trial: z.boolean(), trial_days: z.number().int() });
const complexResponse = z.object({
  amount_in_cents: z.number().int(),
  apply_on_cicle: z.number().int(),
  for_cicles: z.number().int(),
  label: z.string().nullable(),
});

export const planResponse = z.object({
  id: z.string().describe('plan_…'),
  name: z.string(),
  description: z.string().nullable(),
  internal_id: z.string().nullable(),
  currency: z.string(),
  amount_in_cents: z.number().int(),
  reference_price_in_cents: z.string().nullable(),
  cicle_frequency: z.enum(FREQUENCIES),
  cicles: z.number().int().nullable(),
  trial: trialResponse,
  complex_payments: z.array(complexResponse),
  allows: z.array(z.string()),
  metadata: z.record(z.string(), z.string()),
  link: z.string().describe('the public page where a payer subscribes by themselves'),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PlanResponse = z.infer<typeof planResponse>;

export const createSubscriptionBody = z.object({
  customer_id: z.string().max(100),
  plan_id: z.string().max(100).nullish().describe('bill as the plan says; the fields below override it'),
  name: text(4, 255).nullish().describe('required without plan_id'),
  description: z.string().max(5000).nullish(),
  internal_id: z.string().max(100).nullish(),
  currency: z.enum(CURRENCIES).nullish(),
  amount_in_cents: cents.nullish().describe('required without plan_id'),
  reference_price_in_cents: z.union([cents, z.string().regex(/^\d{1,13}$/)]).nullish(),
  cicle_frequency: z.enum(FREQUENCIES).nullish().describe('required without plan_id'),
  cicles: z.number().int().min(0).max(10_000).nullish(),
  start_date: z.string().max(10).nullish().describe('YYYY-MM-DD (Bogotá), today or later; default today'),
  payment_mode: z.enum(['request', 'auto_debit']).nullish().describe('default request'),
  suggest_auto_debit: looseBoolean.nullish(),
  remember_to_pay_before: dayCount(30).nullish().describe('days before the due date the cycle link is sent (default 3)'),
  cancel_after_no_payment_before: z.number().int().min(1).max(24).nullish().describe('unpaid cycles before unpaid, then canceled (default 2)'),
  trial: trial.nullish(),
  complex_payments: z.array(complexPayment).max(50).nullish(),
  allows: cycleAllows.nullish(),
  metadata: metadata.nullish(),
});
export type CreateSubscriptionBody = z.infer<typeof createSubscriptionBody>;

export const updateSubscriptionBody = z.object({
  name: text(4, 255).nullish(),
  description: z.string().max(5000).nullish(),
  internal_id: z.string().max(100).nullish(),
  amount_in_cents: cents.nullish().describe('applies to cycles not billed yet'),
  remember_to_pay_before: dayCount(30).nullish(),
  cancel_after_no_payment_before: z.number().int().min(1).max(24).nullish(),
  allows: cycleAllows.nullish(),
  metadata: metadata.nullish(),
});
export type UpdateSubscriptionBody = z.infer<typeof updateSubscriptionBody>;

export const subscriptionResponse = z.object({
  id: z.string().describe('sub_…'),
  status: z.enum(SUBSCRIPTION_STATUSES),
  version: z.number().int().describe('bumped by every status change; order subscription.* events by it'),
  name: z.string(),
  description: z.string().nullable(),
  internal_id: z.string().nullable(),
  plan_id: z.string().nullable(),
  customer_id: z.string(),
  currency: z.string(),
  amount_in_cents: z.number().int(),
  reference_price_in_cents: z.string().nullable(),
  cicle_frequency: z.enum(FREQUENCIES),
  cicles: z.number().int().nullable(),
  current_cicle: z.number().int().describe('the last cycle billed (0: none yet)'),
  next_due_date: z.string().nullable().describe('when the next cycle is due (ISO 8601); null when no cycle is ahead'),
  payment_mode: z.enum(['request', 'auto_debit']),
  start_date: z.string(),
  end_date: z.string().nullable().describe('the due date of the last cycle, when cicles is bounded'),
  trial: trialResponse,
  remember_to_pay_before: z.number().int(),
  cancel_after_no_payment_before: z.number().int(),
  unpaid_cycles: z.number().int(),
  test_clock: z.string().nullable().describe("the customer's test clock: cycles run as it is advanced"),
  complex_payments: z.array(complexResponse),
  allows: z.array(z.string()),
  metadata: z.record(z.string(), z.string()),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  canceled_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  frozen_at: z.string().nullable(),
});
export type SubscriptionResponse = z.infer<typeof subscriptionResponse>;

export const idParams = z.object({ id: z.string().max(100) });
export const customerParams = z.object({ id: z.string().max(100) });
