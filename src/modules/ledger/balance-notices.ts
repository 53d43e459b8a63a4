import { sql, type ColumnType, type Transaction } from 'kysely';
import type { Clock } from '../../platform/clock.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import type { JobQueue } from '../../platform/jobs/queue.ts';
import type { AccountKind } from './tables.ts';

/**
 * balance.updated, the posting side (docs/ledger.md "balance.updated"). Every ledger call whose
 * postings change a company's figures (available, pending, held) calls noteBalanceChanges in its
 * transaction, after its last posting; it never emits. A company, environment and currency has at
 * most one open notice (`balance_notices`); the first posting of a quiet period opens one due a
 * second later and enqueues the job `ledger.balance_updated` for then (balance-events.ts), every
 * later posting finds it open and only share-locks it, so the job's DELETE of the notice waits for
 * those postings to commit and the figures it reads include them. One statement per notice and
 * call, no waits between postings that join (share locks do not conflict), a job per company and
 * second at most.
 */

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface BalanceNoticesTable {
  company_id: string;
  environment: Environment;
  currency: string;
  due_at: Timestamp;
}

export interface BalanceNoticeSendsTable {
  company_id: string;
  environment: Environment;
  currency: string;
  sent_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    balance_notices: BalanceNoticesTable;
    balance_notice_sends: BalanceNoticeSendsTable;
  }
}

export const BALANCE_NOTICE_JOB = 'ledger.balance_updated';
/** A burst of postings emits at most one balance.updated per company, environment and currency in this window. */
export const BALANCE_NOTICE_WINDOW_MS = 1_000;

/** The account kinds a company's figures (GET /balances) are made of: a change to one of them is a notice. */
export const FIGURE_KINDS: ReadonlySet<AccountKind> = new Set<AccountKind>(['company_available', 'company_pending', 'company_held', 'wallet']);

/** What a poster needs to open a notice: the clock and the job queue of its runtime. */
export interface BalanceNoticeScope {
  environment: Environment;
  deps: { clock: Clock; jobs: Pick<JobQueue, 'enqueue'> };
}

/** One balance notice: a company's figures in one environment and currency. */
export interface NoticeKey {
  companyId: string;
  environment: Environment;
  currency: string;
}

/**
 * Opens (or joins) the balance notices of the companies whose figures the postings of one ledger
 * call changed, inside the posting transaction. The ledger calls it once, after the call's last
 * posting: a notice row is the last lock a posting transaction takes (docs/ledger.md "Lock
 * order"), and the notices go in one order (company, environment, currency).
 */
export async function noteBalanceChanges(trx: Transaction<DB>, deps: BalanceNoticeScope['deps'], notices: Iterable<NoticeKey>): Promise<void> {
  const byKey = new Map([...notices].map((n) => [`${n.companyId}\u0000${n.environment}\u0000${n.currency}`, n]));
  for (const k of [...byKey.keys()].sort()) {
    const n = byKey.get(k)!;
    await noteOne(trx, { environment: n.environment, deps }, n.companyId, n.currency);
  }
}

async function noteOne(trx: Transaction<DB>, scope: BalanceNoticeScope, companyId: string, currency: string): Promise<void> {
  // Each round either share-locks the open notice or opens one. It goes round again only when
  // another transaction opened the notice at the same moment (the INSERT waited for it and found
  // it) — or closed it meanwhile.
  for (let round = 0; round < 5; round++) {
    const due = new Date(scope.deps.clock.now().getTime() + BALANCE_NOTICE_WINDOW_MS);
    const { rows } = await sql<{ joined: number; opened: number }>`
      WITH joined AS (
        SELECT 1 FROM balance_notices
         WHERE company_id = ${companyId} AND environment = ${scope.environment} AND currency = ${currency}
         FOR KEY SHARE
      ), opened AS (
        INSERT INTO balance_notices (company_id, environment, currency, due_at)
        SELECT ${companyId}, ${scope.environment}, ${currency}, ${due} WHERE NOT EXISTS (SELECT 1 FROM joined)
        ON CONFLICT DO NOTHING
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM joined)::int AS joined, (SELECT count(*) FROM opened)::int AS opened`.execute(trx);
    const r = rows[0];
    if (Number(r.joined) > 0) return;
    if (Number(r.opened) > 0) {
      await scope.deps.jobs.enqueue(trx, BALANCE_NOTICE_JOB, { company_id: companyId, environment: scope.environment, currency }, due);
      return;
    }
  }
  throw new Error(`could not open or join the balance notice of ${companyId}/${scope.environment}/${currency}`);
}
