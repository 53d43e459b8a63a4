import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, send, type Company, type Harness } from './harness.ts';
import { Errors } from '../src/platform/errors/registry.ts';

describe('platform behaviour', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  test('health, OpenAPI document and docs', async () => {
    const health = await send(h.app, { url: '/health' });
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    const doc = await send(h.app, { url: '/v1/openapi.json' });
    assert.equal(doc.status, 200);
    assert.equal(doc.body.openapi, '3.1.0');
    for (const route of h.routes.filter((r) => r.auth !== 'none')) {
      const path = route.url.replace(/^\/v1/, '').replace(/:([A-Za-z_]+)/g, '{$1}');
      const inDoc = doc.body.paths[`/v1${path}`] ?? doc.body.paths[path];
      assert.ok(inDoc?.[route.method.toLowerCase()], `${route.method} ${route.url} is in the OpenAPI document`);
    }
    // The reference page (Scalar, served locally; test/openapi.test.ts and test/docs-page.browser.test.ts check it further).
    const docs = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.body, /<title>Recaudo API<\/title>/);
  });

  test('every response carries x-request-id, and an incoming one is kept', async () => {
    const res = await co.req({ url: '/v1/customers', headers: { 'x-request-id': 'trace-abc-123' } });
    assert.equal(res.headers['x-request-id'], 'trace-abc-123');
    const unknown = await send(h.app, { url: '/v1/nothing-here' });
    assert.ok(unknown.headers['x-request-id']);
  });

  test('malformed JSON, wrong content type, oversize body and unknown routes are coded 4xx', async () => {
    expectError(await co.req({ url: '/v1/customers', body: '{"first_name": ' }), 400, 'malformed_json', 10005);
    expectError(
      await co.req({ url: '/v1/customers', body: 'first_name=Ana', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'unsupported_media_type',
      10006,
    );
    expectError(
      await co.req({ url: '/v1/customers', body: 'hello', headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
      10006,
    );
    const big = JSON.stringify({ first_name: 'A', metadata: { blob: 'x'.repeat(1_100_000) } });
    expectError(await co.req({ url: '/v1/customers', body: big }), 413, 'payload_too_large', 10007);
    expectError(await co.req({ url: '/v1/does-not-exist' }), 404, 'route_not_found', 10008);
    expectError(await co.req({ method: 'PATCH', url: '/v1/customers' }), 404, 'route_not_found', 10008);
    const arrayBody = await co.req({ url: '/v1/customers', body: '[1,2]' });
    expectError(arrayBody, 422, 'validation_error', 10001);
    const list = await co.req({ url: '/v1/customers' });
    assert.equal(list.body.total, 0, 'rejected requests stored nothing');
  });

  test('a POST without body and without content type is an empty object', async () => {
    const res = await co.req({ url: '/v1/customers', method: 'POST' });
    // Empty body reaches validation (first_name missing), not a parse error.
    expectError(res, 422, 'validation_error', 10001);
    assert.ok(res.body.errors.first_name);
  });

  test('error registry holds every SPEC.md code exactly', () => {
    const spec: [string, number | null, number][] = [
      ['unauthenticated', 10000, 401],
      ['validation_error', 10001, 422],
      ['record_not_found', 10002, 404],
      ['idempotency_error', 10003, 409],
      ['not_found', 10004, 404],
      ['card_cvv', 10102, 422],
      ['card_number', 10104, 422],
      ['card_expired', 10122, 422],
      ['customer_data_invalid', 10126, 422],
      ['transaction_otp_invalid', 10136, 422],
      ['request_to_pay_not_available', 10140, 422],
      ['request_to_pay_in_progress', 10141, 422],
      ['transaction_otp_expired', 10148, 422],
      ['charge_refunded', 10805, 422],
      ['charge_is_test', 10806, 422],
      ['charge_is_not_paid', 10807, 422],
      ['charge_not_cancellable', 10808, 422],
      ['cant_cancel_payment', 15001, 422],
      ['cant_retry_payment', 15002, 422],
      ['payment_already_paid', 15003, 422],
      ['payment_cancelled', 15004, 422],
      ['payment_charge_in_progress', 15004, 422],
      ['banklink_payment_duplicate', 15005, 429],
      ['cant_update_payment', 15007, 422],
      ['charge_persistence_lost', 90005, 503],
      ['qr_generation_failed', 90100, 400],
      ['environment_key_mismatch', null, 404],
    ];
    for (const [name, code, status] of spec) {
      const d = Errors[name as keyof typeof Errors];
      assert.ok(d, name);
      assert.equal(d.code, code, name);
      assert.equal(d.codeName, name, name);
      assert.equal(d.status, status, name);
    }
  });

  test('rate limit per key with headers and Retry-After', async () => {
    const limited = await createHarness({ RATE_LIMIT_TEST: '5' });
    try {
      const c = await limited.company();
      // Windows are whole seconds of wall time: start at the beginning of one so all 8 fall in it.
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
      const results = [];
      for (let i = 0; i < 8; i++) results.push(await c.req({ url: '/v1/customers' }));
      assert.equal(results[0].headers['x-ratelimit-limit'], '5');
      assert.equal(results[0].headers['x-ratelimit-remaining'], '4');
      const rejected = results.filter((r) => r.status === 429);
      assert.ok(rejected.length >= 2, `expected 429s, got ${results.map((r) => r.status)}`);
      assert.ok(Number(rejected[0].headers['retry-after']) >= 1);
      assert.equal(rejected[0].headers['x-ratelimit-remaining'], '0');
      // Another key has its own budget.
      const other = await limited.company();
      assert.equal((await other.req({ url: '/v1/customers' })).status, 200);
    } finally {
      await limited.close();
    }
  });
});

test('docs/errors.md is generated from the registry and up to date', async () => {
  const fs = await import('node:fs');
  const { renderErrorsDoc } = await import('../scripts/errors-doc.ts');
  assert.equal(fs.readFileSync('docs/errors.md', 'utf8'), renderErrorsDoc(), 'run: node --import tsx scripts/errors-doc.ts > docs/errors.md');
});

test('GET /metrics exposes request, queue and delivery metrics in Prometheus text', async () => {
  const h = await createHarness({ METRICS_TOKEN: 'scrape-me' });
  try {
    const co = await h.company();
    await co.req({ url: '/v1/customers' });
    expectError(await send(h.app, { url: '/metrics' }), 401, 'unauthenticated', 10000);
    const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-me' } });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /text\/plain/);
    assert.match(res.body, /recaudo_http_requests_total\{method="GET",route="\/v1\/customers",status="2xx"\} 1/);
    assert.match(res.body, /# TYPE recaudo_webhook_queue_depth gauge\nrecaudo_webhook_queue_depth \d+/);
    assert.match(res.body, /recaudo_jobs_queue_depth/);
  } finally {
    await h.close();
  }
});

test('NODE_ENV=production: /metrics is 404 without METRICS_TOKEN; Strict-Transport-Security on every response (none in development)', async () => {
  const prod = await createHarness({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(32) });
  const dev = await createHarness({ NODE_ENV: 'development' });
  try {
    const co = await prod.company();
    const metrics = await send(prod.app, { url: '/metrics' });
    assert.equal(metrics.status, 404);
    assert.doesNotMatch(metrics.raw, /recaudo_/);
    assert.equal((await send(dev.app, { url: '/metrics' })).status, 200, 'development without a token: served');
    for (const res of [
      metrics,
      await send(prod.app, { url: '/health' }),
      await co.req({ url: '/v1/customers' }),
      await send(prod.app, { url: '/v1/customers', key: 'sk_test_nope' }),
      await send(prod.app, { url: '/v1/nothing-here' }),
      await send(prod.app, { url: '/pagar/no-such-token' }),
    ]) {
      const hsts = String(res.headers['strict-transport-security'] ?? '');
      assert.match(hsts, /^max-age=(\d+); includeSubDomains$/, `${res.status} ${res.raw.slice(0, 80)}`);
      assert.ok(Number(/max-age=(\d+)/.exec(hsts)![1]) >= 15_552_000, 'at least 180 days');
    }
    assert.equal((await send(dev.app, { url: '/health' })).headers['strict-transport-security'], undefined);
    const withToken = await createHarness({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(32), METRICS_TOKEN: 'scrape-me' });
    try {
      const res = await withToken.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-me' } });
      assert.equal(res.statusCode, 200);
      expectError(await send(withToken.app, { url: '/metrics' }), 401, 'unauthenticated', 10000);
    } finally {
      await withToken.close();
    }
  } finally {
    await prod.close();
    await dev.close();
  }
});

test('rate limits hold across processes sharing PostgreSQL', { skip: !process.env.TEST_DATABASE_URL && 'PostgreSQL only' }, async () => {
  const { PostgresRateLimiter } = await import('../src/platform/rate-limit/rate-limit.ts');
  const h = await createHarness();
  try {
    // Two limiters = two API processes: each reserves from the same counters.
    const a = new PostgresRateLimiter(h.runtime.deps.database);
    const b = new PostgresRateLimiter(h.runtime.deps.database);
    const bucket = `test-${Math.random()}`;
    const now = Date.now();
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).hit(bucket, 40, 60_000, now)));
    const allowed = decisions.filter((d) => d.allowed).length;
    // Never above the limit; a process may leave up to chunk-1 (= 3) reserved hits unused.
    assert.ok(allowed <= 40 && allowed >= 40 - 2 * 3, `allowed ${allowed}`);
    assert.ok(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.retryAfterSeconds >= 1));
  } finally {
    await h.close();
  }
});
