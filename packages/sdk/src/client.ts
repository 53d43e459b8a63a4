import createClient, { type Client } from 'openapi-fetch';
import { RecaudoError } from './errors.ts';
import { send, systemClock, type CallOptions, type CallRecord, type Clock, type TransportOptions } from './transport.ts';
import type { ClientPaths, HttpMethod, PathParams, PathsWith, QueryParams, RequestBody, ResponseBody, paths } from './types.ts';

export interface RecaudoOptions {
  /** A secret key, `sk_test_…` or `sk_live_…` (the prefix selects the environment). */
  apiKey: string;
  /** Where the API runs, without `/v1`: `https://api.example.com`, `http://localhost:3000`. */
  baseUrl: string;
  /** Milliseconds one attempt may take before it is abandoned (and retried when that is safe). Default 30 000. */
  timeout?: number;
  /** Retries after the first attempt, on network errors, 408, 429 and 5xx when safe (README "Retries"). Default 2. */
  maxRetries?: number;
  /** A fetch implementation (undici's, a mock, one with a proxy agent). Default: the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Time source and sleep of the retry policy. For tests; the default is the system clock. */
  clock?: Clock;
  /** Jitter source in [0, 1). For tests; the default is Math.random. */
  random?: () => number;
}

/** Options of one call. */
export interface RequestOptions extends CallOptions {
  /** Aborts the call (and any wait between its attempts). */
  signal?: AbortSignal;
  /** Extra headers (`x-request-id` to correlate with the API's logs…). */
  headers?: Record<string, string>;
}

/** What `request` takes besides the method and path: `params.path`, `params.query`, `body`, and the call options. */
export type RequestInit<P extends keyof paths, M extends HttpMethod> = RequestOptions & {
  params?: { path?: PathParams<P, M>; query?: QueryParams<P, M> };
  body?: RequestBody<P, M>;
};

type ListItem<P extends keyof paths> = ResponseBody<P, 'get'> extends { data: (infer I)[] } ? I : never;

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 2;

/**
 * A client of the Recaudo API. Every call sends the key, an `x-idempotency` value on the POSTs that
 * need one (a fresh UUID unless `idempotencyKey` is given), and retries what is safe to retry.
 * Errors are thrown: `RecaudoError` for an error answer, `RecaudoConnectionError` for no answer.
 *
 * Three levels, all typed from the API's OpenAPI document:
 * - resource helpers for the main flows (`customers`, `cards`, `charges`, `payments`, `invoices`,
 *   `webhooks`, `events`);
 * - `request(method, path, init)` for any operation, answering the success body or throwing;
 * - `api`, the underlying openapi-fetch client (`api.GET('/v1/charges/{id}', …)`), which answers
 *   `{ data, error, response }` without throwing for error answers (headers such as
 *   `idempotent-replayed` are on `response`).
 */
export class Recaudo {
  /** The openapi-fetch client, with the same key, idempotency and retries. */
  readonly api: Client<ClientPaths>;
  private readonly transport: TransportOptions;

