import { sql, type Kysely } from 'kysely';
import type { Executor } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { WORK_CHANNEL } from '../outbox/outbox.ts';
import { jobsDb } from './tables.ts';

/** Bad operator input (unknown job, a job that is not dead): the CLI exits 2, the control socket answers 400. */
export class JobOperatorError extends Error {}

export type JobState = 'dead' | 'running' | 'scheduled' | 'due';

export interface JobView {
  id: string;
  kind: string;
  state: JobState;
  attempts: number;
  max_attempts: number;
  run_at: string;
  locked_until: string | null;
  dead_at: string | null;
  last_error: string | null;
  created_at: string;
  payload: Record<string, unknown>;
}

export interface ListJobsInput {
  dead?: boolean;
  kind?: string;
  limit?: number;
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

function view(
  r: {
    id: string;
    kind: string;
    attempts: number;
    max_attempts: number;
    run_at: Date;
    locked_until: Date | null;
    dead_at: Date | null;
    last_error: string | null;
    created_at: Date;
    payload: unknown;
  },
  now: Date,
): JobView {
  const state: JobState = r.dead_at
    ? 'dead'
    : r.locked_until && new Date(r.locked_until) > now
      ? 'running'
      : new Date(r.run_at) > now
        ? 'scheduled'
        : 'due';
  return {
    id: r.id,
    kind: r.kind,
    state,
    attempts: r.attempts,
    max_attempts: r.max_attempts,
    run_at: iso(r.run_at)!,
    locked_until: r.dead_at ? null : iso(r.locked_until),
    dead_at: iso(r.dead_at),
    last_error: r.last_error,
    created_at: iso(r.created_at)!,
    payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>,
  };
}

const COLUMNS = ['id', 'kind', 'attempts', 'max_attempts', 'run_at', 'locked_until', 'dead_at', 'last_error', 'created_at', 'payload'] as const;

/** `recaudo jobs list [--dead] [--kind K] [--limit N]`: oldest first (dead ones by when they died). */
export async function listJobs(db: Executor, input: ListJobsInput, now: Date): Promise<{ jobs: JobView[] }> {
  const limit = input.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new JobOperatorError('--limit must be between 1 and 10000');
  let q = jobsDb(db)
    .selectFrom('jobs')
    .select([...COLUMNS]);
  if (input.dead) q = q.where('dead_at', 'is not', null).orderBy('dead_at').orderBy('id');
  else q = q.orderBy('run_at').orderBy('id');
  if (input.kind) q = q.where('kind', '=', input.kind);
  const rows = await q.limit(limit).execute();
  return { jobs: rows.map((r) => view(r, now)) };
}

/**
 * `recaudo jobs retry ID`: a dead job goes back in the queue, due now, with a fresh set of
 * attempts (its last error is kept until it runs again). Only dead jobs: a waiting or running job
 * is already in the queue's hands. Workers of every process are notified.
 */
export async function retryJob(db: Kysely<DB>, input: { id: string }, now: Date): Promise<{ job: JobView }> {
  if (!input.id) throw new JobOperatorError('a job id is required');
  return jobsDb(db)
    .transaction()
    .execute(async (trx) => {
      const current = await trx
        .selectFrom('jobs')
        .select([...COLUMNS])
        .where('id', '=', input.id)
        .forUpdate()
        .executeTakeFirst();
      if (!current) throw new JobOperatorError(`no job ${input.id}`);
      if (!current.dead_at) throw new JobOperatorError(`job ${input.id} is not dead (${view(current, now).state}); only dead jobs are retried`);
      const updated = await trx
        .updateTable('jobs')
        .set({ dead_at: null, locked_until: null, lease_token: null, attempts: 0, run_at: now })
        .where('id', '=', input.id)
        .returning([...COLUMNS])
        .executeTakeFirstOrThrow();
      await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(trx);
      return { job: view(updated, now) };
    });
}
