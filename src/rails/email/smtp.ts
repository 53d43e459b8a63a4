import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import { EmailError, normalizeEmail, oneLine, parseMailbox, type EmailMessage, type EmailPort, type EmailSendResult } from './port.ts';

export interface SmtpEmailOptions {
  /** SMTP_URL: `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://...:465`. */
  url: string;
  /** SMTP_FROM: `Name <address>`. */
  from: string;
  logger: Logger;
}

// Nodemailer's defaults wait minutes on a dead server; a job retries sooner than that.
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/**
 * E-mail through an SMTP server with nodemailer. Options in the URL's query string override the
 * defaults here (e.g. `?pool=true`, `?socketTimeout=60000`, `?requireTLS=true`).
 */
export class SmtpEmail implements EmailPort {
  readonly provider = 'smtp' as const;
  private readonly transport: ReturnType<typeof nodemailer.createTransport>;
  private readonly from: { name: string; address: string };
  private inFlight = new Set<Promise<unknown>>();

  constructor(private readonly opts: SmtpEmailOptions) {
    const from = parseMailbox(opts.from);
    if (!from) throw new Error(`SMTP_FROM is not an e-mail address: ${opts.from}`);
    this.from = from;
    this.transport = nodemailer.createTransport({
      ...TIMEOUTS,
      url: opts.url,
      // Attachments are content we pass, never a path or URL for nodemailer to read.
      disableFileAccess: true,
      disableUrlAccess: true,
    });
  }

  async send(message: EmailMessage): Promise<EmailSendResult> {
    const { to, subject } = normalizeEmail(message);
    const sending = this.transport.sendMail({
      from: { name: message.fromName !== undefined ? oneLine(message.fromName) : this.from.name, address: this.from.address },
      to,
      subject,
      text: message.text,
      html: message.html,
      replyTo: message.replyTo,
      headers: message.reference ? { 'X-Recaudo-Reference': oneLine(message.reference) } : undefined,
      attachments: message.attachments?.map((a) => ({ filename: oneLine(a.filename), content: a.content, contentType: a.contentType })),
    });
    this.inFlight.add(sending);
    try {
      const info = await sending;
      this.opts.logger.debug(
        { messageId: info.messageId, reference: message.reference, response: info.response },
        'e-mail accepted by the SMTP server',
      );
      return { messageId: info.messageId };
    } catch (error) {
      const mapped = smtpError(error);
      this.opts.logger.warn({ err: error, reference: message.reference, code: mapped.code }, 'e-mail not sent');
      throw mapped;
    } finally {
      this.inFlight.delete(sending);
    }
  }

  async close(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    this.transport.close();
  }
}

interface NodemailerFailure {
  code?: string;
  originalCode?: string;
  responseCode?: number;
  permanent?: boolean;
  command?: string;
  timeoutType?: string;
  message?: string;
}

const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Maps nodemailer's failure to whether it may be retried and whether the message may have gone. */
export function smtpError(error: unknown): EmailError {
  const e = (error ?? {}) as NodemailerFailure;
  const text = e.message ?? String(error);
  switch (e.code) {
    case 'EAUTH':
    case 'ENOAUTH':
    case 'ETLS':
    case 'EREQUIRETLS':
    case 'ECONFIG':
      // An operator must fix SMTP_URL; the message can go once they have.
      return new EmailError('configuration', text, true, false, e.responseCode);
  }
  if (e.responseCode !== undefined) {
    // The server answered: it did not take the message.
    if (e.permanent) return new EmailError('rejected', text, false, false, e.responseCode);
    return new EmailError('unavailable', text, true, false, e.responseCode);
  }
  if (e.code === 'EENVELOPE' || e.code === 'EMESSAGE') return new EmailError('invalid_request', text, false, false);
  const beforeHandover =
    NEVER_CONNECTED.has(e.originalCode ?? '') ||
    NEVER_CONNECTED.has(e.code ?? '') ||
    e.code === 'EDNS' ||
    e.timeoutType === 'CONNECT_TIMEOUT' ||
    e.timeoutType === 'GREETING_TIMEOUT';
  return new EmailError('unavailable', text, true, !beforeHandover);
}
