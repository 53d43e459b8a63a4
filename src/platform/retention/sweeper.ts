import type { Logger } from 'pino';
import type { AppDeps } from '../context.ts';
import { Poller } from '../jobs/poller.ts';
import { runRetention, type RetentionDeps, type RetentionReport, type RetentionRule } from './retention.ts';

/** After a run the budget cut short, the next one starts this soon (the backlog goes on shrinking). */
const BACKLOG_PAUSE_MS = 1_000;
/** After a failed run (the database away), the next try. */
const FAILED_RETRY_MS = 60_000;

/** The worker-side loop: started, woken and stopped with the job queue; stopping ends a run after its batch in flight. */
class SweepPoller extends Poller {
  constructor(
    private sweeper: RetentionSweeper,
    logger: Logger,
  ) {
    super('retention', () => sweeper.tick(), logger, 1_000);
  }

  override start(): void {
    this.sweeper.resume();
    super.start();
  }

  override async stop(): Promise<void> {
    this.sweeper.halt();
    await super.stop();
  }
}

/**
 * Runs the retention rules periodically in a worker process: the first run one
 * RETENTION_INTERVAL_SECONDS after start, then one interval after each complete run, or after a
 * short pause when the budget cut a run short. When is measured on the process's own timer (real
 * time); which rows are old, on the runtime's clock. Several worker processes may all run it: each
 * batch takes one advisory lock, so a process that finds another one sweeping stops its run.
 */
export class RetentionSweeper {
  readonly poller: Poller;
  /** Limits the sweeps to these companies (tests sharing one PostgreSQL database). */
  onlyCompanies: readonly string[] | undefined;
  /** The last run's report (null before the first). */
  last: RetentionReport | null = null;
  private nextRunAt: number;
  private abort = new AbortController();

  constructor(
    private deps: RetentionDeps,
    readonly rules: readonly RetentionRule[],
    private time: () => number = Date.now,
  ) {
    this.nextRunAt = time() + deps.config.retention.intervalMs;
    this.poller = new SweepPoller(this, deps.logger);
  }

  /** When the next run is due, on `time`. */
  get dueAt(): number {
    return this.nextRunAt;
  }

  /** The poller's step: a run when one is due, nothing otherwise. Never reports work done (the next run waits for its time). */
  async tick(): Promise<number> {
    if (this.time() < this.nextRunAt) return 0;
    const interval = this.deps.config.retention.intervalMs;
    try {
      const report = await runRetention(this.deps, this.rules, { companies: this.onlyCompanies, signal: this.abort.signal });
      this.last = report;
      this.nextRunAt = this.time() + (report.complete || report.busy ? interval : Math.min(interval, BACKLOG_PAUSE_MS));
    } catch (error) {
      this.deps.logger.warn({ err: (error as Error)?.message }, 'retention run failed; trying again later');
      this.nextRunAt = this.time() + Math.min(interval, FAILED_RETRY_MS);
    }
    return 0;
  }

  halt(): void {
    this.abort.abort();
  }

  resume(): void {
    if (this.abort.signal.aborted) this.abort = new AbortController();
  }
}

/** The sweeper of each runtime, for tests that drive it by hand. */
export const sweepers = new WeakMap<object, RetentionSweeper>();

/** Wires the periodic sweeps into the runtime's workers (unless RETENTION_ENABLED=false). */
export function registerRetention(deps: AppDeps, rules: readonly RetentionRule[]): RetentionSweeper {
  const sweeper = new RetentionSweeper(deps, rules);
  sweepers.set(deps, sweeper);
  if (deps.config.retention.enabled) deps.jobs.attach(sweeper.poller);
  return sweeper;
}
