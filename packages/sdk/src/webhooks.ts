// Verifying a webhook delivery on the receiving side (SPEC "Events", docs/webhooks.md).
//
// A delivery is a POST whose body is `{id, event, created_at, is_test, data}` (compact JSON, the same
// bytes on every attempt), with the headers:
//   Signature        hex HMAC-SHA256 of the raw body bytes, keyed with the webhook's `secret`
//   x-webhook-token  the webhook's static `header` token
//   x-webhook-id     the event id (deduplicate on it)
//   x-webhook-event  the event type
// Only the body is signed, so the unsigned headers are checked against it: `x-webhook-id` must be the
// body's `id` and `x-webhook-event` its `event`. The body's `created_at` (signed) bounds how old a
// delivery may be. Everything fails closed: no credentials, a missing or repeated header, a wrong
// signature or token, a body that is not a standard event — all refused.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RequestBody } from './types.ts';

/** Every event type the API can send (the `events` a webhook subscribes to). */
export type WebhookEventType = NonNullable<RequestBody<'/v1/webhooks', 'post'>>['events'][number];

/** A verified delivery's body. `data` is the resource as the API returns it. */
export interface WebhookEvent<T = Record<string, unknown>> {
  id: string;
  event: WebhookEventType;
  created_at: string;
  is_test: boolean;
  data: T;
}

/** Node's `req.headers`, a fetch `Headers`, or any object of header names (any case) to values. */
export type WebhookHeaders = Headers | { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** The webhook's `secret` (`wh_tok_…`, shown once by `POST /v1/webhooks`): checks `Signature` over the body. */
  secret?: string;
  /**
   * The webhook's `header` token: checks `x-webhook-token`. Alone it proves only that the sender
   * knows the token, not that the body is ours: prefer `secret` (or both).
   */
  token?: string;
  /**
   * How old (seconds, from the signed `created_at`) a delivery may be. Default 345 600 (4 days): the
   * API retries a failed delivery for about 3 days (WEBHOOK_RETRY_SCHEDULE, up to 72 h + 10 %), so
   * every automatic attempt passes. A manual resend of an older event, or a longer schedule, needs a
   * larger value. `false` turns the check off. Keep the ids you processed at least this long:
   * deduplicating on `id` within the tolerance is what refuses a replayed delivery.
   */
  tolerance?: number | false;
  /** The time to judge `created_at` against (tests). Default: now. */
  now?: Date | number;
}

/** Why a delivery was refused. */
export type WebhookVerificationReason =
  | 'no_credentials'
  | 'missing_header'
  | 'duplicate_header'
  | 'bad_signature'
  | 'bad_token'
  | 'malformed_body'
  | 'unsupported_format'
  | 'id_mismatch'
  | 'event_mismatch'
  | 'timestamp_out_of_tolerance';

export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 4 * 24 * 60 * 60;
/** How far in the future `created_at` may be (the sender's clock against the receiver's). */
const FUTURE_SKEW_MS = 5 * 60 * 1000;

/**
 * Checks one delivery and answers its event; throws `WebhookVerificationError` (with a `reason`)
 * when anything is off. Pass the raw body bytes exactly as received (never a parsed and
 * re-serialised object) and at least one of `secret` or `token`.
 *
 *     app.post('/recaudo/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
 *       let event;
 *       try {
 *         event = verifyWebhook(req.body, req.headers, { secret: process.env.RECAUDO_WEBHOOK_SECRET });
 *       } catch {
 *         return res.sendStatus(400);
 *       }
 *       …
 *     });
 */
