import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { operatorCli } from '../../../test/support/cli.ts';
import { kybBody, KYB_DV, KYB_NIT, makePlatform } from '../../../test/support/companies.ts';
import { ciiuProblem, divipola, parseNit, responsibilityCode } from './kyb.ts';
import { reviewOnboarding, ReviewError } from './service.ts';

/** Companies onboarded by a platform (docs/companies.md): KYB checks, review states, test keys at once, live keys once active. */

const NIT = KYB_NIT;
const DV = KYB_DV;

describe('KYB checks (pure)', () => {
  test('NIT check digit (DIAN modulo 11), CIIU divisions, DIVIPOLA, responsibility codes', () => {
    assert.deepEqual(parseNit(`${NIT}-${DV}`, undefined), { nit: NIT, dv: DV });
    assert.deepEqual(parseNit('900.123.456', DV), { nit: NIT, dv: DV });
    assert.match(String(parseNit(`${NIT}-${(Number(DV) + 1) % 10}`, undefined)), /does not match/);
    assert.match(String(parseNit(NIT, undefined)), /check digit/);
    assert.match(String(parseNit('12-3', undefined)), /NIT digits/);
    assert.equal(ciiuProblem('4791'), null);
    assert.equal(ciiuProblem('0111'), null);
    assert.match(String(ciiuProblem('0400')), /division 04/);
    assert.match(String(ciiuProblem('479')), /four digits/);
    assert.equal(divipola(5001), '05001');
    assert.equal(divipola('11001'), '11001');
    assert.equal(divipola(99999), null);
    assert.equal(responsibilityCode('o_47'), 'O-47');
    assert.equal(responsibilityCode('R-99-PN'), 'R-99-PN');
    assert.equal(responsibilityCode('O-1'), null);
  });
});

