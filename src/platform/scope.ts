import { ApiError } from './errors/api-error.ts';
import type { Environment } from './db/schema.ts';
import { isUuid } from './ids.ts';

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