export function verifyWebhook<T = Record<string, unknown>>(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  options: VerifyWebhookOptions,
): WebhookEvent<T> {
  const secret = typeof options?.secret === 'string' && options.secret !== '' ? options.secret : undefined;
  const token = typeof options?.token === 'string' && options.token !== '' ? options.token : undefined;
  if (secret === undefined && token === undefined) {
    throw new WebhookVerificationError(
      'no_credentials',
      'verifyWebhook needs the webhook secret (or its header token); refusing to accept an unverified delivery',
    );
  }
  if (rawBody === undefined || rawBody === null) throw new WebhookVerificationError('malformed_body', 'the raw body is required');
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array) && !(rawBody instanceof ArrayBuffer)) {
    throw new WebhookVerificationError('malformed_body', 'pass the raw body (string, Buffer or Uint8Array), not a parsed object');
  }
  const bytes =
    typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody instanceof ArrayBuffer ? new Uint8Array(rawBody) : rawBody);

  const webhookId = requiredHeader(headers, 'x-webhook-id');
  const eventType = requiredHeader(headers, 'x-webhook-event');

  if (secret !== undefined) {
    const signature = requiredHeader(headers, 'signature');
    const expected = createHmac('sha256', secret).update(bytes).digest();
    // Hex of a SHA-256: exactly 64 hex digits; anything else cannot match and is refused before comparing.
    const given = /^[0-9a-fA-F]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : null;
    if (given === null || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new WebhookVerificationError('bad_signature', 'the Signature header does not match the body');
    }
  }
  if (token !== undefined) {
    const given = Buffer.from(requiredHeader(headers, 'x-webhook-token'), 'utf8');
    const expected = Buffer.from(token, 'utf8');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new WebhookVerificationError('bad_token', 'the x-webhook-token header does not match');
    }
  }

  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'the body is not JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new WebhookVerificationError('malformed_body', 'the body is not an object');
  const event = body as Record<string, unknown>;
  if (event.event !== null && typeof event.event === 'object') {
    throw new WebhookVerificationError(
      'unsupported_format',
      'a legacy-format body carries no signed event id; use payload_format "standard" for this webhook (PUT /v1/webhooks/{id})',
    );
  }
  if (typeof event.id !== 'string' || typeof event.event !== 'string' || typeof event.created_at !== 'string' || !('data' in event)) {
    throw new WebhookVerificationError('malformed_body', 'the body is not a Recaudo event ({id, event, created_at, is_test, data})');
  }
  if (event.id !== webhookId) throw new WebhookVerificationError('id_mismatch', 'x-webhook-id is not the id of the signed body');
  if (event.event !== eventType) throw new WebhookVerificationError('event_mismatch', 'x-webhook-event is not the event of the signed body');

  const tolerance = options.tolerance === undefined ? DEFAULT_WEBHOOK_TOLERANCE_SECONDS : options.tolerance;
  if (tolerance !== false) {
    const createdAt = Date.parse(event.created_at);
    const now = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
    if (Number.isNaN(createdAt)) throw new WebhookVerificationError('malformed_body', 'created_at is not a timestamp');
    if (now - createdAt > tolerance * 1000 || createdAt - now > FUTURE_SKEW_MS) {
      throw new WebhookVerificationError(
        'timestamp_out_of_tolerance',
        `the event was created at ${event.created_at}, outside the tolerance of ${tolerance} s`,
      );
    }
  }
  return event as unknown as WebhookEvent<T>;
}

/** The one value of a header; absent, empty or repeated is refused. */
function requiredHeader(headers: WebhookHeaders, name: string): string {
  const values = headerValues(headers, name);
  if (values.length === 0 || values[0] === '') throw new WebhookVerificationError('missing_header', `the ${name} header is missing`);
  if (values.length > 1) throw new WebhookVerificationError('duplicate_header', `the ${name} header is repeated`);
  return values[0]!;
}

function headerValues(headers: WebhookHeaders, name: string): string[] {
  if (headers === null || typeof headers !== 'object') return [];
  // fetch Headers joins repeated values with ", ": such a value cannot match a signature, token or id.
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as { get(name: string): string | null }).get(name);
    return value === null ? [] : [value];
  }
  const out: string[] = [];
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    if (Array.isArray(value)) out.push(...value.map(String));
    else out.push(String(value));
  }
  return out;
}