describe('/v1/companies', () => {
  let h: Harness;
  let platform: Company;
  let plain: Company;

  before(async () => {
    h = await createHarness();
    platform = await h.company('Plataforma SAS');
    plain = await h.company('Comercio SAS');
    await makePlatform(h, platform);
  });
  after(() => h.close());

  const review = (company: string, action: 'start' | 'approve' | 'reject', reason?: string) =>
    reviewOnboarding(h.runtime.deps, h.runtime.deps.database.db, { company, action, reason });

  test('a key of a company that is not a platform: 403 platform_only on every route', async () => {
    expectError(await plain.req({ url: '/v1/companies', body: kybBody() }), 403, 'platform_only', 11400);
    expectError(await plain.req({ url: '/v1/companies' }), 403, 'platform_only', 11400);
    expectError(await plain.req({ url: '/v1/companies/cmp_01kkc2f6j07hzrnqhj8s6rat03' }), 403, 'platform_only', 11400);
    expectError(await plain.req({ url: '/v1/companies/cmp_01kkc2f6j07hzrnqhj8s6rat03/keys', body: {} }), 403, 'platform_only', 11400);
  });

  test('every KYB problem in one 422; nothing created', async () => {
    const before = await h.runtime.deps.database.db.selectFrom('company_onboardings').select('id').execute();
    const res = await platform.req({
      url: '/v1/companies',
      body: kybBody({
        document_number: `${NIT}-${(Number(DV) + 1) % 10}`,
        economic_activity: '0400',
        city_id: 99999,
        fiscal_responsibilities: ['O_47', 'X-1'],
        company_owner: { name: 'A', last_name: 'B', document_type: 'nit', dni: '123' },
      }),
    });
    expectValidation(res, 'document_number', 'economic_activity', 'city_id', 'fiscal_responsibilities', 'company_owner.document_type');
    expectValidation(await platform.req({ url: '/v1/companies', body: kybBody({ email: 'no' }) }), 'email');
    const after = await h.runtime.deps.database.db.selectFrom('company_onboardings').select('id').execute();
    assert.equal(after.length, before.length);
  });

  test('create: pending, test keys at once (its test fiscal profile prefilled), no live keys until active, then once', async () => {
    const res = await platform.req({ url: '/v1/companies', body: kybBody() });
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.match(c.id, /^cmp_/);
    assert.deepEqual(
      [c.status, c.document_type, c.document_number, c.phone, c.email, c.city_id, c.currency, c.is_test, c.live_keys_issued],
      ['pending', 'NIT', `${NIT}-${DV}`, '+573001234567', 'finanzas@tiendahija.co', '05001', 'COP', true, false],
    );
    assert.deepEqual(c.fiscal_responsibilities, ['O-47', 'R-99-PN']);
    assert.match(c.keys.test.secret, /^sk_test_/);
    assert.match(c.keys.test.publishable, /^pk_test_/);

    // The new company works at once with its test key; its fiscal profile carries the KYB data.
    const child = (opts: { url: string; body?: unknown; key?: string }) => send(h.app, { ...opts, key: opts.key ?? c.keys.test.secret });
    const profile = await child({ url: '/v1/fiscal-profile' });
    assert.equal(profile.status, 200, profile.raw);
    assert.deepEqual(
      [
        profile.body.nit,
        profile.body.dv,
        profile.body.legal_name,
        profile.body.trade_name,
        profile.body.address,
        profile.body.fiscal_responsibilities,
      ],
      [NIT, DV, 'Tienda Hija S.A.S.', 'Tienda Hija', { line: 'Calle 10 # 43-12', city_code: '05001' }, ['O-47', 'R-99-PN']],
    );
    assert.equal((await child({ url: '/v1/customers' })).status, 200);
    const liveKeys = await h.runtime.deps.database.db
      .selectFrom('api_keys')
      .select('id')
      .where('company_id', '=', c.id)
      .where('environment', '=', 'live')
      .execute();
    assert.equal(liveKeys.length, 0, 'no live keys before the review');
    // The child's own key is not a platform's.
    expectError(await child({ url: '/v1/companies' }), 403, 'platform_only');

    // Read back; the other environment and other companies do not see it.
    assert.equal((await platform.req({ url: `/v1/companies/${c.id}` })).body.keys, undefined);
    expectError(await platform.req({ url: `/v1/companies/${c.id}`, env: 'live' }), 404, 'environment_key_mismatch');
    const list = await platform.req({ url: '/v1/companies?filter[status]=pending' });
    assert.ok(list.body.data.some((x: any) => x.id === c.id));
    expectError(await platform.req({ url: '/v1/companies/cmp_nope' }), 404, 'record_not_found');

    const started = await review(c.id, 'start');
    assert.equal(started.company.status, 'in_review');
    const approved = await review(c.id, 'approve');
    assert.equal(approved.company.status, 'active');
    assert.ok(approved.company.activated_at);

    // A test key's onboarding is a sandbox company: no live keys, with either key, even once active
    // (issue 29: it used to yield them to the platform's live key, against docs/companies.md).
    expectError(await platform.req({ url: `/v1/companies/${c.id}/keys`, body: {} }), 404, 'environment_key_mismatch');
    expectError(await platform.req({ url: `/v1/companies/${c.id}/keys`, body: {}, env: 'live', idem: false }), 404, 'environment_key_mismatch');
    assert.equal((await platform.req({ url: `/v1/companies/${c.id}` })).body.live_keys_issued, false);
    const stillNone = await h.runtime.deps.database.db
      .selectFrom('api_keys')
      .select('id')
      .where('company_id', '=', c.id)
      .where('environment', '=', 'live')
      .execute();
    assert.equal(stillNone.length, 0);

    // Onboarded with the platform's live key: live secrets to that key, once active.
    const l = (await platform.req({ url: '/v1/companies', body: kybBody({ name: 'Tienda Real' }), env: 'live' })).body;
    assert.equal(l.is_test, false);
    expectError(await platform.req({ url: `/v1/companies/${l.id}/keys`, body: {}, env: 'live' }), 422, 'company_not_active', 11401);
    await review(l.id, 'start');
    expectError(await platform.req({ url: `/v1/companies/${l.id}/keys`, body: {}, env: 'live' }), 422, 'company_not_active', 11401);
    await review(l.id, 'approve');
    expectError(await platform.req({ url: `/v1/companies/${l.id}/keys`, body: {} }), 404, 'environment_key_mismatch');
    const keys = await platform.req({ url: `/v1/companies/${l.id}/keys`, body: {}, env: 'live', idem: false });
    assert.equal(keys.status, 200, keys.raw);
    assert.match(keys.body.keys.secret, /^sk_live_/);
    assert.match(keys.body.keys.publishable, /^pk_live_/);
    assert.equal((await child({ url: '/v1/customers', key: keys.body.keys.secret })).status, 200);
    expectError(await platform.req({ url: `/v1/companies/${l.id}/keys`, body: {}, env: 'live' }), 409, 'company_keys_already_issued', 11402);
    const stored = await h.runtime.deps.database.db.selectFrom('idempotency_keys').select('response_body').execute();
    assert.ok(!stored.some((r) => r.response_body?.includes(keys.body.keys.secret)), 'the live secret is never stored for a replay');
    assert.equal((await platform.req({ url: `/v1/companies/${l.id}`, env: 'live' })).body.live_keys_issued, true);
  });

  test('review: approve from pending goes through in_review; reject needs a reason; a decided company stays decided', async () => {
    const a = (await platform.req({ url: '/v1/companies', body: kybBody({ name: 'Aprobada' }) })).body;
    assert.equal((await review(a.id, 'approve')).company.status, 'active');
    const row = await h.runtime.deps.database.db.selectFrom('company_onboardings').selectAll().where('id', '=', a.id).executeTakeFirstOrThrow();
    assert.ok(row.reviewed_at && row.activated_at);

    const r = (await platform.req({ url: '/v1/companies', body: kybBody({ name: 'Rechazada' }) })).body;
    await assert.rejects(review(r.id, 'reject'), ReviewError);
    const rejected = await review(r.id, 'reject', 'RUT ilegible');
    assert.deepEqual([rejected.company.status, rejected.company.status_reason], ['rejected', 'RUT ilegible']);
    await assert.rejects(review(r.id, 'approve'), /a rejected company cannot be approved/);
    await assert.rejects(review(a.id, 'reject', 'tarde'), ReviewError);
    expectError(await platform.req({ url: `/v1/companies/${r.id}/keys`, body: {}, env: 'live' }), 404, 'environment_key_mismatch');
    await assert.rejects(review(plain.company.id, 'approve'), /was not onboarded by a platform/);
    const statuses = (await platform.req({ url: '/v1/companies?filter[status]=rejected' })).body.data.map((x: any) => x.id);
    assert.deepEqual(statuses, [r.id]);
  });
});

describe('recaudo companies set --platform / review', () => {
  const { run: cli, remove } = operatorCli('platform');
  after(remove);

  test('the flag is set and shown; review refuses a company no platform onboarded (exit 2)', () => {
    const created = cli('companies', 'create', '--name', 'Plataforma CLI SAS', '--json');
    assert.equal(created.code, 0, created.stderr);
    const id = JSON.parse(created.stdout).company.id;
    const set = cli('companies', 'set', '--company', id, '--platform', 'true', '--json');
    assert.equal(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).company.platform, true);
    assert.equal(cli('companies', 'set', '--company', id, '--platform', 'yes').code, 2);
    const review = cli('companies', 'review', '--company', id, '--approve');
    assert.equal(review.code, 2);
    assert.match(review.stderr, /was not onboarded by a platform/);
    assert.equal(cli('companies', 'review', '--company', id, '--approve', '--reject').code, 2);
  });
});
