import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../../platform/clock.ts';
import { normalizeEmail, oneLine, parseMailbox, type EmailAttachment, type EmailMessage, type EmailPort, type EmailSendResult } from './port.ts';

export interface RecordedEmail {
  messageId: string;
  from: { name: string; address: string };
  to: { name: string; address: string }[];
  subject: string;
  text: string;
  html: string | undefined;
  attachments: EmailAttachment[];
  replyTo: string | undefined;
  reference: string | undefined;
  sentAt: Date;
}

/** Used when SMTP_URL is unset: records messages in memory (`sent`, the last 1,000) and sends nothing. */
export class SandboxEmail implements EmailPort {
  readonly provider = 'sandbox' as const;
  /** Every message accepted, in order. */
  readonly sent: RecordedEmail[] = [];
  private readonly from: { name: string; address: string };
  private readonly clock: Clock;

  constructor(private readonly opts: { from: string; logger: Logger; clock?: Clock; /** Messages kept in memory. */ keep?: number }) {
    const from = parseMailbox(opts.from);
    if (!from) throw new Error(`SMTP_FROM is not an e-mail address: ${opts.from}`);
    this.from = from;
    this.clock = opts.clock ?? systemClock;
  }

  async send(message: EmailMessage): Promise<EmailSendResult> {
    const { to, subject } = normalizeEmail(message);
    const messageId = `<${randomUUID()}@${this.from.address.split('@')[1]}>`;
    this.sent.push({
      messageId,
      from: { name: message.fromName !== undefined ? oneLine(message.fromName) : this.from.name, address: this.from.address },
      to,
      subject,
      text: message.text,
      html: message.html,
      attachments: (message.attachments ?? []).map((a) => ({ ...a })),
      replyTo: message.replyTo,
      reference: message.reference,
      sentAt: this.clock.now(),
    });
    const keep = this.opts.keep ?? 1_000;
    if (this.sent.length > keep) this.sent.splice(0, this.sent.length - keep);
    this.opts.logger.debug({ messageId, reference: message.reference }, 'sandbox e-mail recorded');
    return { messageId };
  }

  /** The messages sent to an address, oldest first. */
  to(address: string): RecordedEmail[] {
    const wanted = address.toLowerCase();
    return this.sent.filter((m) => m.to.some((t) => t.address.toLowerCase() === wanted));
  }

  /** Forgets the recorded messages (between tests). */
  clear(): void {
    this.sent.length = 0;
  }

  async close(): Promise<void> {}
}
