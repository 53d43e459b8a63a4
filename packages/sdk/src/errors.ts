/** Field name (or dotted path, for invoicing errors) → messages, as the API's `errors` carries them. */
export type FieldErrors = Record<string, string[]>;

/**
 * The API answered with an error status (4xx, 5xx). Fields follow the error envelope of the API
 * reference (SPEC "Errors"): `{ message, code, code_name, errors? }`. Some errors carry no `code` or
 * `code_name` (a 429, a 400 for an unknown filter): those are `null` here. Other fields the body
 * carries (a duplicate banklink's `previous_payment_id`…) are in `body`.
 */
export class RecaudoError extends Error {
  /** HTTP status of the answer. */
  readonly status: number;
  /** Numeric code (`10001`), a string code for invoicing errors (`customer_not_invoiceable`), or null. */
  readonly code: number | string | null;
  /** Symbolic name (`validation_error`, `charge_refunded`…); two errors may share a `code` (15004), never a `code_name`. */
  readonly code_name: string | null;
  /** Messages per field, on validation errors; null when the body has none. */
  readonly errors: FieldErrors | null;
  /** The parsed body as the API sent it (or its text when it was not JSON). */
  readonly body: unknown;
  /** The `x-request-id` of the answer: quote it when asking for support. */
  readonly requestId: string | null;
  /** The `x-idempotency` value the request carried (POSTs), so it can be retried with the same value. */
  readonly idempotencyKey: string | null;
  /** Attempts made (1 when the first answer was final). */
  readonly attempts: number;
  /** Seconds from `Retry-After`, when the answer had one (429, 503). */
  readonly retryAfter: number | null;

  constructor(init: {
    status: number;
    body: unknown;
    headers?: Headers;
    idempotencyKey?: string | null;
    attempts?: number;
    method?: string;
    path?: string;
  }) {
    const body = init.body;
    const obj = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
    const message = typeof obj.message === 'string' ? obj.message : typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${init.status}`;
    super(init.method && init.path ? `${message} (${init.method} ${init.path} → ${init.status})` : message);
    this.name = 'RecaudoError';
    this.status = init.status;
    this.code = typeof obj.code === 'number' || typeof obj.code === 'string' ? obj.code : null;
    this.code_name = typeof obj.code_name === 'string' ? obj.code_name : null;
    this.errors = isFieldErrors(obj.errors) ? obj.errors : null;
    this.body = body;
    this.requestId = init.headers?.get('x-request-id') ?? null;
    this.idempotencyKey = init.idempotencyKey ?? null;
    this.attempts = init.attempts ?? 1;
    const retryAfterMs = init.headers ? parseRetryAfter(init.headers.get('retry-after'), Date.now()) : null;
    this.retryAfter = retryAfterMs === null ? null : Math.ceil(retryAfterMs / 1000);
  }
}

/**
 * No answer: the connection failed, or an attempt outlived `timeout`, on every attempt the retry
 * policy allowed. For a POST the outcome is unknown: repeat it with the same `idempotencyKey`
 * within 60 seconds of the first attempt (the API then answers the first result and never runs it
 * twice), or look the resource up (for a charge: `GET /v1/charges?filter[external_id]=…`).
 */
export class RecaudoConnectionError extends Error {
  readonly idempotencyKey: string | null;
  readonly attempts: number;
  /** True when the last attempt was cut by the client's `timeout` rather than failing to connect. */
  readonly timedOut: boolean;

  constructor(init: { cause: unknown; idempotencyKey: string | null; attempts: number; timedOut: boolean; method: string; path: string }) {
    const reason = init.timedOut ? 'timed out' : describeCause(init.cause);
    super(`${init.method} ${init.path}: no answer from the Recaudo API after ${init.attempts} attempt(s): ${reason}`, { cause: init.cause });
    this.name = 'RecaudoConnectionError';
    this.idempotencyKey = init.idempotencyKey;
    this.attempts = init.attempts;
    this.timedOut = init.timedOut;
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const inner = (cause as { cause?: unknown }).cause;
  const code = inner && typeof inner === 'object' && 'code' in inner ? String((inner as { code: unknown }).code) : undefined;
  return code ? `${cause.message} (${code})` : cause.message;
}

function isFieldErrors(value: unknown): value is FieldErrors {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every((v) => Array.isArray(v) && v.every((m) => typeof m === 'string'));
}

/**
 * `Retry-After` as milliseconds from `nowMs`: delay-seconds (`1`, `30`) or an HTTP date. Null when
 * absent or unreadable; never negative.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}
