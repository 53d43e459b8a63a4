import type { Executor } from '../../platform/db/database.ts';
import { inTenant } from '../../platform/scope.ts';
import { INTENT_ID, PAYMENT_ID, type IntentRow, type PaymentRow } from './queries.ts';

/**
 * The payments' reads for the payer pages. A payer has no API key: the payment's own company and
 * environment are its scope, found from the id in the link (ids are unique across companies).
 */

/**
 * Reads of the payer pages. A payer has no API key: the payment's own company and environment
 * are its scope, found from the id in the link (ids are unique across companies).
 */

export interface PayerView {
  payment: PaymentRow;
  companyName: string;
}

export async function findPaymentForPayer(db: Executor, id: string): Promise<PayerView | null> {
  if (!PAYMENT_ID.test(id)) return null;
  const row = await db
    .selectFrom('payments')
    .innerJoin('companies', 'companies.id', 'payments.company_id')
    .selectAll('payments')
    .select('companies.name as company_name')
    .where('payments.id', '=', id)
    .executeTakeFirst();
  if (!row) return null;
  const { company_name, ...payment } = row;
  return { payment: payment as PaymentRow, companyName: company_name };
}

export async function findIntent(db: Executor, payment: PaymentRow, intentId: string): Promise<IntentRow | null> {
  if (!INTENT_ID.test(intentId)) return null;
  const row = await db
    .selectFrom('payment_intents')
    .selectAll()
    .$call(inTenant({ companyId: payment.company_id, environment: payment.environment }))
    .where('id', '=', intentId)
    .where('payment_id', '=', payment.id)
    .executeTakeFirst();
  return row ?? null;
}

/** The payment's newest attempts (for the page's "last attempt" note and the open attempt). */
export async function recentIntents(db: Executor, payment: PaymentRow, limit = 5): Promise<IntentRow[]> {
  return db
    .selectFrom('payment_intents')
    .selectAll()
    .$call(inTenant({ companyId: payment.company_id, environment: payment.environment }))
    .where('payment_id', '=', payment.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Declined attempts of the payment since `since` (brake on card testing). */
export async function declinedSince(db: Executor, payment: PaymentRow, since: Date): Promise<number> {
  const row = await db
    .selectFrom('payment_intents')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .$call(inTenant({ companyId: payment.company_id, environment: payment.environment }))
    .where('payment_id', '=', payment.id)
    .where('status', '=', 'declined')
    .where('created_at', '>=', since)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export interface PortalHit {
  id: string;
  title: string;
  status: PaymentRow['status'];
  amount: bigint | null;
  amount_paid: bigint;
  currency: PaymentRow['currency'];
  expires_at: Date | null;
  environment: PaymentRow['environment'];
  company_name: string;
  created_at: Date;
}

/** The payment portal: payments with exactly this reference (newest first), optionally of one company. */
export async function findByReference(db: Executor, reference: string, companyId: string | null, limit = 20): Promise<PortalHit[]> {
  let q = db
    .selectFrom('payments')
    .innerJoin('companies', 'companies.id', 'payments.company_id')
    .select([
      'payments.id',
      'payments.title',
      'payments.status',
      'payments.amount',
      'payments.amount_paid',
      'payments.currency',
      'payments.expires_at',
      'payments.environment',
      'payments.created_at',
      'companies.name as company_name',
    ])
    .where('payments.reference', '=', reference);
  if (companyId) q = q.where('payments.company_id', '=', companyId);
  const rows = await q.orderBy('payments.created_at', 'desc').orderBy('payments.id', 'desc').limit(limit).execute();
  return rows as PortalHit[];
}
