import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { inTenant } from '../../platform/scope.ts';

/** SQL only: the account joined with what its response embeds (bank and customer). */
export function selectAccountViews(db: Executor, scope: { companyId: string; environment?: Environment }) {
  let q = db
    .selectFrom('accounts')
    .leftJoin('banks', 'banks.id', 'accounts.bank_id')
    .leftJoin('customers', (j) =>
      j
        .onRef('customers.company_id', '=', 'accounts.company_id')
        .onRef('customers.environment', '=', 'accounts.environment')
        .onRef('customers.id', '=', 'accounts.customer_id'),
    )
    .selectAll('accounts')
    .select([
      'banks.name as bank_name',
      'banks.code as bank_code',
      'banks.logo_text as bank_logo_text',
      'banks.logo_color as bank_logo_color',
      'banks.connection_type as bank_connection_type',
      'customers.id as customer_ref',
      'customers.first_name as customer_first_name',
      'customers.last_name as customer_last_name',
      'customers.type as customer_type',
      'customers.email as customer_email',
      'customers.phone as customer_phone',
      'customers.document_type as customer_document_type',
      'customers.document_number as customer_document_number',
      'customers.created_at as customer_created_at',
    ])
    .where('accounts.company_id', '=', scope.companyId);
  if (scope.environment) q = q.where('accounts.environment', '=', scope.environment);
  return q;
}

export type AccountView = NonNullable<Awaited<ReturnType<ReturnType<typeof selectAccountViews>['executeTakeFirst']>>>;

export async function findAccountView(db: Executor, scope: { companyId: string; environment?: Environment }, id: string) {
  return selectAccountViews(db, scope).where('accounts.id', '=', id).executeTakeFirst();
}

/** Row lock on the account for a status change (serialises the job, /validate and DELETE). */
export async function lockAccount(db: Executor, scope: { companyId: string; environment: Environment }, id: string) {
  return db.selectFrom('accounts').select(['id', 'status', 'deleted_at']).$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function customerExists(db: Executor, scope: { companyId: string; environment: Environment }, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('customers')
    .select('id')
    .$call(inTenant(scope))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Boolean(row);
}

export async function companyExists(db: Executor, id: string): Promise<boolean> {
  return Boolean(await db.selectFrom('companies').select('id').where('id', '=', id).executeTakeFirst());
}
