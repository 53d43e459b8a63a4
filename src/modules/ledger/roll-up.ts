import { sql, type Kysely, type Transaction } from 'kysely';
import type { DB, Environment } from '../../platform/db/schema.ts';
import type { Tenant } from '../../platform/scope.ts';
import { NON_NEGATIVE } from './tables.ts';

/**
 * The roll-up of unrolled entries (docs/ledger.md "Hot accounts: credits without a lock").
 *
 * A posting writes every entry that cannot take its account below zero (a credit of a
 * non-negative account, any entry of external_clearing) to `ledger_unrolled_entries` instead of
 * adding it to `ledger_accounts.balance`, so it takes no lock on the account row. Folding those
 * rows into the cached balance always happens under the account's row lock (FOR NO KEY UPDATE,
 * the lock a balance UPDATE takes anyway), in one statement that deletes the rows and adds their
 * sum: two folds of one account never overlap, and a reader — one statement, one snapshot — sees
 * each row either still unrolled or already in the balance, never both nor neither.
 *
 * Who folds: a debit that must keep the floor folds the accounts it debits before checking them
 * (service.ts); the background roll-up below folds the rest — run after each balance.updated
 * notice of a company (balance-events.ts) and by the `ledger.roll_up` job that a posting enqueues
 * when it leaves unrolled entries but changes no figure of the company (no notice follows it).
 */

export const ROLL_UP_JOB = 'ledger.roll_up';
/** How long after such a posting its roll-up job runs (a burst of postings shares the next roll-ups). */
export const ROLL_UP_DELAY_MS = 1_000;

export interface RollUpResult {
  /** Accounts whose cached balance took in unrolled entries. */
  accounts: number;
  /** Unrolled entries folded. */
  entries: number;
  /**
   * Accounts left unrolled because folding them would take the cached part of a non-negative
   * account below zero (the CHECK would refuse it): a bug — their unrolled rows sum below what
   * the account holds. Their entries stay where they are (reads stay exact and auditLedger shows
   * the account as negative); the other accounts fold. The jobs log them as errors.
   */
  skipped: { accountId: string; rolledUp: bigint; unrolled: bigint }[];
}

/**
 * Folds every committed unrolled entry of the tenant's accounts (one currency, or all) into the
 * cached balances, in its own short transaction. Accounts locked by a debit at that moment are
 * skipped (SKIP LOCKED): the debit folds them itself, and the roll-up never waits for a posting.
 */
export async function rollUp(db: Kysely<DB>, scope: Tenant, opts: { now: Date; currency?: string }): Promise<RollUpResult> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ id: string }>`
      SELECT a.id FROM ledger_accounts a
       WHERE a.company_id = ${scope.companyId} AND a.environment = ${scope.environment}
         ${opts.currency ? sql`AND a.currency = ${opts.currency}` : sql``}
         AND EXISTS (SELECT 1 FROM ledger_unrolled_entries u
                      WHERE u.company_id = a.company_id AND u.environment = a.environment AND u.account_id = a.id)
       ORDER BY a.id
       FOR NO KEY UPDATE SKIP LOCKED`.execute(trx);
    if (rows.length === 0) return { accounts: 0, entries: 0, skipped: [] };
    return foldLocked(
      trx,
      scope.environment,
      rows.map((r) => ({ companyId: scope.companyId, accountId: r.id })),
      opts.now,
    );
  });
}

/**
 * Folds the unrolled entries of accounts this transaction has row-locked: one statement deletes
 * them and adds their sums to the cached balances. The statement's snapshot is taken after the
 * locks, so it sees every entry committed before; entries committed later wait for the next fold.
 * An account whose fold would leave a non-negative cached balance below zero is left out (and
 * reported), so one broken account never blocks the roll-up of the others: the statement decides
 * per account from the sums it reads, and deletes and adds exactly the rows of the accounts it
 * folds (the same snapshot; nothing else deletes them while the accounts are locked).
 */
async function foldLocked(
  trx: Transaction<DB>,
  environment: Environment,
  accounts: { companyId: string; accountId: string }[],
  now: Date,
): Promise<RollUpResult> {
  const keys = sql.join(accounts.map((a) => sql`(${a.companyId}::text, ${a.accountId}::text)`));
  const { rows } = await sql<{ folded: boolean; account_id: string; n: number; rolled_up: bigint; unrolled: bigint }>`
    WITH sums AS (
      SELECT u.company_id, u.account_id, sum(u.amount)::bigint AS total
        FROM ledger_unrolled_entries u
        JOIN (VALUES ${keys}) AS k(company_id, account_id) ON u.company_id = k.company_id AND u.account_id = k.account_id
       WHERE u.environment = ${environment}
       GROUP BY u.company_id, u.account_id
    ), checked AS (
      SELECT s.company_id, s.account_id, s.total, a.balance,
             (NOT (a.kind = ANY(${[...NON_NEGATIVE]}::text[])) OR a.balance + s.total >= 0) AS ok
        FROM sums s
        JOIN ledger_accounts a ON a.company_id = s.company_id AND a.environment = ${environment} AND a.id = s.account_id
    ), deleted AS (
      DELETE FROM ledger_unrolled_entries u
       USING checked c
       WHERE c.ok AND u.company_id = c.company_id AND u.environment = ${environment} AND u.account_id = c.account_id
      RETURNING u.company_id, u.account_id, u.amount
    ), folded AS (
      SELECT company_id, account_id, sum(amount)::bigint AS total, count(*)::int AS n FROM deleted GROUP BY company_id, account_id
    ), updated AS (
      UPDATE ledger_accounts AS a SET balance = a.balance + f.total, updated_at = ${now}::timestamptz
        FROM folded f
       WHERE a.company_id = f.company_id AND a.environment = ${environment} AND a.id = f.account_id
      RETURNING a.id, f.n
    )
    SELECT true AS folded, id AS account_id, n, NULL::bigint AS rolled_up, NULL::bigint AS unrolled FROM updated
    UNION ALL
    SELECT false, account_id, 0, balance, total FROM checked WHERE NOT ok`.execute(trx);
  const folded = rows.filter((r) => r.folded);
  return {
    accounts: folded.length,
    entries: folded.reduce((sum, r) => sum + Number(r.n), 0),
    skipped: rows.filter((r) => !r.folded).map((r) => ({ accountId: r.account_id, rolledUp: BigInt(r.rolled_up), unrolled: BigInt(r.unrolled) })),
  };
}
