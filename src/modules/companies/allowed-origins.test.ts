import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { cardBody } from '../../../test/support/cards.ts';
import { setAllowedOriginsOperator } from './operator.ts';
import { OperatorInputError } from './service.ts';

/**
 * Browser tokenization across origins (docs/browser-tokenization.md) over HTTP; the Chromium test
 * is cors.browser.test.ts.
 */
const SHOP = 'https://tienda.example.co';
const OTHER = 'https://evil.example.net';
const { customer_id: _c, authorization: _a, ...card } = cardBody('x');
const corsHeaders = (headers: Record<string, unknown>) => Object.keys(headers).filter((k) => k.startsWith('access-control-'));

describe('allowed origins and CORS on POST /v1/tokens', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Tienda SAS');
    other = await h.company('Otra SAS');
  });
  after(() => h.close());

  const preflight = (origin: string | null, method = 'POST') =>
    send(h.app, {
      method: 'OPTIONS',
      url: '/v1/tokens',
      key: null,
      headers: {
        ...(origin ? { origin } : {}),
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization, content-type, x-idempotency',
      },
    });
  const tokenFrom = (origin: string, c: Company = co, env: 'test' | 'live' = 'test', body: unknown = card) =>
    send(h.app, { url: '/v1/tokens', body, key: c.publishable_keys[env], headers: { origin } });

  test('the API setting: GET/PUT /v1/company/allowed-origins, per environment, normalised, validated', async () => {
    const empty = await co.req({ url: '/v1/company/allowed-origins' });
    assert.equal(empty.status, 200, empty.raw);
    assert.deepEqual(empty.body, { origins: [], is_test: true });
    const set = await co.req({
      method: 'PUT',
      url: '/v1/company/allowed-origins',
      body: { origins: ['HTTPS://Tienda.Example.co/', 'http://localhost:5173', SHOP] },
    });
    assert.equal(set.status, 200, set.raw);
    assert.deepEqual(set.body, { origins: ['http://localhost:5173', SHOP], is_test: true });
    assert.deepEqual(
      (await co.req({ url: '/v1/company/allowed-origins', env: 'live' })).body,
      { origins: [], is_test: false },
      'live has its own list',
    );
    for (const bad of [
      '*',
      'tienda.example.co',
      'https://tienda.example.co/pagar',
      'https://a@tienda.example.co',
      'https://tienda.example.co?x=1',
      'ftp://tienda.example.co',
    ]) {
      expectValidation(await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: { origins: [SHOP, bad] } }), 'origins.1');
    }
    expectValidation(
      await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', env: 'live', body: { origins: ['http://tienda.example.co'] } }),
      'origins.0',
    );
    expectValidation(
      await co.req({
        method: 'PUT',
        url: '/v1/company/allowed-origins',
        body: { origins: Array.from({ length: 21 }, (_, i) => `https://s${i}.example.co`) },
      }),
      'origins',
    );
    expectValidation(await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: {} }), 'origins');
    assert.deepEqual(
      (await co.req({ url: '/v1/company/allowed-origins' })).body.origins,
      ['http://localhost:5173', SHOP],
      'refused lists change nothing',
    );
    // The publishable key cannot read or change it.
    expectError(await send(h.app, { url: '/v1/company/allowed-origins', key: co.publishable_keys.test }), 404, 'record_not_found', 10002);
  });

  test('the operator command sets the same list (empty clears); bad input is an operator error', async () => {
    const db = h.runtime.deps.database.db;
    const out = await setAllowedOriginsOperator(
      db,
      { company: other.company.id, env: 'live', origins: 'https://otra.example.co, https://pagos.otra.example.co' },
      h.clock.now(),
    );
    assert.deepEqual(out, {
      company: { id: other.company.id },
      environment: 'live',
      allowed_origins: ['https://otra.example.co', 'https://pagos.otra.example.co'],
    });
    assert.deepEqual((await other.req({ url: '/v1/company/allowed-origins', env: 'live' })).body.origins, [
      'https://otra.example.co',
      'https://pagos.otra.example.co',
    ]);
    await assert.rejects(
      setAllowedOriginsOperator(db, { company: other.company.id, env: 'live', origins: 'http://otra.example.co' }, h.clock.now()),
      OperatorInputError,
    );
    await assert.rejects(setAllowedOriginsOperator(db, { company: other.company.id, env: 'prod', origins: '' }, h.clock.now()), OperatorInputError);
    await assert.rejects(setAllowedOriginsOperator(db, { company: 'cmp_nope', env: 'test', origins: '' }, h.clock.now()), OperatorInputError);
    const cleared = await setAllowedOriginsOperator(db, { company: other.company.id, env: 'live', origins: '' }, h.clock.now());
    assert.deepEqual(cleared.allowed_origins, []);
  });

  test('preflight: the same answer for an allowed origin and any other well-formed one (no list is revealed); a malformed origin, another method or no origin gets none', async () => {
    await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: { origins: [SHOP] } });
    const ok = await preflight(SHOP);
    assert.equal(ok.status, 204);
    assert.equal(ok.headers['access-control-allow-origin'], SHOP);
    assert.equal(ok.headers['access-control-allow-methods'], 'POST');
    assert.match(String(ok.headers['access-control-allow-headers']), /authorization/);
    assert.match(String(ok.headers['access-control-allow-headers']), /x-idempotency/);
    assert.equal(ok.headers['access-control-max-age'], '600');
    assert.match(String(ok.headers.vary), /Origin/);
    assert.equal(ok.headers['access-control-allow-credentials'], undefined);
    // Whether some company lists an origin is nobody's business: an unlisted origin is answered alike.
    for (const origin of [OTHER, `${SHOP}.evil.net`, 'http://localhost:5173']) {
      const res = await preflight(origin);
      assert.equal(res.status, 204);
      assert.deepEqual(corsHeaders(res.headers), corsHeaders(ok.headers));
      for (const name of corsHeaders(ok.headers)) {
        assert.equal(res.headers[name], name === 'access-control-allow-origin' ? origin : ok.headers[name], name);
      }
    }
    for (const res of [
      await preflight(null),
      await preflight(SHOP, 'DELETE'),
      await preflight('null'),
      await preflight(`${SHOP}/path`),
      await preflight('ftp://x.co'),
    ]) {
      assert.equal(res.status, 204);
      assert.deepEqual(corsHeaders(res.headers), []);
    }
  });

  test("requests: CORS headers only for the key's company and environment; the token is made either way", async () => {
    await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: { origins: [SHOP] } });
    const ok = await tokenFrom(SHOP);
    assert.equal(ok.status, 200, ok.raw);
    assert.match(ok.body.id, /^tok_/);
    assert.equal(ok.headers['access-control-allow-origin'], SHOP);
    assert.match(String(ok.headers['access-control-expose-headers']), /x-request-id/);
    // A refused card is readable by the page too (422 after the key is known).
    const bad = await tokenFrom(SHOP, co, 'test', { ...card, card_number: '4242424242424241' });
    assert.equal(bad.status, 422);
    assert.equal(bad.headers['access-control-allow-origin'], SHOP);
    for (const res of [
      await tokenFrom(OTHER),
      await tokenFrom(SHOP, co, 'live'), // live has no allowed origin
      await tokenFrom(SHOP, other), // another company's key
      await send(h.app, { url: '/v1/tokens', body: card, key: null, headers: { origin: SHOP } }), // 401 before the key is known
    ]) {
      assert.deepEqual(corsHeaders(res.headers), [], `${res.status} ${res.raw.slice(0, 80)}`);
    }
    const noOrigin = await send(h.app, { url: '/v1/tokens', body: card, key: co.publishable_keys.test });
    assert.equal(noOrigin.status, 200, 'servers (no Origin) keep working');
    assert.deepEqual(corsHeaders(noOrigin.headers), []);
  });

  test('secret-key routes never send CORS headers, to an allowed origin either, and OPTIONS on them is route_not_found', async () => {
    await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: { origins: [SHOP] } });
    const secret = h.routes.filter((r) => r.auth === 'secret');
    assert.ok(secret.length > 50);
    for (const route of secret) {
      const url = route.url.replace(/:[A-Za-z_]+/g, '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5');
      const res = await send(h.app, {
        method: route.method as 'GET',
        url,
        key: co.keys.test,
        body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {},
        headers: { origin: SHOP },
      });
      assert.deepEqual(corsHeaders(res.headers), [], `${route.method} ${route.url}`);
    }
    for (const url of ['/v1/customers', '/v1/cards', '/v1/company/allowed-origins']) {
      const res = await send(h.app, { method: 'OPTIONS', url, key: null, headers: { origin: SHOP, 'access-control-request-method': 'GET' } });
      expectError(res, 404, 'route_not_found');
      assert.deepEqual(corsHeaders(res.headers), [], url);
    }
  });
});
