// One request to the API, with what every call needs: the key, an `x-idempotency` value on the
// POSTs that require one, a timeout per attempt, and retries that are safe by the API's rules
// (SPEC "Idempotency rules", docs/platform.md):
//
// - A repeat of a POST with the same `x-idempotency` value within 60 s of its successful answer
//   returns that answer without running it again; an error answer is not remembered, so the same
//   value may be retried; a request still running makes the repeat wait for its result. So a keyed
//   POST is retried with the SAME value, and only while the retry still starts inside the window:
//   no attempt starts later than POST_RETRY_DEADLINE_MS after the first one began (the first
//   answer, if it was a lost success, was produced after that start, so its window covers the retry).
// - GET, HEAD and PUT are repeatable as they are.
// - DELETE and the POSTs the API takes without a key run again on a repeat: they are retried only
//   when the request was certainly not served (429, 408, a refused connection).
import { randomUUID } from 'node:crypto';
import { RecaudoConnectionError, parseRetryAfter } from './errors.ts';

export const SDK_VERSION = '0.1.0';

/** SPEC: "Idempotency window: 1 minute after a successful response". */
export const REPLAY_WINDOW_MS = 60_000;
/** The last moment (from the first attempt's start) a POST retry may start: the window less 5 s for transit. */
export const POST_RETRY_DEADLINE_MS = 55_000;

const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;
/** A `Retry-After` longer than this is not waited for (the error is returned instead). */
const MAX_RETRY_AFTER_MS = 60_000;

/** POSTs the API takes without `x-idempotency` (SPEC names the first two; the others are the API's own). */
const POSTS_WITHOUT_KEY: RegExp[] = [
  /^\/v1\/flows$/,
  /^\/v1\/request-to-pay\/walleta\/[^/]+\/confirm$/,
  /^\/v1\/companies\/[^/]+\/keys$/,
  /^\/v1\/rails\/wompi\/events(\/[^/]+)?$/,
  /^\/v1\/rails\/wompi\/payout-events(\/[^/]+)?$/,
  /^\/v1\/rails\/messaging\/status$/,
];

/** Whether the API requires `x-idempotency` on this request (`path` relative to the base URL, e.g. `/v1/charges`). */
export function needsIdempotencyKey(method: string, path: string): boolean {
  if (method.toUpperCase() !== 'POST') return false;
  const pathname = path.split('?')[0]!.replace(/\/+$/, '');
  return !POSTS_WITHOUT_KEY.some((re) => re.test(pathname));
}

/** Time, for the retry policy; injectable so tests cross 60 s without waiting. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export interface TransportOptions {
  apiKey: string;
  /** The API's base URL without `/v1` (`https://api.example.com`). */
  baseUrl: string;
  fetch: typeof globalThis.fetch;
  /** Milliseconds one attempt may take (connect, send, the whole answer's headers). */
  timeout: number;
  /** Retries after the first attempt (0: none). */
  maxRetries: number;
  clock: Clock;
  /** [0, 1), for the backoff's jitter. */
  random: () => number;
}

/** Per-call overrides. */
export interface CallOptions {
  /** The `x-idempotency` value; a fresh UUID when absent (on POSTs that need one). */
  idempotencyKey?: string;
  timeout?: number;
  maxRetries?: number;
}

/** What happened, filled in by `send` for the caller's error messages. */
export interface CallRecord {
  idempotencyKey: string | null;
  attempts: number;
}

const REPEATABLE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'OPTIONS']);
const RETRY_STATUS_ANY = new Set([408, 429]); // refused before it ran
const RETRY_STATUS_REPEATABLE = new Set([500, 502, 503, 504]);

function isValidKey(key: string): boolean {
  return key.length >= 1 && key.length <= 255 && /^[\x20-\x7e]+$/.test(key);
}

function connectionRefused(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return cause?.code === 'ECONNREFUSED';
}

/** Path of `url` relative to the base URL's path (a base URL may carry a prefix such as `/recaudo`). */
function relativePath(url: URL, base: URL): string {
  const prefix = base.pathname.replace(/\/+$/, '');
  return prefix && url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) || '/' : url.pathname;
}

