import { z } from 'zod';

/**
 * The error envelope of SPEC.md, for the OpenAPI document: the component `Error`. Every error
 * status of an operation points at it; the document gives each status one shared response
 * (`components.responses`) that lists the registry's codes of that status (openapi-document.ts).
 */
export const errorEnvelope = z
  .object({
    message: z.string(),
    code: z.union([z.number().int(), z.string()]).optional().describe('numeric for platform errors (10001), a string for invoicing errors'),
    code_name: z.string().optional().describe('the stable name to branch on (validation_error, charge_is_not_paid…)'),
    errors: z.record(z.string(), z.array(z.string())).optional().describe('validation_error: messages by field (dotted paths)'),
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
  })
  .meta({
    id: 'Error',
    description: 'The error envelope: `message` always; `code` and `code_name` for coded errors; `errors` by field on validation.',
    examples: [
      { message: 'The request has invalid or missing fields.', code: 10001, code_name: 'validation_error', errors: { first_name: ['is required'] } },
    ],
  });

/** The error responses of an operation: the shared envelope for each status (described per status in the document). */
export function errorResponses(...statuses: number[]): Record<number, typeof errorEnvelope> {
  const out: Record<number, typeof errorEnvelope> = {};
  for (const s of statuses) out[s] = errorEnvelope;
  return out;
}
