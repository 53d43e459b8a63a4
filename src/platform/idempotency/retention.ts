import { sql } from 'kysely';
import { afterCursor, onlyCompanies, sweepStatement, type RetentionRule } from '../retention/retention.ts';

/**
 * A completed key's stored response is needed for its 60 s replay window only: past it, a retry
 * runs again whatever is stored (docs/platform.md "Idempotency"), so the body is dropped
 * RETENTION_IDEMPOTENCY_BODY_HOURS after completion. The row stays: the key, its fingerprint, its
 * status and the resource a claim recorded (what "exactly once" rests on) are never swept.
 */
export const idempotencyBodies: RetentionRule = {
  name: 'idempotency.response_bodies',
  table: 'idempotency_keys',
  order: 'completed_at',
  setting: 'RETENTION_IDEMPOTENCY_BODY_HOURS',
  age: (config) => (config.retention.idempotencyBodyHours > 0 ? config.retention.idempotencyBodyHours * 3_600_000 : null),
  // idempotency_keys_body_completed (0037): only the rows that still have a body.
  select: (batch) => sql`
    SELECT ctid, completed_at AS cursor FROM idempotency_keys
    WHERE response_body IS NOT NULL AND completed_at < ${batch.cutoff} ${afterCursor(batch, 'completed_at', true)} ${onlyCompanies(batch)}
    ORDER BY completed_at LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
  statement: (batch) => sweepStatement(idempotencyBodies, batch, sql`response_body = NULL`),
};
