import type { ColumnType, Kysely } from 'kysely';
import type { DB, JobsTable } from '../db/schema.ts';
import type { Executor } from '../db/database.ts';

/** The jobs table with the columns of migrations/0015_jobs_lease.sql. */
export interface LeasedJobsTable extends JobsTable {
  /** The token of the claim that holds the job now (null while it waits). */
  lease_token: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set when the job ran out of attempts: never claimed again until retried. */
  dead_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** A job bound to a test clock (0023): it runs when that clock passes clock_at, never by run_at. */
  clock_id: ColumnType<string | null, string | null | undefined, string | null>;
  clock_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type JobsDB = Omit<DB, 'jobs'> & { jobs: LeasedJobsTable };

/** The same executor, typed with the queue's columns. */
export function jobsDb(db: Executor): Kysely<JobsDB> {
  return db as unknown as Kysely<JobsDB>;
}

/** run_at of a job bound to a test clock: never due by real time. */
export const PARKED = new Date('9999-12-31T00:00:00Z');

/** locked_until of a dead job: far enough that no claim ever takes it (older readers rely on it). */
export const DEAD_LOCK = new Date('9999-01-01T00:00:00Z');
