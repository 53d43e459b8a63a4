import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { inTenant, loadInScope, type Tenant } from '../../platform/scope.ts';
import type { ChargeRow } from './present.ts';
import './tables.ts';

/** SQL only: loading and locking charges. */

export const CHARGE_ID = /^ch_[0-9a-z]{26}$/;
const INTENT_ID = /^pi_[0-9a-z]{26}$/;

/**
 * A charge of the caller's company by its id (ch_…) or by the id of its payment intent (pi_…, the
 * attempt create recorded), with SPEC.md's 404 rules; `lock` takes the row lock.
 */
export async function loadCharge(scope: Tenant & { db: Executor }, id: string, lock = false): Promise<ChargeRow> {
  const column = CHARGE_ID.test(id) ? 'id' : INTENT_ID.test(id) ? 'intent_id' : null;
  if (!column) throw new ApiError('record_not_found');
  return loadInScope(scope, (scoped) => {
    const q = scope.db.selectFrom('charges').selectAll().$call(scoped).where(column, '=', id);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  });
}

/** Row lock on a charge of the scope (serialises every change of one charge). */
export async function lockCharge(db: Executor, scope: Tenant, id: string): Promise<ChargeRow | undefined> {
  return db.selectFrom('charges').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function findCharge(db: Executor, scope: Tenant, id: string): Promise<ChargeRow | undefined> {
  return db.selectFrom('charges').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirst();
}

/**
 * A charge by id alone, for a provider's event that names only the reference (the charge id): the
 * caller verifies the event with the tenant's own secret before trusting anything else in it.
 */
export async function findChargeTenant(db: Executor, id: string): Promise<(Tenant & { method: string; status: string }) | undefined> {
  if (!CHARGE_ID.test(id)) return undefined;
  const row = await db
    .selectFrom('charges')
    .select(['company_id', 'environment', 'payment_method_type', 'status'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? { companyId: row.company_id, environment: row.environment, method: row.payment_method_type, status: row.status } : undefined;
}

/** How many charges of these methods are still open (created or processing) since before `before`. */
export async function countOpenCharges(db: Executor, scope: Tenant, methods: readonly string[], before: Date): Promise<number> {
  if (!methods.length) return 0;
  const row = await db
    .selectFrom('charges')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .$call(inTenant(scope))
    .where('payment_method_type', 'in', methods as never)
    .where('status', 'in', ['created', 'processing'])
    .where('created_at', '<', before)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Whether the charge has a refund that is pending or succeeded (a failed one does not count: the charge may be refunded again). */
export async function hasActiveRefund(db: Executor, scope: Tenant, chargeId: string): Promise<boolean> {
  const row = await db
    .selectFrom('charge_refunds')
    .select('id')
    .$call(inTenant(scope))
    .where('charge_id', '=', chargeId)
    .where('status', '<>', 'failed')
    .executeTakeFirst();
  return row !== undefined;
}
