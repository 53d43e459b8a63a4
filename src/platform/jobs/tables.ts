import type { ColumnType, Kysely } from 'kysely';
import type { DB, JobsTable } from '../db/schema.ts';
import type { Executor } from '../db/database.ts';

/** The jobs table with the columns of migrations/0015_jobs_lease.sql. */
export interface LeasedJobsTable extends JobsTable {
  /** The token of the claim that holds the job now (null while it waits). */
  lease_token: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set when the job ran out of attempts: never claimed again until retried. */
  dead_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type JobsDB = Omit<DB, 'jobs'> & { jobs: LeasedJobsTable };

/** The same executor, typed with the queue's columns. */
export function jobsDb(db: Executor): Kysely<JobsDB> {
  return db as unknown as Kysely<JobsDB>;
}

/** locked_until of a dead job: far enough that no claim ever takes it (older readers rely on it). */
export const DEAD_LOCK = new Date('9999-01-01T00:00:00Z');
