import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  MessagingError,
  StatusListeners,
  validateOutbound,
  type CallbackResult,
  type MessagingPort,
  type MessageStatus,
  type OutboundMessage,
  type SendResult,
  type StatusListener,
} from './port.ts';

/**
 * WhatsApp Business Cloud API (Meta's Graph API) as one company's messaging rail (docs/whatsapp.md).
 * Built from Meta's public reference and two maintained independent clients (pywa, whatsapp-api-js):
 *
 * - Send: `POST {graph}/{version}/{phone_number_id}/messages`, `Authorization: Bearer <token>`, a
 *   template message (`messaging_product: "whatsapp"`, `type: "template"`, the template's name and
 *   approved language, one body text parameter per `{{n}}` in order). `to` is the E.164 number
 *   without `+`. `biz_opaque_callback_data` carries our message id; Meta echoes it in the status
 *   webhooks, so a report finds its message even when the send's answer was lost.
 * - Meta has no idempotency key: a send whose answer never came may have been sent. It is never
 *   sent again (outcome unknown: the caller keeps the message as handed over and waits for the
 *   report); only answers that say nothing was sent (rate limits, 5xx) are retried.
 * - Errors come as `{error: {message, type, code, error_subcode?, fbtrace_id}}`; what to do is read
 *   from `code` (Meta says so), not the HTTP status.
 * - Webhook (`receiveWebhook`): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with
 *   the app secret>`; statuses sent|delivered|read|failed and replies to our messages.
 */
export interface WhatsAppSettings {
  graphUrl: string;
  version: string;
  phoneNumberId: string;
  accessToken: string;
  appSecret: string;
  /** Template names by purpose; a purpose without one cannot be sent (WhatsApp allows only templates outside a 24-hour reply window). */
  templates: Partial<Record<WhatsAppPurpose, string>>;
  language: string;
  timeoutMs: number;
}

export const WHATSAPP_PURPOSES = ['payment_link', 'reminder', 'receipt', 'login_code'] as const;
export type WhatsAppPurpose = (typeof WHATSAPP_PURPOSES)[number];

/** Codes Meta answers when nothing was sent and a later try may work (throughput, pair rate, transient). */
const RETRYABLE_CODES = new Set([1, 2, 4, 80007, 130429, 131000, 131016, 131056, 133004]);

export class WhatsAppMessaging implements MessagingPort {
  readonly provider = 'whatsapp' as const;
  private listeners = new StatusListeners();

  constructor(private settings: WhatsAppSettings) {}

  async send(message: OutboundMessage): Promise<SendResult> {
    validateOutbound(message);
    const purpose = message.purpose;
    const template = purpose ? this.settings.templates[purpose] : undefined;
    if (!purpose || !template) {
      throw new MessagingError('rejected', `no WhatsApp template is configured for ${purpose ?? 'this message'}`, false, false);
    }
    const params = (message.params ?? []).map((text) => ({ type: 'text', text: text === '' ? '-' : text }));
    const components: Record<string, unknown>[] = [{ type: 'body', parameters: params }];
    // An authentication template carries the code in its copy-code (URL) button too.
    if (purpose === 'login_code') components.push({ type: 'button', sub_type: 'url', index: '0', parameters: [params[0]] });
    const body = {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: message.to.replace(/^\+/, ''),
      type: 'template',
      template: { name: template, language: { code: this.settings.language }, components },
      biz_opaque_callback_data: message.reference,
    };
    const url = `${this.settings.graphUrl.replace(/\/$/, '')}/${this.settings.version}/${encodeURIComponent(this.settings.phoneNumberId)}/messages`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.settings.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (error) {
      // The request may have reached Meta: never sent again (no idempotency key there).
      throw new MessagingError('timeout', `no answer from WhatsApp: ${(error as Error).message}`, false, true);
    }
    let answer: { messages?: { id?: string }[]; error?: { code?: number; message?: string; error_subcode?: number } } = {};
    try {
      answer = (await res.json()) as typeof answer;
    } catch {
      if (res.ok) throw new MessagingError('provider_error', 'WhatsApp answered 200 without JSON: outcome unknown', false, true, res.status);
    }
    const id = answer.messages?.[0]?.id;
    if (res.ok && typeof id === 'string' && id) return { providerMessageId: id, status: 'queued' };
    const code = answer.error?.code;
    const text = `${answer.error?.message ?? `HTTP ${res.status}`}${code !== undefined ? ` (${code})` : ''}`;
    if (res.ok) throw new MessagingError('provider_error', `WhatsApp answered 200 without a message id: outcome unknown`, false, true, res.status);
    if ((code !== undefined && RETRYABLE_CODES.has(code)) || res.status >= 500 || res.status === 429) {
      throw new MessagingError('provider_error', text, true, false, res.status);
    }
    if (code === 190) throw new MessagingError('rejected', `the access token was refused: ${text}`, false, false, res.status);
    throw new MessagingError('rejected', text, false, false, res.status);
  }

