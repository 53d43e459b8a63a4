import { ApiError } from './errors/api-error.ts';
import type { Environment } from './db/schema.ts';
import { isUuid } from './ids.ts';

/** The tenant every row belongs to: a company in one environment (test or live). */
export interface Tenant {
  companyId: string;
  environment: Environment;
}

/**
 * THE tenant filter of a query: `company_id` and `environment` of the table being read, updated or
 * deleted. Every query of a tenant's rows goes through it (`.$call(inTenant(scope))`), so a
 * query can never forget half of the scope.
 */
export function inTenant(tenant: Tenant) {
  // Kysely's where() is typed per table; the two columns exist on every tenant table.
  return <QB extends { where: (...args: any[]) => any }>(qb: QB): QB =>
    qb.where('company_id', '=', tenant.companyId).where('environment', '=', tenant.environment);
}

/**
 * A company's rows in both environments: only for a lookup by id that assertInScope follows, so a
 * row of the other environment answers environment_key_mismatch rather than a bare 404.
 */
export function inCompany(tenant: Pick<Tenant, 'companyId'>) {
  return <QB extends { where: (...args: any[]) => any }>(qb: QB): QB => qb.where('company_id', '=', tenant.companyId);
}

/**
 * Checks a row fetched by id within the caller's company (never across companies): absent or
 * deleted → 404 record_not_found; the other environment → 404 environment_key_mismatch.
 */
export function assertInScope<T extends { environment: Environment; deleted_at?: Date | null }>(
  row: T | undefined,
  scope: { environment: Environment },
): T {
  if (!row || row.deleted_at) throw new ApiError('record_not_found');
  if (row.environment !== scope.environment) throw new ApiError('environment_key_mismatch');
  return row;
}

/** A path id that is not a UUID can never exist: 404 record_not_found without a query. */
export function requireUuid(id: string): string {
  if (!isUuid(id)) throw new ApiError('record_not_found');
  return id.toLowerCase();
}

export function iso(date: Date | string): string {
  return (date instanceof Date ? date : new Date(date)).toISOString();
}
