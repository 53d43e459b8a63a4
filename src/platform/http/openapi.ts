import { z } from 'zod';

/** The error envelope of SPEC.md, for the OpenAPI document. */
export const errorEnvelope = z.object({
  message: z.string(),
  code: z.union([z.number().int(), z.string()]).optional(),
  code_name: z.string().optional(),
  errors: z.record(z.string(), z.array(z.string())).optional(),
  /** rail_not_configured (10900): the rail a live key has no connector for. */
  rail: z
    .string()
    .optional()
    .describe(
      'rail_not_configured (10900): the rail without a connector (card, account_debit, banklink, rtkey, walleta, walletb, payout, enrollment, key_directory, issuer, biller)',
    ),
  /** cashout_external_id_taken (10513): the cash-out that already has this external_id. */
  cashout_id: z.string().optional().describe('cashout_external_id_taken (10513): the first cash-out with this external_id'),
  /** utility_in_progress (11202), utility_bill_already_paid (11201): the bill payment that holds the bill. */
  utility_id: z
    .string()
    .optional()
    .describe('utility_in_progress (11202) and utility_bill_already_paid (11201): the utility paying or that paid the bill'),
});

const DESCRIPTIONS: Record<number, string> = {
  400: 'Filter or sort not allowed, or malformed JSON',
  401: 'unauthenticated (10000)',
  403: 'Not allowed for this key or resource',
  404: 'record_not_found (10002) or environment_key_mismatch; an invalid key is also 404',
  409: 'idempotency_error (10003); cashout_external_id_taken (10513) with `cashout_id`',
  422: 'validation_error (10001) with errors by field; rail_not_configured (10900) with `rail` when a live key has no connector for the rail',
  429: 'Rate limit exceeded',
  503: 'Temporarily unavailable',
};

export function errorResponses(...statuses: number[]): Record<number, typeof errorEnvelope> {
  const out: Record<number, typeof errorEnvelope> = {};
  for (const s of statuses) out[s] = errorEnvelope.describe(DESCRIPTIONS[s] ?? 'Error') as typeof errorEnvelope;
  return out;
}
