import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { createHarness, ENGINE, expectError, send, type Harness } from './harness.ts';
import { ApiError } from '../src/platform/errors/api-error.ts';
import { jsonTooDeep, MAX_BODY_DEPTH } from '../src/platform/http/body-depth.ts';
import { PostgresRateLimiter } from '../src/platform/rate-limit/rate-limit.ts';
import { bearerTokenMatches, secretEquals } from '../src/platform/auth/tokens.ts';
import { rotateKey } from '../src/modules/companies/service.ts';
import { clientBucket } from '../src/pages/routes.ts';
import type { Database } from '../src/platform/db/database.ts';
import type { DB } from '../src/platform/db/schema.ts';

/**
 * Issue 11, the platform's bounds under hostile input and faults: body depth, the rate limiter
 * while the database is away, concurrent key rotations, the metrics token, the payer pages' rate
 * limit and the request timeout.
 */

const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);

describe('request body depth', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('the scan counts brackets outside strings only, without recursion', () => {
    assert.equal(jsonTooDeep(nested(MAX_BODY_DEPTH)), false);
    assert.equal(jsonTooDeep(nested(MAX_BODY_DEPTH + 1)), true);
    assert.equal(jsonTooDeep(nested(1_000_000)), true);
    assert.equal(jsonTooDeep(JSON.stringify({ a: '['.repeat(10_000), b: '\\"{{{{' })), false);
    assert.equal(jsonTooDeep(JSON.stringify({ a: { b: { c: [{}] } } }), 5), false, 'five levels');
    assert.equal(jsonTooDeep(JSON.stringify({ a: { b: { c: [[{}]] } } }), 5), true, 'six levels');
    assert.equal(jsonTooDeep('{"a":"\\\\"}' + '['.repeat(70), 64), true, 'an escaped backslash ends the string');
  });

  test('a body nested deeper than 64 levels is 400 body_too_deep on every kind of POST, never a 500', async () => {
    const co = await h.company();
    const customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Deep' } })).body;
    for (const url of [
      '/v1/customers',
      `/v1/customers/${customer.id}`,
      '/v1/charges',
      '/v1/payments',
      '/v1/webhooks',
      '/v1/invoices/preview',
      '/v1/cards',
    ]) {
      const method = url.startsWith('/v1/customers/') ? 'PUT' : 'POST';
      for (const body of [`{"metadata":${nested(100_000)}}`, nested(50_000), `{"a":${nested(MAX_BODY_DEPTH)}}`]) {
        const res = await co.req({ method, url, body });
        expectError(res, 400, 'body_too_deep', 10011);
      }
    }
    // At the limit: parsed and validated as usual.
    const atLimit = await co.req({ url: '/v1/customers', body: `{"first_name":"Ok","extra":${nested(MAX_BODY_DEPTH - 1)}}` });
    assert.equal(atLimit.status, 200, atLimit.raw);
    // Brackets inside strings are text.
    const inText = await co.req({ url: '/v1/customers', body: { first_name: 'Ok', last_name: '['.repeat(200) } });
    assert.notEqual(inText.status, 400, inText.raw);
    assert.ok(inText.status < 500, inText.raw);
  });

  test('the payer pages answer a JSON body they cannot use with a 4xx page, never a 500', async () => {
    for (const payload of [nested(100_000), '{', '{"a":"\\u0000"}', 'x'.repeat(1_100_000)]) {
      const res = await h.app.inject({ method: 'POST', url: '/pay/pay_nope/card', headers: { 'content-type': 'application/json' }, payload });
      assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode} ${res.body.slice(0, 200)}`);
      assert.match(res.headers['content-type'] as string, /text\/html/);
    }
    const big = await h.app.inject({
      method: 'POST',
      url: '/pay/pay_nope/card',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a='.padEnd(20_000, 'x'),
    });
    assert.equal(big.statusCode, 413);
    const bigJson = await h.app.inject({
      method: 'POST',
      url: '/pay/pay_nope/card',
      headers: { 'content-type': 'application/json' },
      payload: `{"a":"${'x'.repeat(1_100_000)}"}`,
    });
    assert.equal(bigJson.statusCode, 413);
    const co = await h.company();
    const bigApi = await co.req({ url: '/v1/customers', body: `{"a":"${'x'.repeat(1_100_000)}"}` });
    expectError(bigApi, 413, 'payload_too_large', 10007);
  });
});

/** A Kysely whose sessions are read-only: a failover onto a standby, as the limiter sees it. */
function readOnlyKysely(): Kysely<DB> {
  const pool = new pg.Pool({ connectionString: process.env.TEST_DATABASE_URL, max: 2, options: '-c default_transaction_read_only=on' });
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

describe('the rate limiter while the database is away', () => {
  test('a reservation that fails is 503 service_unavailable (not the raw error)', async () => {
    const failing = (error: Error) =>
      ({
        engine: 'postgres',
        db: {
          insertInto: () => {
            throw error;
          },
        },
      }) as unknown as Database;
    for (const error of [
      Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
      new Error('something else'),
    ]) {
      const limiter = new PostgresRateLimiter(failing(error));
      await assert.rejects(
        limiter.hit('bucket', 10, 1000, Date.now()),
        (e: unknown) => e instanceof ApiError && e.def.codeName === 'service_unavailable' && e.status === 503,
      );
      // And every request waiting on the same reservation.
      const together = await Promise.allSettled([limiter.hit('b2', 10, 1000, Date.now()), limiter.hit('b2', 10, 1000, Date.now())]);
      assert.ok(together.every((r) => r.status === 'rejected' && r.reason instanceof ApiError && r.reason.status === 503));
    }
  });

  test(
    'an API request whose counters cannot be written answers 503 10009 with Retry-After',
    { skip: ENGINE !== 'postgres' && 'the embedded engine counts in memory' },
    async () => {
      const h = await createHarness();
      const readOnly = readOnlyKysely();
      try {
        const co = await h.company();
        const database = h.runtime.deps.database as { db: Kysely<DB> };
        const healthy = database.db;
        // The key resolver keeps its own handle on the healthy database; the limiter reads deps.
        database.db = readOnly;
        try {
          const res = await co.req({ url: '/v1/customers' });
          expectError(res, 503, 'service_unavailable', 10009);
          assert.ok(res.headers['retry-after'], 'Retry-After is set');
        } finally {
          database.db = healthy;
        }
        assert.equal((await co.req({ url: '/v1/customers' })).status, 200, 'serves again once the database is back');
      } finally {
        await readOnly.destroy();
        await h.close();
      }
    },
  );

  test('a key lookup that fails is 503, not 500 and not 404', async () => {
    const h = await createHarness();
    try {
      const co = await h.company();
      const { KeyResolver } = await import('../src/platform/auth/api-keys.ts');
      const broken = new KeyResolver({
        selectFrom: () => {
          throw Object.assign(new Error('cannot connect'), { code: 'XX000' });
        },
      } as never);
      await assert.rejects(broken.resolve(co.keys.test), (e: unknown) => e instanceof ApiError && e.status === 503);
    } finally {
      await h.close();
    }
  });
});

describe('key rotation', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  async function activeKeys(companyId: string, environment: 'test' | 'live', kind: 'secret' | 'publishable') {
    return h.runtime.deps.database.db
      .selectFrom('api_keys')
      .select(['id', 'key_hash'])
      .where('company_id', '=', companyId)
      .where('environment', '=', environment)
      .where('kind', '=', kind)
      .where('revoked_at', 'is', null)
      .execute();
  }

  test('concurrent rotations of one key leave exactly one active key, and it is the one the last rotation printed', async () => {
    const co = await h.company();
    for (let round = 0; round < 3; round++) {
      const rotations = await Promise.all(Array.from({ length: 8 }, () => rotateKey(h.runtime.deps.database.db, co.company.id, 'test', new Date())));
      const active = await activeKeys(co.company.id, 'test', 'secret');
      assert.equal(active.length, 1, `round ${round}: ${active.length} active keys`);
      // Exactly one of the printed keys works; the others were revoked by a later rotation.
      const { hashKey } = await import('../src/platform/auth/api-keys.ts');
      assert.equal(rotations.filter((r) => hashKey(r.key) === active[0].key_hash).length, 1);
    }
    // Rotations of other kinds and environments are not disturbed.
    await Promise.all([
      rotateKey(h.runtime.deps.database.db, co.company.id, 'live', new Date()),
      rotateKey(h.runtime.deps.database.db, co.company.id, 'live', new Date(), 'publishable'),
      rotateKey(h.runtime.deps.database.db, co.company.id, 'test', new Date(), 'publishable'),
      rotateKey(h.runtime.deps.database.db, co.company.id, 'test', new Date(), 'publishable'),
    ]);
    for (const [env, kind] of [
      ['test', 'secret'],
      ['live', 'secret'],
      ['test', 'publishable'],
      ['live', 'publishable'],
    ] as const) {
      assert.equal((await activeKeys(co.company.id, env, kind)).length, 1, `${env} ${kind}`);
    }
  });
});

describe('GET /metrics token', () => {
  test('the token comparison hashes both sides and compares in constant time', () => {
    assert.equal(secretEquals('scrape-me', 'scrape-me'), true);
    assert.equal(secretEquals('scrape-mf', 'scrape-me'), false);
    assert.equal(secretEquals('', 'scrape-me'), false);
    assert.equal(secretEquals('scrape-me-and-more', 'scrape-me'), false, 'a longer guess is not an error');
    assert.equal(bearerTokenMatches('Bearer scrape-me', 'scrape-me'), true);
    assert.equal(bearerTokenMatches('bearer scrape-me', 'scrape-me'), true);
    assert.equal(bearerTokenMatches('scrape-me', 'scrape-me'), false, 'the scheme is required');
    assert.equal(bearerTokenMatches('Basic scrape-me', 'scrape-me'), false);
    assert.equal(bearerTokenMatches(undefined, 'scrape-me'), false);
    assert.equal(bearerTokenMatches(['Bearer scrape-me', 'Bearer x'], 'scrape-me'), false);
  });

  test('only the right token reads the metrics', async () => {
    const h = await createHarness({ METRICS_TOKEN: 'scrape-me' });
    try {
      for (const authorization of [
        undefined,
        'Bearer scrape-m',
        'Bearer scrape-me2',
        'Bearer ',
        'scrape-me',
        'Bearer ' + 'x'.repeat(5000),
        'Bearer sçrape-me',
      ]) {
        const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });
        assert.equal(res.statusCode, 401, `${authorization?.slice(0, 30)}: ${res.statusCode}`);
      }
      const ok = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-me' } });
      assert.equal(ok.statusCode, 200);
    } finally {
      await h.close();
    }
  });
});

describe('payer pages rate limit', () => {
  test('client buckets: IPv4 alone, IPv6 by its /64', () => {
    assert.equal(clientBucket('203.0.113.7'), '203.0.113.7');
    assert.equal(clientBucket('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientBucket('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(clientBucket('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.equal(clientBucket('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientBucket('::1'), '0:0:0:0::/64');
  });

  test('beyond PAGES_RATE_LIMIT requests a minute from one address: 429 page with Retry-After; other addresses and /v1 are not affected', async () => {
    const h = await createHarness({ PAGES_RATE_LIMIT: '5' });
    try {
      const ip = `198.51.100.${Math.floor(Math.random() * 250) + 1}`; // PostgreSQL counters are shared by test files
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const url = i % 2 ? '/portal' : '/pay/pay_doesnotexist';
        const res = await h.app.inject({ method: 'GET', url, remoteAddress: ip });
        statuses.push(res.statusCode);
        if (res.statusCode === 429) {
          assert.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After');
          assert.match(res.headers['content-type'] as string, /text\/html/);
          assert.match(res.body, /Demasiadas solicitudes/);
        }
      }
      assert.deepEqual(statuses, [404, 200, 404, 200, 404, 429, 429]);
      // POSTs count too.
      const post = await h.app.inject({
        method: 'POST',
        url: '/pay/pay_doesnotexist/card',
        remoteAddress: ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'token=x',
      });
      assert.equal(post.statusCode, 429);
      // X-Forwarded-For is not believed without TRUST_PROXY: it cannot dodge the limit.
      const spoofed = await h.app.inject({ method: 'GET', url: '/portal', remoteAddress: ip, headers: { 'x-forwarded-for': '192.0.2.1' } });
      assert.equal(spoofed.statusCode, 429);
      const other = await h.app.inject({ method: 'GET', url: '/portal', remoteAddress: '192.0.2.77' });
      assert.equal(other.statusCode, 200);
      const co = await h.company();
      const api = await send(h.app, { url: '/v1/customers', key: co.keys.test });
      assert.equal(api.status, 200);
    } finally {
      await h.close();
    }
  });

  test('behind a trusted proxy the limit counts the forwarded client address', async () => {
    const h = await createHarness({ PAGES_RATE_LIMIT: '2', TRUST_PROXY: '127.0.0.1' });
    try {
      const group = Math.floor(Math.random() * 65535).toString(16);
      const client = `2001:db8:${group}::7`;
      const hit = (forwarded: string) =>
        h.app.inject({ method: 'GET', url: '/portal', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': forwarded } });
      assert.equal((await hit(client)).statusCode, 200);
      assert.equal((await hit(client.replace('::7', '::8'))).statusCode, 200, 'the same /64');
      assert.equal((await hit(`2001:0DB8:${group.padStart(4, '0')}:0000:1:2:3:4`)).statusCode, 429, 'the same /64, written otherwise');
      assert.equal((await hit('192.0.2.200')).statusCode, 200, 'another client behind the same proxy');
    } finally {
      await h.close();
    }
  });

  test('TRUST_PROXY is validated', async () => {
    const { loadConfig } = await import('../src/config.ts');
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy, ['10.0.0.0/8', 'loopback']);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'proxy.internal' }), /TRUST_PROXY/);
    assert.equal(loadConfig({}).requestTimeoutMs, 30_000);
    assert.equal(loadConfig({}).pagesRateLimit, 300);
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: '-1' }), /REQUEST_TIMEOUT_MS/);
  });
});

describe('unknown API keys (issue 29)', () => {
  test('a burst of keys that match none gets 429 before any lookup; a known good key from that address and other addresses still pass', async () => {
    const h = await createHarness({ AUTH_FAILURE_LIMIT: '5', AUTH_FAILURE_WINDOW_MS: '60000' });
    try {
      const co = await h.company();
      const ip = '198.51.100.200';
      const get = (key: string, remoteAddress = ip) =>
        h.app.inject({ method: 'GET', url: '/v1/customers', remoteAddress, headers: { authorization: `Bearer ${key}` } });
      // A good key this process has seen (as a client already using the API from a shared address).
      assert.equal((await get(co.keys.test)).statusCode, 200);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await get(`sk_test_${'x'.repeat(20)}${i}`)).statusCode);
      assert.deepEqual(statuses, [404, 404, 404, 404, 404, 429, 429, 429], 'before: 8 × 404, one key lookup each');
      const limited = await get(`sk_test_${'y'.repeat(21)}`);
      assert.equal(limited.statusCode, 429);
      assert.equal(JSON.parse(limited.body).code_name ?? null, null, 'the rate limit answer of SPEC.md (no code)');
      assert.ok(Number(limited.headers['retry-after']) >= 1);
      assert.equal((await get(co.keys.test)).statusCode, 200, 'a known good key still passes');
      assert.equal((await get(`sk_test_${'z'.repeat(21)}`, '192.0.2.9')).statusCode, 404, 'another address is not limited');
    } finally {
      await h.close();
    }
  });
});

describe('request timeout (slow bodies)', () => {
  test('a request trickled slower than REQUEST_TIMEOUT_MS is cut off with 408 and its connection closed', { timeout: 30_000 }, async () => {
    const h = await createHarness({ REQUEST_TIMEOUT_MS: '1000' });
    try {
      const co = await h.company();
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = h.app.server.address() as AddressInfo;
      const trickle = (path: string, headers: string) =>
        new Promise<{ ms: number; head: string }>((resolve, reject) => {
          const started = Date.now();
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: 1000\r\n\r\n{`);
            timer = setInterval(() => socket.write(' '), 100);
          });
          let timer: NodeJS.Timeout | undefined;
          let data = '';
          const guard = setTimeout(() => {
            socket.destroy();
            reject(new Error(`${path}: still open after 10 s`));
          }, 10_000);
          socket.on('data', (chunk) => (data += chunk));
          socket.on('error', () => {});
          socket.on('close', () => {
            clearInterval(timer);
            clearTimeout(guard);
            resolve({ ms: Date.now() - started, head: data.split('\r\n')[0] });
          });
        });
      const api = await trickle(
        '/v1/customers',
        `Authorization: Bearer ${co.keys.test}\r\nX-Idempotency: slow-1\r\nContent-Type: application/json\r\n`,
      );
      assert.equal(api.head, 'HTTP/1.1 408 Request Timeout');
      assert.ok(api.ms < 3_000, `cut off after ${api.ms} ms`);
      const page = await trickle('/pay/pay_x/card', 'Content-Type: application/x-www-form-urlencoded\r\n');
      assert.equal(page.head, 'HTTP/1.1 408 Request Timeout');
      // A request sent in time is served as usual on the same server.
      const started = Date.now();
      const res = await fetch(`http://127.0.0.1:${port}/v1/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${co.keys.test}`, 'x-idempotency': 'fast-1', 'content-type': 'application/json' },
        body: JSON.stringify({ first_name: 'Ana' }),
      });
      assert.equal(res.status, 200);
      assert.ok(Date.now() - started < 1_000);
    } finally {
      await h.close();
    }
  });
});
