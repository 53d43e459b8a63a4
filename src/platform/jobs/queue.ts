import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database, Executor } from '../db/database.ts';
import type { Clock } from '../clock.ts';
import type { MetricsRegistry } from '../metrics.ts';
import { prefixedId } from '../ids.ts';
import { Poller } from './poller.ts';
import { WORK_CHANNEL } from '../outbox/outbox.ts';
import { DEAD_LOCK, jobsDb, PARKED } from './tables.ts';

export interface JobInfo {
  id: string;
  attempts: number;
  /** Aborted when this runner lost the job's lease (another worker may be running it now). */
  signal: AbortSignal;
  /** The simulated time of a job bound to a test clock (its handler's "now"); absent otherwise. */
  clock?: Clock;
}

/** A job bound to a test clock: it runs when the clock is advanced past `runAt` (simulated time). */
export interface ClockBinding {
  clockId: string;
}

export type JobHandler = (payload: Record<string, unknown>, job: JobInfo) => Promise<void>;

export interface JobQueueOptions {
  /** Idle poll interval of the jobs loop (ms). */
  pollMs?: number;
  /** How long a claim holds a job without renewal (ms); renewed every third of it while the job runs. */
  leaseMs?: number;
  /** Jobs this process runs at the same time; it never leases more than it runs. */
  concurrency?: number;
  /** Told each time the queue counts its dead jobs for /metrics. */
  metrics?: MetricsRegistry;
}

export interface WorkerOptions {
  /**
   * Hold a timer that keeps the process alive while the workers run (a worker-only process has
   * nothing else that does); released by stop().
   */
  keepAlive?: boolean;
  /**
   * When the jobs loop has failed for longer than this (ms) — the database is unreachable — call
   * `onFatal` once. 0 or unset: never; the loops keep retrying.
   */
  maxOutageMs?: number;
  onFatal?: (info: { down_ms: number; error: string | null }) => void;
}

/** Transactions that already carry a notification (one per transaction is enough). */
const notified = new WeakSet<object>();

interface Claimed {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
  token: string;
}

/**
 * A small durable queue in the application database. Jobs are inserted in the business
 * transaction (so they exist exactly when the change commits) and claimed one at a time with
 * FOR UPDATE SKIP LOCKED, so any number of worker processes share the work. A job is leased only
 * while it runs: each process claims no more jobs than it runs at once (`concurrency`), renews the
 * lease while the handler runs (heartbeat), and completes or fails the job only while it still
 * holds the claim's token, so a runner whose lease lapsed (a paused or partitioned process) can
 * never overwrite the work of the worker that took the job over. A worker that dies lets the lease
 * expire and the job runs again elsewhere (handlers are idempotent). A job out of attempts is dead:
 * kept, listed and retried by the operator (operator.ts), counted in /metrics.
 */
export class JobQueue {
  private handlers = new Map<string, JobHandler>();
  private pollers: Poller[] = [];
  private stopping = false;
  private keepAlive: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private fatalCalled = false;
  readonly leaseMs: number;
  readonly concurrency: number;

