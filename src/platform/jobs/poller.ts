import type { Logger } from 'pino';

/**
 * Runs `tick` repeatedly: again at once while it reports work done, otherwise after `pollMs`,
 * or as soon as `wake()` is called (after a commit that created work). A failed tick is logged and
 * retried with capped exponential backoff (100 ms doubling up to `maxBackoffMs`), never silently
 * dropped; `failingSince` tells the worker's watchdog how long it has been failing.
 *
 * Its timers do not keep the process alive (an API process has its server for that, and tests
 * must be able to end): a worker-only process holds the queue's keepalive (queue.ts).
 */
export class Poller {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private inFlight: Promise<void> | null = null;
  private wakeRequested = false;
  /** Consecutive failed ticks. */
  failures = 0;
  /** Date.now() of the first failure of the current run of failures; null while ticks succeed. */
  failingSince: number | null = null;
  lastError: string | null = null;

  constructor(
    readonly name: string,
    private tick: () => Promise<number>,
    private logger: Logger,
    private pollMs = 250,
    private opts: { minBackoffMs?: number; maxBackoffMs?: number } = {},
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  wake(): void {
    if (!this.running) return;
    if (this.inFlight) {
      this.wakeRequested = true;
      return;
    }
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight) await this.inFlight;
  }

  /** The delay before the next try after `failures` consecutive failures. */
  backoffMs(failures = this.failures): number {
    const min = this.opts.minBackoffMs ?? 100;
    const max = this.opts.maxBackoffMs ?? 5_000;
    return Math.min(max, min * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      let didWork = false;
      let failed = false;
      this.inFlight = this.tick()
        .then(
          (n) => {
            didWork = n > 0;
            if (this.failingSince !== null) {
              this.logger.info({ poller: this.name, failures: this.failures, down_ms: Date.now() - this.failingSince }, 'worker poll recovered');
            }
            this.failures = 0;
            this.failingSince = null;
            this.lastError = null;
          },
          (error) => {
            failed = true;
            this.failures++;
            this.failingSince ??= Date.now();
            this.lastError = (error as Error)?.message ?? String(error);
            this.logger.error(
              { err: error, poller: this.name, failures: this.failures, retry_in_ms: this.backoffMs() },
              'worker poll failed; retrying',
            );
          },
        )
        .finally(() => {
          this.inFlight = null;
          if (!this.running) return;
          const again = this.wakeRequested || didWork;
          this.wakeRequested = false;
          this.schedule(failed ? this.backoffMs() : again ? 0 : this.pollMs);
        });
    }, ms);
    this.timer.unref?.();
  }
}