  constructor(options: RecaudoOptions) {
    if (!options || typeof options.apiKey !== 'string' || options.apiKey.trim() === '') throw new TypeError('Recaudo: apiKey is required');
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError('Recaudo: baseUrl is required (http:// or https://, without /v1)');
    }
    const baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.transport = {
      apiKey: options.apiKey.trim(),
      baseUrl,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
      timeout: options.timeout ?? DEFAULT_TIMEOUT_MS,
      maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      clock: options.clock ?? systemClock,
      random: options.random ?? Math.random,
    };
    const record: CallRecord = { idempotencyKey: null, attempts: 0 };
    this.api = createClient<ClientPaths>({ baseUrl, fetch: (input: Request) => send(this.transport, input, {}, record) });
  }

  /**
   * Calls any operation of the API and answers its success body; throws `RecaudoError` on an error
   * answer and `RecaudoConnectionError` when no answer came.
   *
   *     const charge = await recaudo.request('get', '/v1/charges/{id}', { params: { path: { id } } });
   */
  async request<M extends HttpMethod, P extends PathsWith<M>>(method: M, path: P, init: RequestInit<P, M> = {}): Promise<ResponseBody<P, M>> {
    const { params, body, signal, headers, ...call } = init;
    const pathParams = (params?.path ?? {}) as Record<string, unknown>;
    const missing = [...String(path).matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!).filter((name) => pathParams[name] === undefined);
    if (missing.length) throw new TypeError(`${method.toUpperCase()} ${String(path)}: params.path.${missing[0]} is required`);
    const record: CallRecord = { idempotencyKey: null, attempts: 0 };
    const requester = this.api.request as unknown as (
      m: string,
      p: string,
      i: Record<string, unknown>,
    ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const result = await requester(method, path as string, {
      params: { path: params?.path, query: params?.query },
      body,
      signal,
      headers,
      fetch: (input: Request) => send(this.transport, input, call, record),
    });
    if (!result.response.ok) {
      throw new RecaudoError({
        status: result.response.status,
        body: result.error,
        headers: result.response.headers,
        idempotencyKey: record.idempotencyKey,
        attempts: record.attempts,
        method: method.toUpperCase(),
        path: String(path).replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(String(pathParams[name]))),
      });
    }
    return result.data as ResponseBody<P, M>;
  }

  /**
   * Every item of a list, page after page (`per_page` 100 unless given), as an async iterator.
   *
   *     for await (const charge of recaudo.paginate('/v1/charges', { query: { 'filter[status]': 'paid' } })) …
   */
  async *paginate<P extends PathsWith<'get'>>(
    path: P,
    init: RequestOptions & { params?: { path?: PathParams<P, 'get'> }; query?: QueryParams<P, 'get'> } = {},
  ): AsyncGenerator<ListItem<P>, void, undefined> {
    const { query, params, ...rest } = init;
    // Follows next_page_url (a keyset cursor: the same cost at any depth, and right past the
    // count cap, where total and last_page are null) with the query it carries.
    let q = { per_page: '100', ...(query as object) } as Record<string, string>;
    for (;;) {
      const res = (await this.request('get', path, {
        ...rest,
        params: { path: params?.path, query: q as unknown as QueryParams<P, 'get'> },
      })) as { data?: ListItem<P>[]; next_page_url?: string | null };
      for (const item of res.data ?? []) yield item;
      if (!res.data?.length || !res.next_page_url) return;
      q = Object.fromEntries(new URL(res.next_page_url, 'http://localhost').searchParams);
    }
  }

  readonly customers = {
    create: (body: RequestBody<'/v1/customers', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/customers', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/customers/{id}', { ...opts, params: { path: { id } } }),
    update: (id: string, body: RequestBody<'/v1/customers/{id}', 'put'>, opts?: RequestOptions) =>
      this.request('put', '/v1/customers/{id}', { ...opts, params: { path: { id } }, body }),
    list: (query?: QueryParams<'/v1/customers', 'get'>, opts?: RequestOptions) =>
      this.request('get', '/v1/customers', { ...opts, params: { query } }),
    delete: (id: string, opts?: RequestOptions) => this.request('delete', '/v1/customers/{id}', { ...opts, params: { path: { id } } }),
  };

  readonly cards = {
    /** Saves a card for a customer (test numbers: docs/testing.md). The number and the code are never stored. */
    create: (body: RequestBody<'/v1/cards', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/cards', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/cards/{id}', { ...opts, params: { path: { id } } }),
    list: (query?: QueryParams<'/v1/cards', 'get'>, opts?: RequestOptions) => this.request('get', '/v1/cards', { ...opts, params: { query } }),
    delete: (id: string, opts?: RequestOptions) => this.request('delete', '/v1/cards/{id}', { ...opts, params: { path: { id } } }),
  };

  readonly charges = {
    /** Charges a saved card or account. A bank's refusal is not an error: the charge answers `failed`. */
    create: (body: RequestBody<'/v1/charges', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/charges', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/charges/{id}', { ...opts, params: { path: { id } } }),
    list: (query?: QueryParams<'/v1/charges', 'get'>, opts?: RequestOptions) => this.request('get', '/v1/charges', { ...opts, params: { query } }),
    /** Refunds a paid charge, whole (`POST /v1/charges/{id}/refund`); answers the charge, `refunded`. */
    refund: (id: string, body: RequestBody<'/v1/charges/{id}/refund', 'post'> = {}, opts?: RequestOptions) =>
      this.request('post', '/v1/charges/{id}/refund', { ...opts, params: { path: { id } }, body }),
    cancel: (id: string, opts?: RequestOptions) => this.request('post', '/v1/charges/{id}/cancel', { ...opts, params: { path: { id } }, body: {} }),
  };

  readonly payments = {
    create: (body: RequestBody<'/v1/payments', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/payments', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/payments/{id}', { ...opts, params: { path: { id } } }),
    list: (query?: QueryParams<'/v1/payments', 'get'>, opts?: RequestOptions) => this.request('get', '/v1/payments', { ...opts, params: { query } }),
    update: (id: string, body: RequestBody<'/v1/payments/{id}', 'put'>, opts?: RequestOptions) =>
      this.request('put', '/v1/payments/{id}', { ...opts, params: { path: { id } }, body }),
    /** Cancels an unpaid payment (`DELETE /v1/payments/{id}`). */
    cancel: (id: string, body: RequestBody<'/v1/payments/{id}', 'delete'> = {}, opts?: RequestOptions) =>
      this.request('delete', '/v1/payments/{id}', { ...opts, params: { path: { id } }, body }),
    /** Refunds an approved payment (`POST /v1/payments/{id}/refund`). */
    refund: (id: string, opts?: RequestOptions) => this.request('post', '/v1/payments/{id}/refund', { ...opts, params: { path: { id } } }),
  };

  readonly invoices = {
    create: (body: RequestBody<'/v1/invoices', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/invoices', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/invoices/{id}', { ...opts, params: { path: { id } } }),
    list: (query?: QueryParams<'/v1/invoices', 'get'>, opts?: RequestOptions) => this.request('get', '/v1/invoices', { ...opts, params: { query } }),
  };

  readonly webhooks = {
    /** Answers the webhook with its `secret` (shown only here) and `header` token: keep both for `verifyWebhook`. */
    create: (body: RequestBody<'/v1/webhooks', 'post'>, opts?: RequestOptions) => this.request('post', '/v1/webhooks', { ...opts, body }),
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/webhooks/{id}', { ...opts, params: { path: { id } } }),
    list: (opts?: RequestOptions) => this.request('get', '/v1/webhooks', { ...opts }),
    update: (id: string, body: RequestBody<'/v1/webhooks/{id}', 'put'>, opts?: RequestOptions) =>
      this.request('put', '/v1/webhooks/{id}', { ...opts, params: { path: { id } }, body }),
    delete: (id: string, opts?: RequestOptions) => this.request('delete', '/v1/webhooks/{id}', { ...opts, params: { path: { id } } }),
    deliveries: (id: string, query?: QueryParams<'/v1/webhooks/{id}/deliveries', 'get'>, opts?: RequestOptions) =>
      this.request('get', '/v1/webhooks/{id}/deliveries', { ...opts, params: { path: { id }, query } }),
    retryDelivery: (id: string, deliveryId: string, opts?: RequestOptions) =>
      this.request('post', '/v1/webhooks/{id}/deliveries/{delivery_id}/retry', { ...opts, params: { path: { id, delivery_id: deliveryId } } }),
  };

  readonly events = {
    retrieve: (id: string, opts?: RequestOptions) => this.request('get', '/v1/events/{id}', { ...opts, params: { path: { id } } }),
    list: (query?: QueryParams<'/v1/events', 'get'>, opts?: RequestOptions) => this.request('get', '/v1/events', { ...opts, params: { query } }),
  };
}
