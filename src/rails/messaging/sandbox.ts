import type { Logger } from 'pino';
import { systemClock, type Clock } from '../../platform/clock.ts';
import { prefixedId } from '../../platform/ids.ts';
import {
  StatusListeners,
  validateOutbound,
  type CallbackResult,
  type MessageStatus,
  type MessagingPort,
  type OutboundMessage,
  type SendResult,
  type StatusDetail,
  type StatusListener,
} from './port.ts';

/** The reply the sandbox makes for phones ending in 1111. */
export const SANDBOX_REPLY_TEXT = 'Gracias, ya recibí el enlace.';

/**
 * The sandbox's deterministic outcome for a phone: ending in `0000` fails, ending in `1111` is
 * answered, anything else is delivered.
 */
export function sandboxOutcome(to: string): { status: MessageStatus; reason?: string; replyText?: string } {
  if (to.endsWith('0000')) return { status: 'failed', reason: 'unreachable' };
  if (to.endsWith('1111')) return { status: 'replied', replyText: SANDBOX_REPLY_TEXT };
  return { status: 'delivered' };
}

export interface SandboxMessage extends OutboundMessage {
  providerMessageId: string;
  sentAt: Date;
}

export interface StatusReport {
  providerMessageId: string;
  status: MessageStatus;
  detail: StatusDetail;
}

export interface SandboxMessagingOptions {
  logger: Logger;
  /** Time from `send` to the outcome (MESSAGING_SANDBOX_DELAY_MS). */
  delayMs?: number;
  clock?: Clock;
  /** Waits before calling the listeners again after one threw. */
  retryDelaysMs?: number[];
  /** How many messages and reports to keep in memory (the oldest are forgotten). */
  keep?: number;
}

/**
 * Records messages in memory (`sent`, the last `keep`) and reports each outcome to the listeners after
 * `delayMs`, like a provider's delivery report would arrive. Outcomes are kept in `reports`.
 * A process that stops before an outcome is reported loses it (it is a simulator).
 */
export class SandboxMessaging implements MessagingPort {
  readonly provider = 'sandbox' as const;
  /** Every message sent, in order. */
  readonly sent: SandboxMessage[] = [];
  /** Every outcome reported, in order (recorded before the listeners run). */
  readonly reports: StatusReport[] = [];

  private listeners = new StatusListeners();
  private sleepers = new Map<NodeJS.Timeout, (ran: boolean) => void>();
  /** The first report of each message whose listeners have run. */
  private settled = new Map<string, StatusReport>();
  private pending = new Set<Promise<void>>();
  private waiters: { id: string; resolve: (r: StatusReport) => void; reject: (e: Error) => void }[] = [];
  private closed = false;
  private readonly delayMs: number;
  private readonly clock: Clock;
  private readonly retryDelaysMs: number[];
  private readonly logger: Logger;
  private readonly keep: number;

  constructor(opts: SandboxMessagingOptions) {
    this.logger = opts.logger;
    this.delayMs = opts.delayMs ?? 500;
    this.clock = opts.clock ?? systemClock;
    this.retryDelaysMs = opts.retryDelaysMs ?? [200, 1_000, 5_000];
    this.keep = opts.keep ?? 1_000;
  }

  async send(message: OutboundMessage): Promise<SendResult> {
    if (this.closed) throw new Error('the messaging rail is closed');
    validateOutbound(message);
    const providerMessageId = prefixedId('sbmsg');
    const recorded: SandboxMessage = {
      ...message,
      variables: message.variables && { ...message.variables },
      providerMessageId,
      sentAt: this.clock.now(),
    };
    this.sent.push(recorded);
    trim(this.sent, this.keep);
    const outcome = sandboxOutcome(message.to);
    this.track(
      this.sleep(this.delayMs).then((ran) => {
        if (!ran) return;
        return this.deliver(providerMessageId, outcome.status, { reason: outcome.reason, replyText: outcome.replyText }, recorded);
      }),
    );
    this.logger.debug({ providerMessageId, reference: message.reference }, 'sandbox message queued');
    return { providerMessageId, status: 'queued' };
  }

