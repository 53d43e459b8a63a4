/**
 * The e-mail rail. `send` resolves once the SMTP server (or the sandbox) accepted the message.
 * Never call it inside a database transaction: record the message first, commit, then send.
 */
export interface EmailPort {
  /** `none`: live without SMTP_URL: every send is refused (channel_not_configured). */
  readonly provider: 'smtp' | 'sandbox' | 'none';
  send(message: EmailMessage): Promise<EmailSendResult>;
  /** Closes connections (SMTP) and waits for sends under way. */
  close(): Promise<void>;
}

export interface EmailMessage {
  /** One address or several; `Name <address>` is accepted. */
  to: string | string[];
  subject: string;
  text: string;
  html?: string;
  attachments?: EmailAttachment[];
  /** Display name for the sender; the address stays SMTP_FROM's (e.g. the company's name). */
  fromName?: string;
  replyTo?: string;
  /** The caller's id for this message, sent as the `X-Recaudo-Reference` header. */
  reference?: string;
}

export interface EmailAttachment {
  filename: string;
  content: Buffer | string;
  contentType?: string;
}

export interface EmailSendResult {
  /** The Message-ID header, `<...@...>`. */
  messageId: string;
}

export type EmailErrorCode = 'invalid_request' | 'rejected' | 'unavailable' | 'configuration';

/**
 * A send that did not end accepted. `retryable`: the same message may be accepted later.
 * `outcomeUnknown`: the connection broke after the message was handed over, so the server may
 * have accepted it.
 */
export class EmailError extends Error {
  constructor(
    readonly code: EmailErrorCode,
    message: string,
    readonly retryable: boolean,
    readonly outcomeUnknown: boolean,
    readonly smtpCode?: number,
  ) {
    super(message);
    this.name = 'EmailError';
  }
}

const ADDRESS = /^[^\s@<>,;"]+@[^\s@<>,;"]+\.[^\s@<>,;"]+$/;

/** Splits `Name <address>` or a bare address; undefined when it is not one address. */
export function parseMailbox(value: string): { name: string; address: string } | undefined {
  if (/[\r\n]/.test(value)) return undefined;
  const m = /^\s*(?:"?([^"<]*?)"?\s*)?<([^<>]+)>\s*$/.exec(value);
  const name = m ? (m[1] ?? '').trim() : '';
  const address = (m ? m[2] : value).trim();
  return ADDRESS.test(address) ? { name, address } : undefined;
}

/** Checks a message and returns its recipients and a header-safe subject. */
export function normalizeEmail(message: EmailMessage): { to: { name: string; address: string }[]; subject: string } {
  const list = Array.isArray(message.to) ? message.to : [message.to];
  if (list.length === 0 || list.length > 50) throw new EmailError('invalid_request', '"to" needs 1 to 50 addresses', false, false);
  const to = list.map((entry) => {
    const parsed = typeof entry === 'string' ? parseMailbox(entry) : undefined;
    if (!parsed) throw new EmailError('invalid_request', `not an e-mail address: ${JSON.stringify(entry)}`, false, false);
    return parsed;
  });
  if (message.replyTo !== undefined && !parseMailbox(message.replyTo)) {
    throw new EmailError('invalid_request', `"replyTo" is not an e-mail address: ${JSON.stringify(message.replyTo)}`, false, false);
  }
  if (typeof message.subject !== 'string' || message.subject.trim() === '') {
    throw new EmailError('invalid_request', '"subject" must be a non-empty string', false, false);
  }
  if (typeof message.text !== 'string') throw new EmailError('invalid_request', '"text" must be a string', false, false);
  // Line breaks in a header would start a new header.
  return { to, subject: oneLine(message.subject) };
}

export function oneLine(value: string): string {
  return value
    .replace(/[\r\n\t\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s{2,}/g, ' ')
    .trim();
}
