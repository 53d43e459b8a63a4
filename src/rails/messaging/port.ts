/**
 * The messaging rail: a text message (SMS or a chat channel) to a phone number.
 *
 * `send` only hands the message to the provider (`queued`); the outcome arrives later, through the
 * listeners registered with `onStatus`. Never call `send` inside a database transaction: record the
 * message first, commit, then send (docs/rails.md).
 */
export interface MessagingPort {
  /** `none`: live without a gateway or connector: every send is refused (channel_not_configured). */
  readonly provider: 'sandbox' | 'http' | 'whatsapp' | 'none';
  send(message: OutboundMessage): Promise<SendResult>;
  /** Registers a listener for delivery outcomes; returns a function that removes it. */
  onStatus(listener: StatusListener): () => void;
  /**
   * Entry point for a provider's delivery reports arriving over HTTP (mount it on a route).
   * Authenticates, validates and dispatches to the listeners; answer the provider with the result.
   * The sandbox reports by itself and answers 404 here.
   */
  receiveStatus(request: { headers: Record<string, string | string[] | undefined>; body: unknown }): Promise<CallbackResult>;
  /** Stops pending work (sandbox timers, in-flight requests) and waits for running listeners. */
  close(): Promise<void>;
}

export interface OutboundMessage {
  /** E.164, e.g. `+573001234567`. */
  to: string;
  /** The text as the recipient reads it. */
  text: string;
  /** Template name (for providers that send pre-approved templates), with its variables. */
  template?: string;
  variables?: Record<string, string>;
  /**
   * What the message is for, and its values in the order of that purpose's template (docs/whatsapp.md
   * "Templates"): a provider that sends only pre-approved templates (WhatsApp) needs both.
   */
  purpose?: 'payment_link' | 'reminder' | 'receipt' | 'login_code';
  params?: string[];
  /**
   * The caller's stable id for this message (e.g. the id of the row that recorded it before
   * sending). Sent as the idempotency key, and echoed back with every status of the message.
   */
  reference: string;
}

export interface SendResult {
  providerMessageId: string;
  status: 'queued';
}

export type MessageStatus = 'delivered' | 'failed' | 'replied';

export interface StatusDetail {
  /** The `reference` given to `send`, when the provider echoes it (the sandbox always does). */
  reference: string | undefined;
  to: string | undefined;
  /** When the provider says it happened. */
  at: Date;
  /** Why it failed (`failed`). */
  reason?: string;
  /** What the recipient answered (`replied`). */
  replyText?: string;
}

export type StatusListener = (providerMessageId: string, status: MessageStatus, detail: StatusDetail) => void | Promise<void>;

export interface CallbackResult {
  statusCode: 200 | 400 | 401 | 404 | 500;
  body: { ok: true } | { error: string };
}

export type MessagingErrorCode = 'invalid_request' | 'timeout' | 'network' | 'rejected' | 'provider_error' | 'not_configured';

/**
 * A send that did not end in `queued`. `retryable`: sending again (with the same `reference`) may
 * work. `outcomeUnknown`: the provider may have accepted the message anyway (a timeout, a
 * connection cut after the request left); the caller keeps the message as unknown and retries
 * with the same reference, which the provider uses to deduplicate.
 */
export class MessagingError extends Error {
  constructor(
    readonly code: MessagingErrorCode,
    message: string,
    readonly retryable: boolean,
    readonly outcomeUnknown: boolean,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'MessagingError';
  }
}

const E164 = /^\+[1-9]\d{6,14}$/;

export function validateOutbound(message: OutboundMessage): void {
  if (typeof message.to !== 'string' || !E164.test(message.to)) {
    throw new MessagingError('invalid_request', `"to" must be an E.164 phone number, got ${JSON.stringify(message.to)}`, false, false);
  }
  if (typeof message.text !== 'string' || message.text.trim() === '') {
    throw new MessagingError('invalid_request', '"text" must be a non-empty string', false, false);
  }
  if (typeof message.reference !== 'string' || message.reference === '' || message.reference.length > 255) {
    throw new MessagingError('invalid_request', '"reference" must be a string of 1 to 255 characters', false, false);
  }
}

/** The listeners of one adapter. `dispatch` runs them in order and throws the first failure. */
export class StatusListeners {
  private listeners = new Set<StatusListener>();
  private running = new Set<Promise<unknown>>();

  add(listener: StatusListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get size(): number {
    return this.listeners.size;
  }

  async dispatch(providerMessageId: string, status: MessageStatus, detail: StatusDetail): Promise<void> {
    const run = (async () => {
      let failure: unknown;
      for (const listener of [...this.listeners]) {
        try {
          await listener(providerMessageId, status, detail);
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
    })();
    this.running.add(run);
    try {
      await run;
    } finally {
      this.running.delete(run);
    }
  }

  /** Waits for the dispatches under way. */
  async drain(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }
}