  constructor(
    private database: Database,
    private clock: Clock,
    private logger: Logger,
    opts: JobQueueOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.concurrency = Math.max(1, opts.concurrency ?? 1);
    this.pollers.push(new Poller('jobs', () => this.tick(), logger, opts.pollMs ?? 250));
    opts.metrics?.collect(async () => {
      const rows = await jobsDb(this.database.db)
        .selectFrom('jobs')
        .select(['kind', sql<string>`count(*)`.as('n')])
        .where('dead_at', 'is not', null)
        .groupBy('kind')
        .execute();
      const counts = new Map<string, number>([...this.handlers.keys()].map((k) => [k, 0]));
      for (const r of rows) counts.set(r.kind, Number(r.n));
      // Every job by kind and state: failed = out of attempts (dead), running = leased now, queued = the rest.
      const states = await jobsDb(this.database.db)
        .selectFrom('jobs')
        .select([
          'kind',
          sql<string>`CASE WHEN dead_at IS NOT NULL THEN 'failed' WHEN locked_until > ${this.clock.now()} THEN 'running' ELSE 'queued' END`.as(
            'state',
          ),
          sql<string>`count(*)`.as('n'),
        ])
        .groupBy(['kind', sql`2`])
        .execute();
      const byState = new Map<string, number>();
      for (const kind of [...this.handlers.keys()]) for (const state of ['queued', 'running', 'failed']) byState.set(`${kind}\n${state}`, 0);
      for (const r of states) byState.set(`${r.kind}\n${r.state}`, Number(r.n));
      return [
        {
          name: 'recaudo_jobs',
          help: 'Background jobs by kind and state (queued, running, failed: out of attempts)',
          samples: [...byState]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([key, value]) => {
              const [kind, state] = key.split('\n');
              return { labels: { kind, state }, value };
            }),
        },
        {
          name: 'recaudo_jobs_dead',
          help: 'Background jobs out of attempts, by kind (recaudo jobs list --dead; recaudo jobs retry ID)',
          samples: [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([kind, value]) => ({ labels: { kind }, value })),
        },
      ];
    });
  }

  register(kind: string, handler: JobHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Another background loop (webhook delivery...) started, woken and stopped with the queue. */
  attach(poller: Poller): void {
    this.pollers.push(poller);
  }

  /**
   * Inserts a job with the caller's executor (the business transaction). A job due now also
   * notifies the workers of other processes (sent when, and only if, the transaction commits).
   */
  async enqueue(db: Executor, kind: string, payload: Record<string, unknown>, runAt?: Date, binding?: ClockBinding | null): Promise<string> {
    const id = prefixedId('job');
    if (binding) {
      // Simulated time: parked until runClock passes runAt (the caller's clock is the test clock's).
      if (!runAt) throw new Error(`${kind}: a job bound to a test clock needs its simulated run time`);
      await jobsDb(db)
        .insertInto('jobs')
        .values({
          id,
          kind,
          payload: JSON.stringify(payload),
          run_at: PARKED,
          locked_until: null,
          last_error: null,
          clock_id: binding.clockId,
          clock_at: runAt,
        })
        .execute();
      return id;
    }
    const now = this.clock.now();
    await jobsDb(db)
      .insertInto('jobs')
      .values({ id, kind, payload: JSON.stringify(payload), run_at: runAt ?? now, locked_until: null, last_error: null })
      .execute();
    if ((!runAt || runAt.getTime() <= now.getTime()) && !(db.isTransaction && notified.has(db))) {
      if (db.isTransaction) notified.add(db);
      await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(db);
    }
    return id;
  }

  /**
   * Runs the jobs bound to a test clock whose simulated time is at or before `until`, one at a time
   * in time order, each with its own time as the handler's clock (so what it schedules lands in
   * the same simulated timeline and runs in this pass too). A failing job is put back and stops
   * the pass: `failedAt` says where the clock stands. Each job is leased while it runs and deleted
   * when it succeeded: a pass killed meanwhile leaves it to the next pass once the lease lapses (the
   * handlers are idempotent: a billed cycle is never billed again).
   */
  async runClock(
    clockId: string,
    until: Date,
    opts: { maxJobs?: number; onJob?: (at: Date) => Promise<void> } = {},
  ): Promise<{ ran: number; failedAt: Date | null }> {
    const db = jobsDb(this.database.db);
    let ran = 0;
    for (let i = 0; i < (opts.maxJobs ?? 10_000); i++) {
      const now = this.clock.now();
      const next = await db
        .selectFrom('jobs')
        .selectAll()
        .where('clock_id', '=', clockId)
        .where('clock_at', '<=', until)
        .where('dead_at', 'is', null)
        .orderBy('clock_at')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      if (!next) break;
      if (next.locked_until && new Date(next.locked_until).getTime() > now.getTime()) {
        // Another pass holds it (a pass of an earlier run whose lease has not lapsed yet).
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      const token = randomUUID();
      const claimed = await db
        .updateTable('jobs')
        .set({ locked_until: new Date(now.getTime() + this.leaseMs), lease_token: token, attempts: next.attempts + 1 })
        .where('id', '=', next.id)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
        .returning('id')
        .executeTakeFirst();
      if (!claimed) continue;
      const at = new Date(next.clock_at!);
      await opts.onJob?.(at);
      const handler = this.handlers.get(next.kind);
      const payload = typeof next.payload === 'string' ? (JSON.parse(next.payload) as Record<string, unknown>) : next.payload;
      try {
        if (!handler) throw new Error(`no handler for ${next.kind}`);
        await handler(payload, {
          id: next.id,
          attempts: next.attempts + 1,
          signal: new AbortController().signal,
          clock: { now: () => new Date(at) },
        });
        await db.deleteFrom('jobs').where('id', '=', next.id).where('lease_token', '=', token).execute();
        ran++;
      } catch (error) {
        const message = (error as Error)?.message ?? String(error);
        await db
          .updateTable('jobs')
          .set({ last_error: message, locked_until: null, lease_token: null })
          .where('id', '=', next.id)
          .where('lease_token', '=', token)
          .execute();
        this.logger.warn({ job: next.id, kind: next.kind, clock: clockId, err: message }, 'test-clock job failed; the clock stops before it');
        return { ran, failedAt: at };
      }
    }
    return { ran, failedAt: null };
  }

  /** Drops the jobs of a deleted test clock. */
  async dropClock(db: Executor, clockId: string): Promise<void> {
    await jobsDb(db).deleteFrom('jobs').where('clock_id', '=', clockId).execute();
  }

  start(opts: WorkerOptions = {}): void {
    this.stopping = false;
    this.fatalCalled = false;
    for (const p of this.pollers) p.start();
    const maxOutageMs = opts.maxOutageMs ?? 0;
    if (opts.keepAlive || maxOutageMs > 0) {
      if (this.keepAlive) clearInterval(this.keepAlive);
      const every = maxOutageMs > 0 ? Math.max(10, Math.min(1_000, Math.floor(maxOutageMs / 4))) : 60_000;
      this.keepAlive = setInterval(() => this.watch(maxOutageMs, opts.onFatal), every);
      if (!opts.keepAlive) this.keepAlive.unref();
    }
    // Work committed by other processes wakes this one at once instead of at the next poll. The
    // session reconnects by itself (db/listen.ts); polling goes on meanwhile.
    void this.database
      .listen(WORK_CHANNEL, () => this.wake(), { logger: this.logger })
      .then(async (stop) => {
        if (this.stopping) await stop();
        else this.unlisten = stop;
      })
      .catch((error) => this.logger.error({ err: error }, 'LISTEN failed; workers rely on polling'));
  }

  /**
   * The watchdog: the queue's own loop (which reaches the database at every poll and retries
   * failures every few seconds) failing for longer than maxOutageMs means this worker cannot go on.
   */
  private watch(maxOutageMs: number, onFatal?: WorkerOptions['onFatal']): void {
    if (maxOutageMs <= 0 || this.fatalCalled || this.stopping) return;
    const loop = this.pollers[0];
    if (loop.failingSince === null) return;
    const downMs = Date.now() - loop.failingSince;
    if (downMs < maxOutageMs) return;
    this.fatalCalled = true;
    const error = loop.lastError;
    if (onFatal) onFatal({ down_ms: downMs, error });
    else this.logger.fatal({ down_ms: downMs, err: error }, 'workers cannot reach the database');
  }

  /** Ask every loop for an immediate poll (after a commit that created work). */
  wake(): void {
    for (const p of this.pollers) p.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = null;
    await this.unlisten?.();
    this.unlisten = null;
    await Promise.all(this.pollers.map((p) => p.stop()));
  }

  /**
   * Claims and runs due jobs until none are left, `concurrency` at a time, each claimed only when
   * a slot is free. Exposed for tests that want to drain the queue.
   */
  async tick(): Promise<number> {
    const lanes = await Promise.allSettled(Array.from({ length: this.concurrency }, () => this.lane()));
    const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (failed) throw failed.reason;
    return lanes.reduce((n, l) => n + (l as PromiseFulfilledResult<number>).value, 0);
  }

  private async lane(): Promise<number> {
    let ran = 0;
    for (;;) {
      if (this.stopping) return ran;
      const job = await this.claim();
      if (!job) return ran;
      await this.runOne(job);
      ran++;
    }
  }

  /** Leases the next due job (one) to a new token; null when none is due. */
  private async claim(): Promise<Claimed | null> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return null;
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const token = randomUUID();
    const { rows } = await sql<Omit<Claimed, 'token'>>`
      UPDATE jobs SET locked_until = ${leaseUntil}, attempts = attempts + 1, lease_token = ${token}
      WHERE id = (
        SELECT id FROM jobs
        WHERE run_at <= ${now} AND kind IN (${sql.join(kinds)}) AND dead_at IS NULL
          AND (locked_until IS NULL OR locked_until < ${now})
        ORDER BY run_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id, kind, payload, attempts, max_attempts`.execute(this.database.db);
    const row = rows[0];
    if (!row) return null;
    const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as Record<string, unknown>) : row.payload;
    return { ...row, payload, token };
  }

  /** Renews the lease every third of leaseMs while the job runs; aborts `signal` if it was lost. */
  private heartbeat(job: Claimed, abort: AbortController): () => void {
    let busy = false;
    const timer = setInterval(
      () => {
        if (busy || abort.signal.aborted) return;
        busy = true;
        const until = new Date(this.clock.now().getTime() + this.leaseMs);
        jobsDb(this.database.db)
          .updateTable('jobs')
          .set({ locked_until: until })
          .where('id', '=', job.id)
          .where('lease_token', '=', job.token)
          .executeTakeFirst()
          .then(
            (r) => {
              if (Number(r.numUpdatedRows) === 0 && !abort.signal.aborted) {
                this.logger.warn({ job: job.id, kind: job.kind }, 'job lease lost while running; another worker may run it');
                abort.abort(new Error('job lease lost'));
              }
            },
            (error) => this.logger.warn({ job: job.id, kind: job.kind, err: (error as Error)?.message }, 'job lease renewal failed; retrying'),
          )
          .finally(() => {
            busy = false;
          });
      },
      Math.max(10, Math.floor(this.leaseMs / 3)),
    );
    timer.unref();
    return () => clearInterval(timer);
  }

  private async runOne(job: Claimed): Promise<void> {
    const handler = this.handlers.get(job.kind)!;
    const abort = new AbortController();
    const stopHeartbeat = this.heartbeat(job, abort);
    let failure: unknown = null;
    let ok = false;
    try {
      await handler(job.payload, { id: job.id, attempts: job.attempts, signal: abort.signal });
      ok = true;
    } catch (error) {
      failure = error;
    } finally {
      stopHeartbeat();
    }
    const db = jobsDb(this.database.db);
    if (ok) {
      // Only while this claim still holds the job: otherwise it belongs to another runner now.
      const r = await db.deleteFrom('jobs').where('id', '=', job.id).where('lease_token', '=', job.token).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0)
        this.logger.debug({ job: job.id, kind: job.kind }, 'job finished without its lease (taken over or deleted)');
      this.wake(); // the job may have emitted events to deliver
      return;
    }
    const message = (failure as Error)?.message ?? String(failure);
    const dead = job.attempts >= job.max_attempts;
    const now = this.clock.now();
    const set = dead
      ? { last_error: message, locked_until: DEAD_LOCK, lease_token: null, dead_at: now }
      : {
          last_error: message,
          locked_until: null,
          lease_token: null,
          run_at: new Date(now.getTime() + Math.min(2 ** job.attempts * 1000, 3_600_000)),
        };
    const r = await db.updateTable('jobs').set(set).where('id', '=', job.id).where('lease_token', '=', job.token).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) {
      this.logger.warn(
        { job: job.id, kind: job.kind, attempts: job.attempts, err: message },
        'job failed after losing its lease; the new holder decides',
      );
    } else if (dead) {
      this.logger.error(
        { job: job.id, kind: job.kind, attempts: job.attempts, err: message },
        'job dead: out of attempts (recaudo jobs list --dead; recaudo jobs retry ID)',
      );
    } else {
      this.logger.warn({ job: job.id, kind: job.kind, attempts: job.attempts, err: message }, 'job failed; retrying later');
    }
  }
}
