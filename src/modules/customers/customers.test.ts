import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';

const ana = {
  first_name: 'Ana',
  last_name: 'Gómez',
  email: 'Ana@Example.com',
  phone: '+573001234567',
  document_type: 'CC',
  document_number: '1020304050',
  address: { line: 'Cra 7 # 12-34', city_code: '11001' },
};

describe('customers', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  test('create, read, list, update, delete', async () => {
    const created = await co.req({ url: '/v1/customers', body: { ...ana, unknown_field: 'ignored' } });
    assert.equal(created.status, 200, created.raw);
    const c = created.body;
    assert.match(c.id, /^[0-9a-f-]{36}$/);
    assert.equal(c.type, 'natural');
    assert.equal(c.email, 'ana@example.com');
    assert.equal(c.is_test, true);
    assert.equal('unknown_field' in c, false);
    assert.deepEqual(c.address, ana.address);

    const got = await co.req({ url: `/v1/customers/${c.id}` });
    assert.deepEqual(got.body, c);

    const list = await co.req({ url: '/v1/customers?filter[email]=ana@example.com' });
    assert.equal(list.status, 200);
    assert.equal(list.body.total, 1);
    assert.equal(list.body.data[0].id, c.id);

    const updated = await co.req({ method: 'PUT', url: `/v1/customers/${c.id}`, body: { last_name: 'Gómez Ruiz', phone: null } });
    assert.equal(updated.status, 200, updated.raw);
    assert.equal(updated.body.last_name, 'Gómez Ruiz');
    assert.equal(updated.body.phone, null);
    assert.equal(updated.body.first_name, 'Ana');

    const del = await co.req({ method: 'DELETE', url: `/v1/customers/${c.id}` });
    assert.equal(del.status, 204);
    expectError(await co.req({ url: `/v1/customers/${c.id}` }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: `/v1/customers/${c.id}` }), 404, 'record_not_found', 10002);
  });

  test('company customers take a NIT with its check digit', async () => {
    const ok = await co.req({
      url: '/v1/customers',
      body: {
        type: 'company',
        first_name: 'Acme SAS',
        document_type: 'NIT',
        document_number: '900123456',
        document_verification: '8',
        fiscal_responsibilities: ['O-13'],
        tax_regime: '48',
      },
    });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.type, 'company');
    const wrongDigit = await co.req({
      url: '/v1/customers',
      body: { first_name: 'Acme', document_type: 'NIT', document_number: '900123456', document_verification: '3' },
    });
    expectValidation(wrongDigit, 'document_verification');
  });

  test('validation errors name each field', async () => {
    expectValidation(await co.req({ url: '/v1/customers', body: {} }), 'first_name');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, phone: '3001234567' } }), 'phone');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, email: 'not-an-email' } }), 'email');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, type: 'company' } }), 'document_type');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, type: 'natural', document_type: 'NIT' } }), 'document_type');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, address: { line: 'x' } } }), 'address.city_code');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, address: { line: 'x', city_code: '99999' } } }), 'address.city_code');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, first_name: 'x'.repeat(101) } }), 'first_name');
    expectValidation(await co.req({ url: '/v1/customers', body: { ...ana, related_to: '00000000-0000-4000-8000-000000000000' } }), 'related_to');
    const count = await co.req({ url: '/v1/customers' });
    assert.equal(count.body.data.filter((c: { email: string }) => c.email === 'ana@example.com').length, 0, 'failed creates change nothing');
  });

  test('null means absent and metadata is normalised', async () => {
    const res = await co.req({
      url: '/v1/customers',
      body: {
        first_name: 'Luis',
        last_name: null,
        email: null,
        metadata: [
          { key: 'crm', value: 42 },
          { key: 'vip', value: true },
        ],
      },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.last_name, null);
    assert.deepEqual(res.body.metadata, { crm: '42', vip: 'true' });
    const nested = await co.req({ url: '/v1/customers', body: { first_name: 'Eva', metadata: { a: { key: 'plan', value: 'gold' }, b: 1 } } });
    assert.deepEqual(nested.body.metadata, { plan: 'gold', b: '1' });
  });

  test('list filters, sorting, pagination and the envelope', async () => {
    const other = await h.company('Paging SAS');
    for (let i = 0; i < 5; i++) {
      const r = await other.req({ url: '/v1/customers', body: { first_name: `P${i}`, phone: `+57300000000${i}` } });
      assert.equal(r.status, 200);
      h.clock.advance(1000);
    }
    const page = await other.req({ url: '/v1/customers?per_page=2&page=2&sort=created_at' });
    assert.equal(page.status, 200, page.raw);
    assert.deepEqual(
      page.body.data.map((c: { first_name: string }) => c.first_name),
      ['P2', 'P3'],
    );
    assert.equal(page.body.total, 5);
    assert.equal(page.body.last_page, 3);
    assert.equal(page.body.from, 3);
    assert.equal(page.body.to, 4);
    assert.equal(page.body.current_page, 2);
    assert.equal(page.body.path, 'http://recaudo.test/v1/customers');
    assert.match(page.body.next_page_url, /page=3/);
    assert.match(page.body.prev_page_url, /page=1/);
    assert.match(page.body.first_page_url, /per_page=2/);
    const desc = await other.req({ url: '/v1/customers?sort=-created_at&per_page=1' });
    assert.equal(desc.body.data[0].first_name, 'P4');
    const byPhone = await other.req({ url: '/v1/customers?filter[phone]=%2B573000000001' });
    assert.deepEqual(
      byPhone.body.data.map((c: { first_name: string }) => c.first_name),
      ['P1'],
    );
    expectError(await other.req({ url: '/v1/customers?filter[name]=x' }), 400);
    expectError(await other.req({ url: '/v1/customers?sort=name' }), 400);
    expectValidation(await other.req({ url: '/v1/customers?per_page=101' }), 'per_page');
    expectValidation(await other.req({ url: '/v1/customers?per_page=0' }), 'per_page');
    const ignored = await other.req({ url: '/v1/customers?foo=bar' });
    assert.equal(ignored.status, 200);
    const empty = await other.req({ url: '/v1/customers?page=9' });
    assert.deepEqual(empty.body.data, []);
    assert.equal(empty.body.from, null);
  });

  test('related collections answer lists', async () => {
    const c = (await co.req({ url: '/v1/customers', body: { first_name: 'Rel' } })).body;
    for (const rel of ['cards', 'issuing-cards']) {
      const r = await co.req({ url: `/v1/customers/${c.id}/${rel}` });
      assert.equal(r.status, 200, r.raw);
      assert.deepEqual(r.body.data, []);
    }
  });

  test('scoping: other company and other environment', async () => {
    const c = (await co.req({ url: '/v1/customers', body: { first_name: 'Scoped' } })).body;
    const other = await h.company('Other SAS');
    for (const req of [
      { url: `/v1/customers/${c.id}` },
      { method: 'PUT' as const, url: `/v1/customers/${c.id}`, body: { last_name: 'X' } },
      { method: 'DELETE' as const, url: `/v1/customers/${c.id}` },
      { url: `/v1/customers/${c.id}/cards` },
    ]) {
      await expectScoped(co, other, req);
    }
    expectError(await co.req({ url: '/v1/customers/not-a-uuid' }), 404, 'record_not_found', 10002);
    const live = await co.req({ url: '/v1/customers', env: 'live' });
    assert.equal(
      live.body.data.some((x: { id: string }) => x.id === c.id),
      false,
      'test data never shows in live lists',
    );
  });
});