export async function send(opts: TransportOptions, request: Request, call: CallOptions, record: CallRecord): Promise<Response> {
  const method = request.method.toUpperCase();
  const url = new URL(request.url);
  const path = relativePath(url, new URL(opts.baseUrl));
  const headers = new Headers(request.headers);
  headers.set('authorization', `Bearer ${opts.apiKey}`);
  if (!headers.has('user-agent')) headers.set('user-agent', `recaudo-node/${SDK_VERSION}`);

  let key: string | null = null;
  const keyed = needsIdempotencyKey(method, path);
  if (method === 'POST') {
    key = call.idempotencyKey ?? headers.get('x-idempotency') ?? headers.get('idempotency-key');
    if (key === null && keyed) key = randomUUID();
    if (key !== null) {
      if (!isValidKey(key)) throw new TypeError('idempotencyKey must be 1 to 255 printable ASCII characters');
      headers.delete('idempotency-key');
      headers.set('x-idempotency', key);
    }
  }
  record.idempotencyKey = key;

  const body = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
  const repeatable = REPEATABLE_METHODS.has(method) || (method === 'POST' && keyed && key !== null);
  const maxRetries = Math.max(0, call.maxRetries ?? opts.maxRetries);
  const timeout = call.timeout ?? opts.timeout;
  const userSignal = request.signal;
  const firstStart = opts.clock.now();

  for (let attempt = 1; ; attempt++) {
    record.attempts = attempt;
    const attemptController = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      attemptController.abort(new Error(`attempt timed out after ${timeout} ms`));
    }, timeout);
    const onUserAbort = () => attemptController.abort(userSignal.reason);
    if (userSignal.aborted) onUserAbort();
    else userSignal.addEventListener('abort', onUserAbort, { once: true });

    let response: Response | undefined;
    let failure: unknown;
    try {
      response = await opts.fetch(url.toString(), { method, headers, body, signal: attemptController.signal, redirect: request.redirect });
    } catch (error) {
      failure = error;
    } finally {
      clearTimeout(timer);
      userSignal.removeEventListener('abort', onUserAbort);
    }
    if (userSignal.aborted) throw userSignal.reason;

    let retryAllowed: boolean;
    let waitMs: number | null = null;
    if (response) {
      retryAllowed = RETRY_STATUS_ANY.has(response.status) || (repeatable && RETRY_STATUS_REPEATABLE.has(response.status));
      if (retryAllowed) waitMs = parseRetryAfter(response.headers.get('retry-after'), opts.clock.now());
    } else {
      retryAllowed = repeatable || connectionRefused(failure);
    }

    let delay = waitMs ?? backoff(attempt, opts.random);
    if (retryAllowed && waitMs !== null && waitMs > MAX_RETRY_AFTER_MS) retryAllowed = false;
    // A POST retry must start inside the replay window of the first attempt (see the top of the file).
    if (retryAllowed && method === 'POST' && opts.clock.now() + delay - firstStart > POST_RETRY_DEADLINE_MS) {
      // Waiting for the full Retry-After would leave the window; backoff (no Retry-After) may be shortened to fit.
      const left = firstStart + POST_RETRY_DEADLINE_MS - opts.clock.now();
      if (waitMs === null && left > 0) delay = left;
      else retryAllowed = false;
    }

    if (!retryAllowed || attempt > maxRetries) {
      if (response) return response;
      throw new RecaudoConnectionError({ cause: failure, idempotencyKey: key, attempts: attempt, timedOut, method, path });
    }
    // Free the connection of an answer we will not read (not awaited: a tee'd body's cancel waits for its twin).
    response?.body?.cancel().catch(() => {});
    await opts.clock.sleep(delay, userSignal);
  }
}

/** Exponential backoff with jitter: 0.5 s, 1 s, 2 s … capped at 10 s, each between half and all of it. */
function backoff(attempt: number, random: () => number): number {
  const full = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return Math.round(full * (0.5 + random() * 0.5));
}
