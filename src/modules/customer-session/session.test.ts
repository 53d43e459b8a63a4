import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, type Company, type Harness } from '../../../test/harness.ts';
import { createHash } from 'node:crypto';
import { keyedDigestMatches } from '../../platform/secrets.ts';
import { LOGIN_CODE_DIGEST, TEST_LOGIN_CODE } from './service.ts';

/** The payer session's login and token (SPEC.md "Customer session"): codes, limits, the token's binding. */
describe('customer session: login and token', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  const PHONE = '+573004445566';

  before(async () => {
    h = await createHarness();
    h.clock.freeze();
    co = await h.company('Tienda Sesión');
    other = await h.company('Otra Tienda');
    const c = await co.req({ url: '/v1/customers', body: { first_name: 'Lucía', last_name: 'Mora', phone: PHONE } });
    assert.equal(c.status, 200, c.raw);
  });
  after(() => h.close());

  const minutes = (n: number) => h.clock.advance(n * 60_000);

  test('request: the same answer for a known and an unknown phone; 418 within a minute; 429 past 3 per hour', async () => {
    const known = await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } });
    const unknown = await co.req({ url: '/v1/customers/login/request', body: { phone: '+573009990000' } });
    assert.deepEqual([known.status, unknown.status], [200, 200]);
    assert.deepEqual(known.body, unknown.body, 'no phone enumeration');
    const again = await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } });
    expectError(again, 418);
    assert.equal(again.body.code, undefined, 'no numeric code (SPEC "Errors without a code")');
    minutes(2);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    minutes(2);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    minutes(2);
    const limited = await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } });
    expectError(limited, 429);
    assert.ok(Number(limited.headers['retry-after']) > 0);
    expectError(await co.req({ url: '/v1/customers/login/request', body: { phone: '3004445566' } }), 422, 'validation_error', 10001);
  });

  test('verify: a wrong code is 422 and counts; the right code gives a 7-day token bound to the key; revoke ends it', async () => {
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    const wrong = await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: '123456' } });
    expectError(wrong, 422);
    assert.equal(wrong.body.code, undefined);
    expectError(await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } }), 429);
    minutes(1);
    const ok = await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } });
    assert.equal(ok.status, 200, ok.raw);
    assert.match(ok.body.token, /^cst_/);
    assert.equal(new Date(ok.body.expires_at).getTime() - h.clock.now().getTime(), 7 * 86_400_000);
    assert.equal(ok.body.customer.phone, PHONE);
    const token = ok.body.token as string;
    const session = await co.req({ url: '/v1/customers/session', headers: { 'x-customer-token': token } });
    assert.equal(session.status, 200, session.raw);
    assert.equal(session.body.customer.id, ok.body.customer.id);
    expectError(await co.req({ url: '/v1/customers/session' }), 401);
    expectError(await other.req({ url: '/v1/customers/session', headers: { 'x-customer-token': token } }), 401);
    expectError(await co.req({ url: '/v1/customers/session', env: 'live', headers: { 'x-customer-token': token } }), 401);
    minutes(2);
    expectError(await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } }), 422, null);
    const stored = await h.runtime.deps.database.db
      .selectFrom('customer_sessions')
      .select('token_hash')
      .where('customer_id', '=', ok.body.customer.id)
      .execute();
    assert.ok(
      stored.every((s) => s.token_hash !== token && !s.token_hash.includes(token)),
      'only the hash is stored',
    );
    assert.equal((await co.req({ method: 'DELETE', url: '/v1/customers/session', headers: { 'x-customer-token': token } })).status, 204);
    expectError(await co.req({ url: '/v1/customers/session', headers: { 'x-customer-token': token } }), 401);
    h.clock.advance(8 * 86_400_000);
  });

  test('a stored login code cannot be tried offline: no plain hash of any of the million codes matches it; it holds only under this key', async () => {
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    const row = await h.runtime.deps.database.db
      .selectFrom('customer_login_codes')
      .select(['id', 'code_hash'])
      .where('phone', '=', PHONE)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    // What someone who reads the table would try: every 6-digit code, hashed as the id plus the code.
    let reversed: string | null = null;
    for (let n = 0; n < 1_000_000 && reversed === null; n++) {
      const code = String(n).padStart(6, '0');
      if (createHash('sha256').update(`${row.id}:${code}`).digest('base64url') === row.code_hash) reversed = code;
    }
    assert.equal(reversed, null, 'no code reverses it');
    assert.ok(keyedDigestMatches(h.runtime.deps.secrets, LOGIN_CODE_DIGEST, `${row.id}:${TEST_LOGIN_CODE}`, row.code_hash));
    const otherKey = { current: Buffer.alloc(32, 7), opening: [], source: 'env' as const };
    assert.equal(
      keyedDigestMatches(otherKey, LOGIN_CODE_DIGEST, `${row.id}:${TEST_LOGIN_CODE}`, row.code_hash),
      false,
      'another key does not open it',
    );
    const ok = await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('expiry: a code lasts 1 hour; the token works until its 7 days are over, then 401', async () => {
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    h.clock.advance(3_600_000);
    expectError(await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } }), 422);
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone: PHONE } })).status, 200);
    h.clock.advance(3_600_000 - 1000);
    const ok = await co.req({ url: '/v1/customers/login/verify', body: { phone: PHONE, otp: TEST_LOGIN_CODE } });
    assert.equal(ok.status, 200, ok.raw);
    const headers = { 'x-customer-token': ok.body.token as string };
    h.clock.advance(7 * 86_400_000 - 1000);
    assert.equal((await co.req({ url: '/v1/customers/session', headers })).status, 200);
    h.clock.advance(1000);
    const expired = await co.req({ url: '/v1/customers/session', headers });
    expectError(expired, 401);
    assert.equal(expired.body.code, undefined);
    expectError(await co.req({ url: '/v1/customers/session/payment-methods', headers }), 401);
  });

  test('a deleted customer: every session request of theirs is 401 without a code, like an expired token', async () => {
    const phone = '+573004447788';
    const created = await co.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Ruiz', phone } });
    assert.equal(created.status, 200, created.raw);
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', body: { phone } })).status, 200);
    const ok = await co.req({ url: '/v1/customers/login/verify', body: { phone, otp: TEST_LOGIN_CODE } });
    assert.equal(ok.status, 200, ok.raw);
    const headers = { 'x-customer-token': ok.body.token as string };
    assert.equal((await co.req({ url: '/v1/customers/session', headers })).status, 200);
    assert.equal((await co.req({ url: '/v1/customers/session/payment-methods', headers })).status, 200);
    const deleted = await co.req({ method: 'DELETE', url: `/v1/customers/${created.body.id}` });
    assert.ok(deleted.status < 300, deleted.raw);
    for (const req of [
      { url: '/v1/customers/session' },
      { url: '/v1/customers/session/payment-methods' },
      { url: '/v1/customers/session/charges/ch_00000000000000000000000000' },
      { method: 'POST' as const, url: '/v1/customers/session/payment-methods', body: { token: 'tok_x' } },
      { method: 'POST' as const, url: '/v1/customers/session/charges', body: { payment_method_id: 'x', amount: 1000, description: 'x' } },
      { method: 'DELETE' as const, url: '/v1/customers/session' },
    ]) {
      minutes(1);
      const res = await co.req({ ...req, headers });
      expectError(res, 401);
      assert.equal(res.body.code, undefined, `${req.url}: the expired-token answer`);
    }
  });
});
