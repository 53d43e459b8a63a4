import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { assertInScope } from '../../platform/scope.ts';
import type { ChargeRow } from './present.ts';
import './tables.ts';

/** SQL only: loading and locking charges. */

type Scope = { companyId: string; environment: Environment };

export const CHARGE_ID = /^ch_[0-9a-z]{26}$/;
const INTENT_ID = /^pi_[0-9a-z]{26}$/;

/**
 * A charge of the caller's company by its id (ch_…) or by the id of its payment intent (pi_…, the
 * attempt create recorded), with SPEC.md's 404 rules; `lock` takes the row lock.
 */
export async function loadCharge(scope: Scope & { db: Executor }, id: string, lock = false): Promise<ChargeRow> {
  const column = CHARGE_ID.test(id) ? 'id' : INTENT_ID.test(id) ? 'intent_id' : null;
  if (!column) throw new ApiError('record_not_found');
  let q = scope.db.selectFrom('charges').selectAll().where('company_id', '=', scope.companyId).where(column, '=', id);
  if (lock) q = q.forUpdate();
  return assertInScope(await q.executeTakeFirst(), scope);
}

/** Row lock on a charge of the scope (serialises every change of one charge). */
export async function lockCharge(db: Executor, scope: Scope, id: string): Promise<ChargeRow | undefined> {
  return db.selectFrom('charges').selectAll().where('company_id', '=', scope.companyId).where('environment', '=', scope.environment).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function findCharge(db: Executor, scope: Scope, id: string): Promise<ChargeRow | undefined> {
  return db.selectFrom('charges').selectAll().where('company_id', '=', scope.companyId).where('environment', '=', scope.environment).where('id', '=', id).executeTakeFirst();
}
