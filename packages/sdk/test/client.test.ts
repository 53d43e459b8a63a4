import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Recaudo, RecaudoConnectionError, RecaudoError, needsIdempotencyKey, type Clock } from '../src/index.ts';

/** Time that moves only when told (a sleep moves it by its length): retries cross 60 s at once. */
class FakeClock implements Clock {
  t = 1_000_000;
  readonly sleeps: number[] = [];
  now(): number {
    return this.t;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.t += ms;
  }
}

interface Call {
  url: string;
  method: string;
  headers: Headers;
  body: string | null;
  at: number;
}

type Answer = Response | Error | ((call: Call, signal: AbortSignal) => Promise<Response> | Response);

/** A fetch that answers from a script, one entry per attempt, and records every attempt. */
function scripted(clock: FakeClock, answers: Answer[]) {
  const calls: Call[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const call: Call = {
      url: String(input),
      method: init.method ?? 'GET',
      headers: new Headers(init.headers),
      body: init.body ? Buffer.from(init.body as Uint8Array).toString('utf8') : null,
      at: clock.now(),
    };
    calls.push(call);
    const answer = answers[calls.length - 1] ?? answers[answers.length - 1];
    if (answer instanceof Error) throw answer;
    if (typeof answer === 'function') return answer(call, init.signal!);
    return answer.clone();
  };
  return { fetch: fetch as typeof globalThis.fetch, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const networkError = () => new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
const refusedError = () => new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
const charge = { id: 'ch_1', status: 'paid', amount: 150000 };
const chargeBody = { amount: 150000, title: 'Cuota de octubre', customer_id: '6f1c2f43-3b8e-4bd4-9d51-0c2a3f1a9e11', card_id: 'card_1' };

function client(answers: Answer[], opts: { maxRetries?: number; timeout?: number } = {}) {
  const clock = new FakeClock();
  const { fetch, calls } = scripted(clock, answers);
  const recaudo = new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://api.example.test/', fetch, clock, random: () => 0.5, ...opts });
  return { recaudo, calls, clock };
}

describe('Recaudo client: requests and idempotency', () => {
  test('sends the key, JSON and a fresh x-idempotency UUID on a POST; none on a GET', async () => {
    const { recaudo, calls } = client([json(200, charge), json(200, charge), json(200, charge)]);
    const created = await recaudo.charges.create(chargeBody);
    assert.equal(created.id, 'ch_1');
    await recaudo.charges.create(chargeBody);
    await recaudo.charges.retrieve('ch_1');
    assert.equal(calls[0]!.url, 'https://api.example.test/v1/charges');
    assert.equal(calls[0]!.method, 'POST');
    assert.equal(calls[0]!.headers.get('authorization'), 'Bearer sk_test_abc');
    assert.equal(calls[0]!.headers.get('content-type'), 'application/json');
    assert.deepEqual(JSON.parse(calls[0]!.body!), chargeBody);
    const key = calls[0]!.headers.get('x-idempotency')!;
    assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(calls[1]!.headers.get('x-idempotency'), key, 'each call gets its own value');
    assert.equal(calls[2]!.url, 'https://api.example.test/v1/charges/ch_1');
    assert.equal(calls[2]!.headers.get('x-idempotency'), null);
    assert.match(calls[0]!.headers.get('user-agent')!, /^recaudo-node\//);
  });

  test('uses the caller’s idempotencyKey (or an Idempotency-Key header) instead of generating one', async () => {
    const { recaudo, calls } = client([json(200, charge)]);
    await recaudo.charges.create(chargeBody, { idempotencyKey: 'order-1234-charge' });
    await recaudo.request('post', '/v1/charges', { body: chargeBody, headers: { 'Idempotency-Key': 'order-1234-b' } });
    assert.equal(calls[0]!.headers.get('x-idempotency'), 'order-1234-charge');
    assert.equal(calls[1]!.headers.get('x-idempotency'), 'order-1234-b');
    assert.equal(calls[1]!.headers.get('idempotency-key'), null, 'sent once, under one name');
    await assert.rejects(recaudo.charges.create(chargeBody, { idempotencyKey: 'ñ' }), /printable ASCII/);
    await assert.rejects(recaudo.charges.create(chargeBody, { idempotencyKey: 'x'.repeat(256) }), /1 to 255/);
  });

  test('the POSTs the API takes without a key get none (POST /v1/flows, walleta confirm)', async () => {
    assert.equal(needsIdempotencyKey('POST', '/v1/flows'), false);
    assert.equal(needsIdempotencyKey('POST', '/v1/request-to-pay/walleta/abc/confirm'), false);
    assert.equal(needsIdempotencyKey('POST', '/v1/request-to-pay/walletb/abc/confirm'), true);
    assert.equal(needsIdempotencyKey('POST', '/v1/charges'), true);
    assert.equal(needsIdempotencyKey('GET', '/v1/charges'), false);
    const { recaudo, calls } = client([json(200, { id: 'flow_1' })]);
    await recaudo.request('post', '/v1/flows', {
      body: { name: 'x', event: 'charge.paid', action: { type: 'call_url', url: 'https://example.com' } } as never,
    });
    assert.equal(calls[0]!.headers.get('x-idempotency'), null);
  });

  test('a base URL with a path prefix keeps it, and /v1 at its end is not doubled', async () => {
    const { fetch, calls } = scripted(new FakeClock(), [json(200, charge)]);
    await new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://gw.example.test/recaudo/v1', fetch }).charges.retrieve('ch_1');
    await new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://gw.example.test/recaudo', fetch }).charges.create(chargeBody);
    assert.equal(calls[0]!.url, 'https://gw.example.test/recaudo/v1/charges/ch_1');
    assert.ok(calls[1]!.headers.get('x-idempotency'), 'the prefix does not hide the route from the key rule');
  });

  test('path parameters are encoded; a missing one is refused before any request', async () => {
    const { recaudo, calls } = client([json(200, charge)]);
    await recaudo.charges.retrieve('ch_1/../x?y');
    assert.equal(calls[0]!.url, 'https://api.example.test/v1/charges/ch_1%2F..%2Fx%3Fy');
    await assert.rejects(recaudo.request('get', '/v1/charges/{id}', {} as never), /params\.path\.id is required/);
    assert.equal(calls.length, 1);
  });

  test('the constructor refuses a missing key or base URL', () => {
    assert.throws(() => new Recaudo({ apiKey: '', baseUrl: 'https://x.test' }), /apiKey/);
    assert.throws(() => new Recaudo({ apiKey: 'sk_test_a', baseUrl: 'x.test' }), /baseUrl/);
    assert.throws(() => new Recaudo(undefined as never), /apiKey/);
  });

  test('paginate follows next_page_url, past the count cap where total and last_page are null', async () => {
    const next = (cursor: string) => `http://api.test/v1/customers?per_page=100&filter%5Bemail%5D=a%40b.co&cursor=${cursor}&page=2`;
    const page = (n: number, nextUrl: string | null) =>
      json(200, {
        data: [{ id: `c${n}a` }, { id: `c${n}b` }],
        current_page: n,
        total: null,
        last_page: null,
        has_more: nextUrl !== null,
        next_page_url: nextUrl,
      });
    const { recaudo, calls } = client([page(1, next('k1')), page(2, next('k2')), page(3, null)]);
    const ids: string[] = [];
    for await (const c of recaudo.paginate('/v1/customers', { query: { 'filter[email]': 'a@b.co' } })) ids.push(c.id);
    assert.deepEqual(ids, ['c1a', 'c1b', 'c2a', 'c2b', 'c3a', 'c3b']);
    assert.equal(calls.length, 3);
    assert.equal(new URL(calls[0]!.url).searchParams.get('per_page'), '100');
    assert.equal(new URL(calls[2]!.url).searchParams.get('cursor'), 'k2');
    assert.equal(new URL(calls[2]!.url).searchParams.get('per_page'), '100');
    assert.equal(new URL(calls[2]!.url).searchParams.get('filter[email]'), 'a@b.co');
  });
});

describe('Recaudo client: typed errors', () => {
  test('a validation error: status, code, code_name, errors per field, request id, the key it carried', async () => {
    const body = {
      message: 'The request has invalid or missing fields.',
      code: 10001,
      code_name: 'validation_error',
      errors: { title: ['is too short'] },
    };
    const { recaudo, calls } = client([json(422, body, { 'x-request-id': 'req_42' })]);
    const error = await recaudo.charges.create({ ...chargeBody, title: 'x' }).catch((e: unknown) => e);
    assert.ok(error instanceof RecaudoError);
    assert.equal(error.status, 422);
    assert.equal(error.code, 10001);
    assert.equal(error.code_name, 'validation_error');
    assert.deepEqual(error.errors, { title: ['is too short'] });
    assert.equal(error.requestId, 'req_42');
    assert.equal(error.idempotencyKey, calls[0]!.headers.get('x-idempotency'));
    assert.equal(error.attempts, 1);
    assert.match(error.message, /invalid or missing fields.*POST \/v1\/charges → 422/);
    assert.equal(calls.length, 1, 'a 4xx other than 408/429 is final');
  });

  test('errors without a code, string codes, extra body fields and non-JSON bodies', async () => {
    const { recaudo } = client([
      json(400, { message: 'filter not allowed', errors: { 'filter[foo]': ['not a filter of this list'] } }),
      json(422, { message: 'missing receiver data', code: 'customer_not_invoiceable', errors: { 'customer.address': ['required'] } }),
      json(429, { message: 'duplicate', code: 15005, code_name: 'banklink_payment_duplicate', previous_payment_id: 'pay_1' }),
      new Response('<html>bad gateway</html>', { status: 404 }),
    ]);
    const a = (await recaudo.customers.list().catch((e: unknown) => e)) as RecaudoError;
    assert.equal(a.code, null);
    assert.equal(a.code_name, null);
    assert.deepEqual(a.errors, { 'filter[foo]': ['not a filter of this list'] });
    const b = (await recaudo.invoices.create({} as never).catch((e: unknown) => e)) as RecaudoError;
    assert.equal(b.code, 'customer_not_invoiceable');
    assert.equal(b.code_name, null);
    const c = (await recaudo.request('post', '/v1/charges/banklink', { body: {} as never, maxRetries: 0 }).catch((e: unknown) => e)) as RecaudoError;
    assert.equal(c.code_name, 'banklink_payment_duplicate');
    assert.equal((c.body as { previous_payment_id: string }).previous_payment_id, 'pay_1');
    const d = (await recaudo.charges.retrieve('ch_x').catch((e: unknown) => e)) as RecaudoError;
    assert.equal(d.status, 404);
    assert.equal(d.body, '<html>bad gateway</html>');
    assert.equal(d.code_name, null);
  });
});

describe('Recaudo client: retries', () => {
  test('a POST answered 503 is retried with the SAME x-idempotency value until it succeeds', async () => {
    const unavailable = json(503, { message: 'saving not confirmed', code: 90005, code_name: 'charge_persistence_lost' });
    const { recaudo, calls, clock } = client([unavailable, networkError(), json(200, charge)]);
    const created = await recaudo.charges.create(chargeBody);
    assert.equal(created.id, 'ch_1');
    assert.equal(calls.length, 3);
    const keys = new Set(calls.map((c) => c.headers.get('x-idempotency')));
    assert.equal(keys.size, 1, 'one key for every attempt');
    assert.ok([...keys][0]);
    assert.deepEqual(
      calls.map((c) => c.body),
      [calls[0]!.body, calls[0]!.body, calls[0]!.body],
      'the same body on every attempt',
    );
    // Backoff with the jitter at its middle (random 0.5): 0.5 s × 0.75, 1 s × 0.75.
    assert.deepEqual(clock.sleeps, [375, 750]);
  });

  test('Retry-After is honoured, in seconds or as a date', async () => {
    const { recaudo, clock } = client([
      json(429, { message: 'Too many requests' }, { 'retry-after': '7' }),
      json(
        503,
        { message: 'unavailable', code: 10009, code_name: 'service_unavailable' },
        { 'retry-after': new Date(1_000_000 + 7_000 + 12_000).toUTCString() },
      ),
      json(200, charge),
    ]);
    await recaudo.charges.retrieve('ch_1');
    assert.equal(clock.sleeps[0], 7_000);
    // The date is whole seconds: 12 s after the clock's now (1 000 000 + 7 000 ms), give or take the rounding of the date.
    assert.ok(clock.sleeps[1]! >= 11_000 && clock.sleeps[1]! <= 12_000, String(clock.sleeps[1]));
  });

  test('a POST never retries past 55 s after its first attempt started (SPEC’s 60 s replay window)', async () => {
    const clock = new FakeClock();
    const start = clock.t;
    // Each attempt hangs 20 s before its connection drops.
    const slowFailure = () => {
      clock.t += 20_000;
      throw networkError();
    };
    const { fetch, calls } = scripted(clock, [slowFailure]);
    const recaudo = new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://api.example.test', fetch, clock, random: () => 0.5, maxRetries: 10 });
    const error = await recaudo.charges.create(chargeBody).catch((e: unknown) => e);
    assert.ok(error instanceof RecaudoConnectionError, String(error));
    assert.equal(error.timedOut, false);
    assert.equal(calls.length, 3, 'attempts at 0 s, ~20.4 s, ~41.1 s; a fourth would start after 61 s');
    for (const call of calls) assert.ok(call.at - start <= 55_000, `an attempt started ${call.at - start} ms after the first`);
    assert.equal(error.attempts, 3);
    assert.equal(new Set(calls.map((c) => c.headers.get('x-idempotency'))).size, 1);
    assert.equal(error.idempotencyKey, calls[0]!.headers.get('x-idempotency'));
    assert.match(error.message, /POST \/v1\/charges: no answer .* after 3 attempt/);
  });

  test('backoff is shortened to fit the window, and a Retry-After beyond it is not waited for', async () => {
    const clock = new FakeClock();
    const start = clock.t;
    const at54s = () => {
      clock.t = start + 54_800;
      throw networkError();
    };
    const a = scripted(clock, [at54s, json(200, charge)]);
    const recaudo = new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://api.example.test', fetch: a.fetch, clock, random: () => 0.5 });
    await recaudo.charges.create(chargeBody);
    assert.equal(a.calls[1]!.at - start, 55_000, 'the retry starts at the deadline, not after it');

    const late = client([json(503, { message: 'busy' }, { 'retry-after': '56' }), json(200, charge)]);
    const error = (await late.recaudo.charges.create(chargeBody).catch((e: unknown) => e)) as RecaudoError;
    assert.ok(error instanceof RecaudoError);
    assert.equal(error.status, 503);
    assert.equal(error.retryAfter, 56);
    assert.equal(late.calls.length, 1, 'waiting 56 s would leave the replay window');
    // A GET has no window: it waits.
    const get = client([json(503, { message: 'busy' }, { 'retry-after': '56' }), json(200, charge)]);
    await get.recaudo.charges.retrieve('ch_1');
    assert.deepEqual(get.clock.sleeps, [56_000]);
  });

  test('maxRetries bounds the attempts (GET: network errors and 5xx), per client and per call', async () => {
    const a = client([networkError()], { maxRetries: 2 });
    const error = await a.recaudo.charges.retrieve('ch_1').catch((e: unknown) => e);
    assert.ok(error instanceof RecaudoConnectionError);
    assert.equal(a.calls.length, 3);
    assert.equal(a.calls[0]!.headers.get('x-idempotency'), null);
    const b = client([json(500, { message: 'bug' })]);
    const e2 = (await b.recaudo.charges.retrieve('ch_1', { maxRetries: 0 }).catch((e: unknown) => e)) as RecaudoError;
    assert.equal(e2.status, 500);
    assert.equal(e2.attempts, 1);
    assert.equal(b.calls.length, 1);
    const c = client([json(502, {}), json(504, {}), json(200, charge)], { maxRetries: 5 });
    await c.recaudo.charges.retrieve('ch_1');
    assert.equal(c.calls.length, 3);
  });

  test('requests that would run twice (DELETE, POSTs without a key) retry only when surely not served', async () => {
    // DELETE after a dropped connection: it may have run, so it is not repeated.
    const a = client([networkError(), json(200, {})]);
    await assert.rejects(a.recaudo.customers.delete('c1'), RecaudoConnectionError);
    assert.equal(a.calls.length, 1);
    const b = client([json(503, { message: 'x' }), json(200, {})]);
    await assert.rejects(b.recaudo.webhooks.delete('wh_1'), (e: unknown) => e instanceof RecaudoError && e.status === 503);
    assert.equal(b.calls.length, 1);
    // A refused connection, a 429 or a 408 never reached the handler: retried.
    const d = client(
      [refusedError(), json(429, {}, { 'retry-after': '1' }), json(408, { message: 'too slow' }), new Response(null, { status: 204 })],
      {
        maxRetries: 3,
      },
    );
    await d.recaudo.customers.delete('c1');
    assert.equal(d.calls.length, 4);
    assert.equal(d.clock.sleeps[1], 1_000);
    // POST /v1/flows carries no key: a 500 is final.
    const e = client([json(500, { message: 'bug' }), json(200, {})]);
    await assert.rejects(
      e.recaudo.request('post', '/v1/flows', { body: {} as never }),
      (x: unknown) => x instanceof RecaudoError && x.status === 500,
    );
    assert.equal(e.calls.length, 1);
  });

  test('an attempt that outlives `timeout` is abandoned and retried when safe', async () => {
    const hang = (_call: Call, signal: AbortSignal) =>
      new Promise<Response>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const a = client([hang, json(200, charge)], { timeout: 5 });
    const created = await a.recaudo.charges.create(chargeBody);
    assert.equal(created.id, 'ch_1');
    assert.equal(a.calls[0]!.headers.get('x-idempotency'), a.calls[1]!.headers.get('x-idempotency'));
    const b = client([hang], { timeout: 5, maxRetries: 1 });
    const error = await b.recaudo.charges.retrieve('ch_1').catch((e: unknown) => e);
    assert.ok(error instanceof RecaudoConnectionError);
    assert.equal(error.timedOut, true);
    assert.equal(error.attempts, 2);
    assert.match(error.message, /timed out/);
  });

  test('the caller’s signal stops the call, also while it waits between attempts', async () => {
    const controller = new AbortController();
    const clock = new FakeClock();
    const { fetch, calls } = scripted(clock, [
      () => {
        controller.abort(new Error('caller gave up'));
        return json(503, { message: 'busy' });
      },
    ]);
    const recaudo = new Recaudo({ apiKey: 'sk_test_abc', baseUrl: 'https://api.example.test', fetch, clock });
    await assert.rejects(recaudo.charges.retrieve('ch_1', { signal: controller.signal }), /caller gave up/);
    assert.equal(calls.length, 1);
  });
});
