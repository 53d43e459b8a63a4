import type { Selectable } from 'kysely';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { inTenant, loadInScope, type Tenant } from '../../platform/scope.ts';
import type { PaymentIntentsTable, PaymentsTable } from './tables.ts';
import './tables.ts';

/** SQL only: loading and locking payments and intents. */

export type PaymentRow = Selectable<PaymentsTable>;
export type IntentRow = Selectable<PaymentIntentsTable>;

export const PAYMENT_ID = /^pay_[0-9a-z]{26}$/;
export const INTENT_ID = /^pi_[0-9a-z]{26}$/;

/** A path id that cannot be a payment id never exists: 404 without a query. */
export function requirePaymentId(id: string): string {
  if (!PAYMENT_ID.test(id)) throw new ApiError('record_not_found');
  return id;
}

/** A payment of the caller's company with SPEC.md's 404 rules; `lock` takes the row lock. */
export async function loadPayment(scope: Tenant & { db: Executor }, id: string, lock = false): Promise<PaymentRow> {
  const paymentId = requirePaymentId(id);
  return loadInScope(scope, (scoped) => {
    const q = scope.db.selectFrom('payments').selectAll().$call(scoped).where('id', '=', paymentId);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  });
}

/** Row lock on a payment of the scope (serialises every change of one payment). */
export async function lockPayment(db: Executor, scope: Tenant, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** The payment's attempt in progress, if any (at most one: a unique index guards it). */
export async function findOpenIntent(db: Executor, scope: Tenant, paymentId: string): Promise<IntentRow | undefined> {
  return db
    .selectFrom('payment_intents')
    .selectAll()
    .$call(inTenant(scope))
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'in_progress')
    .executeTakeFirst();
}

export async function lockIntent(db: Executor, scope: Tenant, id: string): Promise<IntentRow | undefined> {
  return db.selectFrom('payment_intents').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function maxTransactionCop(db: Executor, companyId: string): Promise<bigint> {
  const row = await db.selectFrom('companies').select('max_transaction_cop').where('id', '=', companyId).executeTakeFirst();
  return row ? BigInt(row.max_transaction_cop) : 500_000_000n;
}
