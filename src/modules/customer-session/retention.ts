import { sql } from 'kysely';
import type { Config } from '../../config.ts';
import { afterCursor, idsBefore, onlyCompanies, type RetentionRule } from '../../platform/retention/retention.ts';

/**
 * The payer session's short-lived rows, RETENTION_EXPIRED_DAYS (at least a day) after they stopped
 * counting for anything: a session after its expiry, a login code after its expiry and after the
 * 24 h caps stopped counting it, a login attempt after the rate limits (an hour at most) and the
 * 60 s resend check, an approval request after its held charge (5 minutes) could be answered.
 */
const expiredAge = (config: Config) => (config.retention.expiredDays > 0 ? config.retention.expiredDays * 86_400_000 : null);

/** A rule of this module: its rows go RETENTION_EXPIRED_DAYS after they stopped counting. */
const expiredRows = (name: string, table: string, order: string, select: RetentionRule['select']): RetentionRule => ({
  name: `session.${name}`,
  table,
  order,
  setting: 'RETENTION_EXPIRED_DAYS',
  age: expiredAge,
  select,
});

// customer_sessions_expiry (0037).
export const customerSessions = expiredRows(
  'sessions',
  'customer_sessions',
  'expires_at',
  (batch) => sql`
    SELECT ctid, expires_at AS cursor FROM customer_sessions
    WHERE expires_at < ${batch.cutoff} ${afterCursor(batch, 'expires_at', true)} ${onlyCompanies(batch)}
    ORDER BY expires_at LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
);

// Code ids carry their creation time: the id index up to the cutoff.
export const loginCodes = expiredRows(
  'login_codes',
  'customer_login_codes',
  'id',
  (batch) => sql`
    SELECT ctid, id AS cursor FROM customer_login_codes
    WHERE id < ${idsBefore('lc', batch.cutoff)} ${afterCursor(batch, 'id')}
      AND created_at < ${batch.cutoff} AND expires_at < ${batch.cutoff} ${onlyCompanies(batch)}
    ORDER BY id LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
);

// customer_login_attempts_at (0037).
export const loginAttempts = expiredRows(
  'login_attempts',
  'customer_login_attempts',
  'at',
  (batch) => sql`
    SELECT ctid, at AS cursor FROM customer_login_attempts
    WHERE at < ${batch.cutoff} ${afterCursor(batch, 'at', true)} ${onlyCompanies(batch)}
    ORDER BY at LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
);

// Keyed by the held charge, whose id carries its time (the request is made with the charge).
export const approvalRequests = expiredRows(
  'approval_requests',
  'session_approval_requests',
  'charge_id',
  (batch) => sql`
    SELECT ctid, charge_id AS cursor FROM session_approval_requests
    WHERE charge_id < ${idsBefore('ch', batch.cutoff)} ${afterCursor(batch, 'charge_id')}
      AND created_at < ${batch.cutoff} ${onlyCompanies(batch)}
    ORDER BY charge_id LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
);

export const sessionRetention: RetentionRule[] = [customerSessions, loginCodes, loginAttempts, approvalRequests];
