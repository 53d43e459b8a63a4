import { sql } from 'kysely';
import { afterCursor, onlyCompanies, type RetentionRule } from '../../platform/retention/retention.ts';

/**
 * Card tokens (POST /v1/tokens: single use, 10 minutes) RETENTION_EXPIRED_DAYS after they expired,
 * used or not: by then one explains no refusal any more. Through card_tokens_expiry. (Creating a
 * token also drops its company's tokens a day past expiry; this covers companies that stopped.)
 */
export const cardTokens: RetentionRule = {
  name: 'cards.tokens',
  table: 'card_tokens',
  order: 'expires_at',
  setting: 'RETENTION_EXPIRED_DAYS',
  age: (config) => (config.retention.expiredDays > 0 ? config.retention.expiredDays * 86_400_000 : null),
  select: (batch) => sql`
    SELECT ctid, expires_at AS cursor FROM card_tokens
    WHERE expires_at < ${batch.cutoff} ${afterCursor(batch, 'expires_at', true)} ${onlyCompanies(batch)}
    ORDER BY expires_at LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
};