  onStatus(listener: StatusListener): () => void {
    return this.listeners.add(listener);
  }

  async receiveStatus(): Promise<CallbackResult> {
    return { statusCode: 404, body: { error: 'the sandbox messaging provider reports outcomes by itself' } };
  }

  /**
   * Reports a status of a sent message now, as the provider would (for tests: a second reply, a
   * late failure). Resolves when the listeners have run (or given up after the retries).
   */
  report(providerMessageId: string, status: MessageStatus, extra: { reason?: string; replyText?: string } = {}): Promise<void> {
    return this.deliver(
      providerMessageId,
      status,
      extra,
      this.sent.find((m) => m.providerMessageId === providerMessageId),
    );
  }

  private async deliver(
    providerMessageId: string,
    status: MessageStatus,
    extra: { reason?: string; replyText?: string },
    message: SandboxMessage | undefined,
  ): Promise<void> {
    const detail: StatusDetail = { reference: message?.reference, to: message?.to, at: this.clock.now() };
    if (extra.reason !== undefined) detail.reason = extra.reason;
    if (extra.replyText !== undefined) detail.replyText = extra.replyText;
    const report: StatusReport = { providerMessageId, status, detail };
    this.reports.push(report);
    trim(this.reports, this.keep);
    if (this.listeners.size === 0) {
      this.logger.warn({ providerMessageId, status }, 'messaging status reported with no listener');
    }
    for (let attempt = 0; ; attempt++) {
      try {
        await this.listeners.dispatch(providerMessageId, status, detail);
        break;
      } catch (error) {
        const wait = this.retryDelaysMs[attempt];
        if (wait === undefined || this.closed) {
          this.logger.error({ err: error, providerMessageId, status }, 'messaging status listener failed; status dropped');
          break;
        }
        this.logger.warn({ err: error, providerMessageId, status, attempt: attempt + 1 }, 'messaging status listener failed; retrying');
        if (!(await this.sleep(wait))) break;
      }
    }
    if (!this.settled.has(providerMessageId)) {
      this.settled.set(providerMessageId, report);
      for (const id of this.settled.keys()) {
        if (this.settled.size <= this.keep) break;
        this.settled.delete(id);
      }
    }
    this.waiters = this.waiters.filter((w) => {
      if (w.id !== providerMessageId) return true;
      w.resolve(report);
      return false;
    });
  }

  /** The first report of a message, once its listeners have run (at once if already reported). */
  waitForStatus(providerMessageId: string): Promise<StatusReport> {
    const done = this.settled.get(providerMessageId);
    if (done) return Promise.resolve(done);
    return new Promise((resolve, reject) => this.waiters.push({ id: providerMessageId, resolve, reject }));
  }

  /** Waits until every outcome scheduled so far has been reported and its listeners have run. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** Forgets the recorded messages and reports (between tests). */
  clear(): void {
    this.sent.length = 0;
    this.reports.length = 0;
    this.settled.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [timer, wake] of this.sleepers) {
      clearTimeout(timer);
      wake(false);
    }
    this.sleepers.clear();
    await this.idle();
    await this.listeners.drain();
    for (const w of this.waiters.splice(0)) w.reject(new Error('the messaging rail closed before the message was reported'));
  }

  private track(work: Promise<void>): void {
    const p = work.catch((error) => this.logger.error({ err: error }, 'sandbox messaging failed'));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Resolves true after `ms`, or false when the rail is closed first. */
  private sleep(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleepers.delete(timer);
        resolve(!this.closed);
      }, ms);
      this.sleepers.set(timer, resolve);
    });
  }
}

function trim<T>(list: T[], keep: number): void {
  if (list.length > keep) list.splice(0, list.length - keep);
}
