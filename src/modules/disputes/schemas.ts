import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { CURRENCIES } from '../../platform/money.ts';
import { DISPUTE_REASONS } from '../../rails/disputes.ts';
import { DISPUTE_STATUSES } from './tables.ts';

const pesos = z.union([z.number(), z.string().max(40)]);

/** The sandbox helpers POST /charges/{id}/dispute and POST /payments/{id}/dispute (test objects only). */
export const openDisputeBody = z.object({
  reason: z
    .enum(DISPUTE_REASONS, { error: `must be one of ${DISPUTE_REASONS.join(', ')}` })
    .nullish()
    .describe(`why the payer disputes (default general): ${DISPUTE_REASONS.join(', ')}`),
  amount: pesos
    .nullish()
    .describe('pesos disputed, more than 0 and at most what was paid; default the whole charge (or everything paid of the payment)'),
});
export type OpenDisputeBody = z.infer<typeof openDisputeBody>;

export const resolveDisputeBody = z.object({
  outcome: z.enum(['won', 'lost'], { error: 'must be won or lost' }).describe('won: the held amount returns to available; lost: it leaves for good'),
});

export const disputeResponse = z.object({
  id: z.string().describe('dp_…'),
  object: z.literal('dispute'),
  status: z.enum(DISPUTE_STATUSES).describe('needs_response (open, the amount held) → won | lost'),
  amount: z.number().describe('pesos held while open'),
  currency: z.enum(CURRENCIES),
  reason: z.enum(DISPUTE_REASONS),
  charge_id: z.string().nullable().describe('the disputed charge (ch_…), or null'),
  payment_id: z.string().nullable().describe('or the disputed payment (pay_…)'),
  payment_intent_id: z.string().nullable().describe("the disputed attempt: the charge's or the payment's approved attempt (pi_…)"),
  rail: z.string().describe('the rail that reported it (card, account_debit, banklink, rtkey, walleta, walletb)'),
  network_reference: z.string().describe("the rail's own id of the dispute"),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  closed_at: z.string().nullable().describe('when it was won or lost'),
});
export type DisputeResponse = z.infer<typeof disputeResponse>;

export type DisputeFilter = 'id' | 'status' | 'charge_id' | 'payment_id' | 'reason';
export const disputeList: ListSpec<DisputeFilter, 'created_at'> = {
  filters: ['id', 'status', 'charge_id', 'payment_id', 'reason'],
  sorts: ['created_at'],
  ranges: [],
};
export const disputeListQuery = listQuerySchema(disputeList);
export const idParams = z.object({ id: z.string() });
