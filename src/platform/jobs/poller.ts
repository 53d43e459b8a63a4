import type { Logger } from 'pino';

/**
 * Runs `tick` repeatedly: again at once while it reports work done, otherwise after `pollMs`,
 * or as soon as `wake()` is called (after a commit that created work).
 */
export class Poller {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private inFlight: Promise<void> | null = null;
  private wakeRequested = false;

  constructor(
    readonly name: string,
    private tick: () => Promise<number>,
    private logger: Logger,
    private pollMs = 250,
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

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      let didWork = false;
      this.inFlight = this.tick()
        .then(
          (n) => {
            didWork = n > 0;
          },
          (error) => this.logger.error({ err: error, poller: this.name }, 'worker poll failed'),
        )
        .finally(() => {
          this.inFlight = null;
          if (!this.running) return;
          const again = this.wakeRequested || didWork;
          this.wakeRequested = false;
          this.schedule(again ? 0 : this.pollMs);
        });
    }, ms);
    this.timer.unref?.();
  }
}
