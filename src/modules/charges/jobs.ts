/** The charges' background jobs: their names and payload (registered in settle.ts). */

export const RECONCILE_JOB = 'charges.reconcile';

export const EXPIRE_JOB = 'charges.expire';

export function jobPayload(
  charge: { company_id: string; environment: string; id: string },
  extra: { refund_id?: string; void?: boolean },
): Record<string, unknown> {
  return { company_id: charge.company_id, environment: charge.environment, charge_id: charge.id, ...extra };
}