  onStatus(listener: StatusListener): () => void {
    return this.listeners.add(listener);
  }

  /** The generic status callback is not WhatsApp's: its webhook has its own route (receiveWebhook). */
  async receiveStatus(): Promise<CallbackResult> {
    return { statusCode: 404, body: { error: 'WhatsApp reports to its own webhook (events_url)' } };
  }

  /** Whether `signature` (X-Hub-Signature-256) is the app secret's HMAC of exactly these bytes. */
  signatureValid(raw: Buffer, signature: string | undefined): boolean {
    if (typeof signature !== 'string' || !signature.startsWith('sha256=')) return false;
    const expected = Buffer.from(createHmac('sha256', this.settings.appSecret).update(raw).digest('hex'));
    const given = Buffer.from(signature.slice('sha256='.length).toLowerCase());
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /**
   * A signed webhook notification: each status of a message we sent, and each reply to one, goes to
   * the listeners. `read` counts as delivered; `sent` changes nothing (the send already said so).
   * Answers 401 when the signature does not hold (nothing read), 200 otherwise.
   */
  async receiveWebhook(raw: Buffer, signature: string | undefined): Promise<CallbackResult> {
    if (!this.signatureValid(raw, signature)) return { statusCode: 401, body: { error: 'invalid X-Hub-Signature-256' } };
    let payload: WebhookPayload;
    try {
      payload = JSON.parse(raw.toString('utf8')) as WebhookPayload;
    } catch {
      return { statusCode: 400, body: { error: 'not JSON' } };
    }
    for (const entry of Array.isArray(payload?.entry) ? payload.entry : []) {
      for (const change of Array.isArray(entry?.changes) ? entry.changes : []) {
        const value = change?.value;
        if (change?.field !== 'messages' || !value) continue;
        if (value.metadata?.phone_number_id && value.metadata.phone_number_id !== this.settings.phoneNumberId) continue;
        for (const s of Array.isArray(value.statuses) ? value.statuses : []) {
          const status: MessageStatus | null =
            s.status === 'delivered' || s.status === 'read' ? 'delivered' : s.status === 'failed' ? 'failed' : null;
          if (!status || typeof s.id !== 'string') continue;
          const error = Array.isArray(s.errors) ? s.errors[0] : undefined;
          await this.listeners.dispatch(s.id, status, {
            reference: typeof s.biz_opaque_callback_data === 'string' ? s.biz_opaque_callback_data : undefined,
            to: typeof s.recipient_id === 'string' ? `+${s.recipient_id}` : undefined,
            at: unixTime(s.timestamp),
            ...(status === 'failed' ? { reason: error ? `${error.title ?? error.message ?? 'failed'} (${error.code})` : 'failed' } : {}),
          });
        }
        for (const m of Array.isArray(value.messages) ? value.messages : []) {
          const repliedTo = m?.context?.id;
          const text = m?.text?.body ?? m?.button?.text ?? m?.interactive?.button_reply?.title;
          if (typeof repliedTo !== 'string' || typeof text !== 'string') continue;
          await this.listeners.dispatch(repliedTo, 'replied', {
            reference: undefined,
            to: typeof m.from === 'string' ? `+${m.from}` : undefined,
            at: unixTime(m.timestamp),
            replyText: text.slice(0, 1000),
          });
        }
      }
    }
    return { statusCode: 200, body: { ok: true } };
  }

  async close(): Promise<void> {
    await this.listeners.drain();
  }
}

function unixTime(value: unknown): Date {
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date();
}

interface WebhookPayload {
  object?: string;
  entry?: {
    changes?: {
      field?: string;
      value?: {
        metadata?: { phone_number_id?: string };
        statuses?: {
          id?: string;
          status?: string;
          timestamp?: string;
          recipient_id?: string;
          biz_opaque_callback_data?: string;
          errors?: { code?: number; title?: string; message?: string }[];
        }[];
        messages?: {
          from?: string;
          id?: string;
          timestamp?: string;
          context?: { id?: string };
          text?: { body?: string };
          button?: { text?: string };
          interactive?: { button_reply?: { title?: string } };
        }[];
      };
    }[];
  }[];
}
