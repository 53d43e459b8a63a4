import type { Transaction } from 'kysely';
import type { ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { inTenant } from '../../platform/scope.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { hasActiveRefund, lockCharge } from './queries.ts';
import { chargeRail, RAIL_OF_METHOD } from './rails.ts';
import type { DisputeReporting } from '../../rails/disputes.ts';
import type { Tenant } from '../../platform/scope.ts';
import type { AppDeps } from '../../platform/context.ts';

/**
 * What the charges module does for a dispute (docs/disputes.md). The disputes module owns the
 * dispute; the charge keeps SPEC.md's statuses (a disputed charge stays `paid`) and names its
 * dispute (`disputed`, `dispute_id`), with `charge.disputed` in the dispute's transaction.
 */

/**
 * Checks that the locked charge can be disputed: paid, no refund recorded, not disputed yet.
 * 10807 when not paid (refunded included), 10805 when a refund of it is in progress.
 */
export async function lockDisputableCharge(trx: Transaction<DB>, scope: Tenant, chargeId: string): Promise<ChargeRow> {
  const charge = await lockCharge(trx, scope, chargeId);
  if (!charge) throw new ApiError('record_not_found');
  if (charge.status !== 'paid') {
    throw new ApiError('charge_is_not_paid', { message: `The charge is ${charge.status}; only a paid charge can be disputed.` });
  }
  if (await hasActiveRefund(trx, scope, charge.id))
    throw new ApiError('charge_refunded', { message: 'A refund of this charge is in progress; it cannot be disputed.' });
  return charge;
}

/** The charge names its dispute and emits charge.disputed (the charge as it is now), in `trx`. */
export async function markChargeDisputed(trx: Transaction<DB>, scope: ServiceScope, charge: ChargeRow, disputeId: string): Promise<ChargeRow> {
  const now = scope.deps.clock.now();
  const updated = await trx
    .updateTable('charges')
    .set({ dispute_id: disputeId, updated_at: now })
    .$call(inTenant(scope))
    .where('id', '=', charge.id)
    .where('dispute_id', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw new ApiError('record_not_found');
  const data = toChargeResponse(updated, scope.deps.config.baseUrl);
  await emitEvent({ ...scope, db: trx }, 'charge.disputed', data as unknown as Record<string, unknown>, now);
  return updated;
}

/** The rail a charge's money moved on (its dispute reports come from there). */
export async function chargeDisputeRail(
  deps: AppDeps,
  scope: Tenant,
  charge: Pick<ChargeRow, 'payment_method_type'>,
): Promise<{ rail: string; port: DisputeReporting }> {
  return { rail: RAIL_OF_METHOD[charge.payment_method_type], port: await chargeRail(deps, scope, charge.payment_method_type) };
}
