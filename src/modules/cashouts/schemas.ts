import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { uuid } from '../../platform/validation.ts';
import { CASHOUT_METHODS, CASHOUT_STATUSES } from './tables.ts';

const pesos = z.union([z.number(), z.string().max(40)]).describe('pesos, at most 2 decimals');

/** PRODUCT.md's sandbox triggers for POST /cashouts; refused with a live key. */
export const CASHOUT_TEST_SCENARIOS = ['completed', 'rejected', 'returned', 'require_approval', 'pending', 'turbo_onboarding'] as const;

export const createCashoutBody = z.object({
  amount: pesos.describe('pesos, at least COP 1,000, at most the company maximum per transaction, at most 2 decimals'),
  currency: z.enum(['COP'], { error: 'must be COP' }).optional().describe('COP (the default)'),
  account_id: z.string().max(100).describe('an ACTIVE account of customer_id (SAVINGS, CHECKING, ELECTRONIC_DEPOSIT or KEY)'),
  customer_id: uuid.describe('the customer who receives the money'),
  method: z
    .enum(CASHOUT_METHODS, { error: 'must be ACH, TURBO or INSTANT' })
    .optional()
    .describe('ACH (default, 1–3 business days), TURBO (hours), INSTANT (Bre-B, a KEY account of a natural person)'),
  description: z.string().max(255).nullish(),
  external_id: z.string().min(1).max(100).nullish().describe('your reference; unique per company and environment (409 names the first cash-out)'),
  test_scenario: z
    .string()
    .max(40)
    .nullish()
    .describe(`test keys only: ${CASHOUT_TEST_SCENARIOS.join(', ')}`),
});
export type CreateCashoutBody = z.infer<typeof createCashoutBody>;

export const emptyBody = z.object({}).passthrough();
export const rejectCashoutBody = z.object({ remarks: z.string().max(100).nullish().describe('why (default REJECTED_BY_APPROVER)') });
export const resolveCashoutBody = z.object({
  action: z.enum(['complete', 'reject', 'return']).describe('complete a processing test cash-out, reject it, or return a completed one'),
  remarks: z.string().max(100).nullish(),
});
export type ResolveCashoutBody = z.infer<typeof resolveCashoutBody>;

export const cashoutResponse = z.object({
  id: z.string().describe('co_…'),
  status: z.enum(CASHOUT_STATUSES),
  amount: z.number().describe('pesos'),
  currency: z.string(),
  method: z.enum(CASHOUT_METHODS),
  account_id: z.string(),
  customer_id: z.string(),
  external_id: z.string().nullable(),
  description: z.string().nullable(),
  remarks: z.string().nullable().describe('why it was rejected or cancelled (ACCOUNT_CLOSED, RETURNED, APPROVAL_EXPIRED, …)'),
  source: z.enum(['company_available', 'customer_wallet']).describe("where the money was held from: the company's balance or the customer's wallet"),
  network_id: z.string().nullable().describe("the payout rail's reference"),
  expected_arrival_at: z
    .string()
    .nullable()
    .describe('when the money should arrive (Colombian business days for ACH); past it the rail is asked again'),
  test_scenario: z.string().nullable(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  processed_at: z.string().nullable().describe('when it was sent to the rail'),
  completed_at: z.string().nullable(),
  rejected_at: z.string().nullable(),
  cancelled_at: z.string().nullable(),
  created_by: z.string().nullable().describe('the principal that created it: the id of the API key (key_…); null when no key did'),
  approved_by: z.string().nullable().describe('the principal that approved it (never its creator: maker-checker)'),
  rejected_by: z.string().nullable().describe('the principal that rejected it from require_approval'),
});
export type CashoutResponse = z.infer<typeof cashoutResponse>;

export type CashoutFilter = 'id' | 'status' | 'external_id' | 'customer_id' | 'method';
export const cashoutList: ListSpec<CashoutFilter, 'created_at'> = {
  filters: ['id', 'status', 'external_id', 'customer_id', 'method'],
  sorts: ['created_at'],
  ranges: [],
};
export const cashoutListQuery = listQuerySchema(cashoutList);
export const idParams = z.object({ id: z.string() });

export const balanceCashoutBody = z.object({
  amount: pesos.nullish().describe('pesos; omitted: the whole available balance'),
  account_id: z.string().max(100).nullish().describe("omitted: the company's payout account"),
});
export const payoutAccountBody = z.object({
  account_id: z.string().max(100).describe('an ACTIVE account (SAVINGS or CHECKING) of this environment'),
});
export const payoutAccountResponse = z.object({ account_id: z.string().nullable(), updated_at: z.string().nullable() });
