import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { systemClock, type Clock } from '../../platform/clock.ts';
import { prefixedId } from '../../platform/ids.ts';
import {
  MessagingError,
  StatusListeners,
  validateOutbound,
  type CallbackResult,
  type MessagingPort,
  type OutboundMessage,
  type SendResult,
  type StatusDetail,
  type StatusListener,
} from './port.ts';

export interface HttpMessagingOptions {
  /** MESSAGING_HTTP_URL: where each message is POSTed. */
  url: string;
  /** MESSAGING_HTTP_TOKEN: sent as `Authorization: Bearer` and required on status callbacks. */
  token?: string;
  /** MESSAGING_HTTP_TIMEOUT_MS: for the whole request, response body included. */
  timeoutMs?: number;
  logger: Logger;
  clock?: Clock;
}

/** The body POSTed to MESSAGING_HTTP_URL for every message (docs/rails.md). */
export interface HttpMessagePayload {
  /** Our id for this attempt; the provider may answer with its own id instead. */
  id: string;
  to: string;
  text: string;
  template: string | null;
  variables: Record<string, string>;
  reference: string;
}

/** A delivery report POSTed by the provider to the status route. */
const statusCallback = z.object({
  provider_message_id: z.string().min(1).max(255),
  status: z.enum(['delivered', 'failed', 'replied']),
  reference: z.string().max(255).optional(),
  to: z.string().max(32).optional(),
  at: z.iso.datetime({ offset: true }).optional(),
  reason: z.string().max(500).optional(),
  reply_text: z.string().max(4096).optional(),
});

const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * A generic webhook-style provider: each message is POSTed as JSON to one endpoint (a gateway of
 * the operator's choosing, which talks to the SMS or chat network), and delivery reports come back
 * through `receiveStatus`, mounted on a route.
 */
export class HttpMessaging implements MessagingPort {
  readonly provider = 'http' as const;
  private listeners = new StatusListeners();
  private inFlight = new Set<Promise<unknown>>();
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private closed = false;

  constructor(private readonly opts: HttpMessagingOptions) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.clock = opts.clock ?? systemClock;
  }

  async send(message: OutboundMessage): Promise<SendResult> {
    if (this.closed) throw new Error('the messaging rail is closed');
    validateOutbound(message);
    const attempt = this.post(message);
    this.inFlight.add(attempt);
    try {
      return await attempt;
    } finally {
      this.inFlight.delete(attempt);
    }
  }

  onStatus(listener: StatusListener): () => void {
    return this.listeners.add(listener);
  }

  async receiveStatus(request: { headers: Record<string, string | string[] | undefined>; body: unknown }): Promise<CallbackResult> {
    if (!this.opts.token) return { statusCode: 401, body: { error: 'status callbacks need MESSAGING_HTTP_TOKEN to be set' } };
    const auth = request.headers.authorization;
    if (typeof auth !== 'string' || !sameSecret(auth, `Bearer ${this.opts.token}`)) {
      return { statusCode: 401, body: { error: 'invalid or missing bearer token' } };
    }
    const parsed = statusCallback.safeParse(request.body);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return { statusCode: 400, body: { error: `invalid status callback: ${first.path.join('.') || 'body'}: ${first.message}` } };
    }
    const u = parsed.data;
    const detail: StatusDetail = { reference: u.reference, to: u.to, at: u.at ? new Date(u.at) : this.clock.now() };
    if (u.reason !== undefined) detail.reason = u.reason;
    if (u.reply_text !== undefined) detail.replyText = u.reply_text;
    try {
      await this.listeners.dispatch(u.provider_message_id, u.status, detail);
    } catch (error) {
      // The provider retries its callback on a non-2xx answer.
      this.opts.logger.error({ err: error, providerMessageId: u.provider_message_id, status: u.status }, 'messaging status listener failed');
      return { statusCode: 500, body: { error: 'the status could not be recorded; retry later' } };
    }
    return { statusCode: 200, body: { ok: true } };
  }

  async close(): Promise<void> {
    this.closed = true;
    // A send under way finishes (bounded by the timeout): abandoning it would leave its outcome unknown.
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    await this.listeners.drain();
  }

  private async post(message: OutboundMessage): Promise<SendResult> {
    const payload: HttpMessagePayload = {
      id: prefixedId('msg'),
      to: message.to,
      text: message.text,
      template: message.template ?? null,
      variables: message.variables ?? {},
      reference: message.reference,
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'idempotency-key': message.reference,
      'user-agent': 'Recaudo-Messaging/1',
    };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    const signal = AbortSignal.timeout(this.timeoutMs);
    let status: number;
    let text: string;
    try {
      const res = await fetch(this.opts.url, { method: 'POST', headers, body: JSON.stringify(payload), signal, redirect: 'manual' });
      status = res.status;
      text = await res.text();
    } catch (error) {
      throw this.transportError(error, signal);
    }
    const log = { reference: message.reference, httpStatus: status };
    if (status >= 200 && status < 300) {
      const providerMessageId = idFrom(text) ?? payload.id;
      this.opts.logger.debug({ ...log, providerMessageId }, 'message queued with the http provider');
      return { providerMessageId, status: 'queued' };
    }
    const said = text.slice(0, 300);
    this.opts.logger.warn({ ...log, body: said }, 'the http messaging provider refused a message');
    if (status === 429 || status === 408) {
      throw new MessagingError('provider_error', `provider answered HTTP ${status}: ${said}`, true, false, status);
    }
    if (status >= 500) {
      // A gateway may have passed the message on before failing: unknown, retry with the same reference.
      throw new MessagingError('provider_error', `provider answered HTTP ${status}: ${said}`, true, true, status);
    }
    throw new MessagingError('rejected', `provider refused the message with HTTP ${status}: ${said}`, false, false, status);
  }

  private transportError(error: unknown, signal: AbortSignal): MessagingError {
    if (signal.aborted) {
      return new MessagingError('timeout', `no answer from the messaging provider within ${this.timeoutMs} ms`, true, true);
    }
    const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
    const code = cause?.code ?? '';
    const detail = cause?.message ?? (error as Error)?.message ?? String(error);
    // The request never left when the connection could not be opened; after that, it may have arrived.
    return new MessagingError('network', `could not reach the messaging provider: ${detail}`, true, !CONNECT_FAILURES.has(code));
  }
}

function idFrom(text: string): string | undefined {
  if (!text) return undefined;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    for (const key of ['provider_message_id', 'message_id', 'id']) {
      const value = body?.[key];
      if (typeof value === 'string' && value !== '' && value.length <= 255) return value;
      if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
    }
  } catch {
    // Not JSON: the provider gave no id of its own.
  }
  return undefined;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
