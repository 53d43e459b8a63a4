import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database, Executor } from '../db/database.ts';
import type { Clock } from '../clock.ts';
import { prefixedId } from '../ids.ts';
import { Poller } from './poller.ts';
import { WORK_CHANNEL } from '../outbox/outbox.ts';

export type JobHandler = (payload: Record<string, unknown>, job: { id: string; attempts: number }) => Promise<void>;

/**
 * A small durable queue in the application database. Jobs are inserted in the business
 * transaction (so they exist exactly when the change commits) and claimed with
 * FOR UPDATE SKIP LOCKED, so any number of worker processes share the work without running a job
 * twice at the same time. A claimed job is leased; a worker that dies lets the lease expire.
 */
export class JobQueue {
  private handlers = new Map<string, JobHandler>();
  private pollers: Poller[] = [];
  private stopping = false;

  constructor(
    private database: Database,
    private clock: Clock,
    private logger: Logger,
    private opts: { pollMs?: number; leaseMs?: number; batch?: number } = {},
  ) {
    this.pollers.push(new Poller('jobs', () => this.tick(), logger, opts.pollMs ?? 250));
  }

  register(kind: string, handler: JobHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Another background loop (webhook delivery...) started, woken and stopped with the queue. */
  attach(poller: Poller): void {
    this.pollers.push(poller);
  }

  async enqueue(db: Executor, kind: string, payload: Record<string, unknown>, runAt?: Date): Promise<string> {
    const id = prefixedId('job');
    await db
      .insertInto('jobs')
      .values({ id, kind, payload: JSON.stringify(payload), run_at: runAt ?? this.clock.now(), locked_until: null, last_error: null })
      .execute();
    return id;
  }

  private unlisten: (() => Promise<void>) | null = null;

  start(): void {
    this.stopping = false;
    for (const p of this.pollers) p.start();
    // Work committed by other processes wakes this one at once instead of at the next poll.
    void this.database
      .listen(WORK_CHANNEL, () => this.wake())
      .then((stop) => {
        if (this.stopping) void stop();
        else this.unlisten = stop;
      })
      .catch((error) => this.logger.warn({ err: error }, 'LISTEN failed; workers rely on polling'));
  }

  /** Ask every loop for an immediate poll (after a commit that created work). */
  wake(): void {
    for (const p of this.pollers) p.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.unlisten?.();
    this.unlisten = null;
    await Promise.all(this.pollers.map((p) => p.stop()));
  }

  /** Claims and runs due jobs until none are left. Exposed for tests that want to drain the queue. */
  async tick(): Promise<number> {
    let ran = 0;
    for (;;) {
      if (this.stopping) return ran;
      const claimed = await this.claim();
      if (claimed.length === 0) return ran;
      for (const job of claimed) {
        await this.runOne(job);
        ran++;
      }
    }
  }

  private async claim() {
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + (this.opts.leaseMs ?? 60_000));
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return [];
    return this.database.db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('jobs')
        .select(['id', 'kind', 'payload', 'attempts', 'max_attempts'])
        .where('run_at', '<=', now)
        .where('kind', 'in', kinds)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
        .orderBy('run_at')
        .limit(this.opts.batch ?? 20)
        .forUpdate()
        .skipLocked()
        .execute();
      if (rows.length === 0) return [];
      await trx
        .updateTable('jobs')
        .set({ locked_until: leaseUntil, attempts: sql`attempts + 1` })
        .where('id', 'in', rows.map((r) => r.id))
        .execute();
      return rows.map((r) => ({ ...r, attempts: r.attempts + 1 }));
    });
  }

  private async runOne(job: { id: string; kind: string; payload: Record<string, unknown>; attempts: number; max_attempts: number }) {
    const handler = this.handlers.get(job.kind)!;
    try {
      await handler(job.payload, { id: job.id, attempts: job.attempts });
      await this.database.db.deleteFrom('jobs').where('id', '=', job.id).execute();
      this.wake(); // the job may have emitted events to deliver
    } catch (error) {
      const message = (error as Error)?.message ?? String(error);
      this.logger.warn({ job: job.id, kind: job.kind, attempts: job.attempts, err: message }, 'job failed');
      if (job.attempts >= job.max_attempts) {
        // Dead: kept for inspection, never claimed again.
        await this.database.db
          .updateTable('jobs')
          .set({ last_error: message, locked_until: new Date('9999-01-01T00:00:00Z') })
          .where('id', '=', job.id)
          .execute();
        return;
      }
      const backoffMs = Math.min(2 ** job.attempts * 1000, 3_600_000);
      await this.database.db
        .updateTable('jobs')
        .set({ last_error: message, locked_until: null, run_at: new Date(this.clock.now().getTime() + backoffMs) })
        .where('id', '=', job.id)
        .execute();
    }
  }
}
