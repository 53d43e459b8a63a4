import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';

describe('connect links', () => {
  let h: Harness;
  let co: Company;
  let customer: { id: string };
  before(async () => {
    h = await createHarness();
    co = await h.company();
    customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Ana' } })).body;
  });
  after(() => h.close());

  test('create, read, delete', async () => {
    const res = await co.req({
      url: '/v1/connect-links',
      body: { customer_id: customer.id, single_use: true, redirect_url: 'https://tienda.example.co/gracias' },
    });
    assert.equal(res.status, 200, res.raw);
    const l = res.body;
    assert.match(l.id, /^cl_[0-9a-z]{26}$/);
    assert.equal(l.customer_id, customer.id);
    assert.equal(l.single_use, true);
    assert.equal(l.redirect_url, 'https://tienda.example.co/gracias');
    assert.match(l.url, /^http:\/\/recaudo\.test\/connect\/[A-Za-z0-9]{32}$/);
    assert.equal(l.status, 'active');
    assert.equal(l.is_test, true);
    assert.ok(!Number.isNaN(Date.parse(l.created_at)));

    const again = await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: false } });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.redirect_url, null);
    assert.notEqual(again.body.url, l.url, 'every link has its own token');

    assert.deepEqual((await co.req({ url: `/v1/connect-links/${l.id}` })).body, l);
    const del = await co.req({ method: 'DELETE', url: `/v1/connect-links/${l.id}` });
    assert.equal(del.status, 204);
    assert.equal(del.raw, '');
    expectError(await co.req({ url: `/v1/connect-links/${l.id}` }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: `/v1/connect-links/${l.id}` }), 404, 'record_not_found', 10002);
    const row = await h.runtime.deps.database.db
      .selectFrom('connect_links')
      .select(['status', 'deleted_at'])
      .where('id', '=', l.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'deleted');
    assert.ok(row.deleted_at);
  });

  test('validation errors name each field', async () => {
    expectValidation(await co.req({ url: '/v1/connect-links', body: {} }), 'customer_id', 'single_use');
    expectValidation(await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: 'yes' } }), 'single_use');
    expectValidation(await co.req({ url: '/v1/connect-links', body: { customer_id: 'nope', single_use: true } }), 'customer_id');
    expectValidation(
      await co.req({ url: '/v1/connect-links', body: { customer_id: '00000000-0000-4000-8000-000000000000', single_use: true } }),
      'customer_id',
    );
    const live = (await co.req({ url: '/v1/customers', env: 'live', body: { first_name: 'Live' } })).body;
    expectValidation(await co.req({ url: '/v1/connect-links', body: { customer_id: live.id, single_use: true } }), 'customer_id');
    const other = await h.company('Other SAS');
    const theirs = (await other.req({ url: '/v1/customers', body: { first_name: 'Theirs' } })).body;
    expectValidation(await co.req({ url: '/v1/connect-links', body: { customer_id: theirs.id, single_use: true } }), 'customer_id');
    expectValidation(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true, redirect_url: 'http://tienda.example.co' } }),
      'redirect_url',
    );
    expectValidation(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true, redirect_url: 'not a url' } }),
      'redirect_url',
    );
    const long = `https://tienda.example.co/${'a'.repeat(256 - 'https://tienda.example.co/'.length)}`;
    assert.equal(long.length, 256);
    expectValidation(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true, redirect_url: long } }),
      'redirect_url',
    );
    const max = long.slice(0, 255);
    assert.equal(
      (await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true, redirect_url: max } })).status,
      200,
      '255 characters is fine',
    );
    expectError(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true }, idem: false }),
      409,
      'idempotency_error',
      10003,
    );
    expectError(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true }, key: null }),
      401,
      'unauthenticated',
      10000,
    );
  });

  test('idempotent replay returns the same link', async () => {
    const body = { customer_id: customer.id, single_use: true };
    const first = await co.req({ url: '/v1/connect-links', body, idem: 'cl-replay-1' });
    const second = await co.req({ url: '/v1/connect-links', body, idem: 'cl-replay-1' });
    assert.equal(first.status, 200);
    assert.deepEqual(second.body, first.body);
  });

  test('scoping: other company and other environment', async () => {
    const l = (await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: false } })).body;
    const other = await h.company('Scope SAS');
    for (const req of [{ url: `/v1/connect-links/${l.id}` }, { method: 'DELETE' as const, url: `/v1/connect-links/${l.id}` }]) {
      await expectScoped(co, other, req);
    }
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}` })).body.status, 'active', 'nothing changed');
    expectError(await co.req({ url: '/v1/connect-links/whatever' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: '/v1/connect-links/cl_nope' }), 404, 'record_not_found', 10002);
  });
});
