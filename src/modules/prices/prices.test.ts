import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';

const coffee = { name: 'Café 500 g', unit_amount: 2_500_000, currency: 'COP', tax: { rate: 19, behavior: 'exclusive' } };

describe('prices', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
    other = await h.company('Other SAS');
  });
  after(() => h.close());

  test('create, read, list, update', async () => {
    const created = await co.req({ url: '/v1/prices', body: coffee });
    assert.equal(created.status, 200, created.raw);
    const p = created.body;
    assert.match(p.id, /^price_[0-9a-z]{26}$/);
    assert.deepEqual(
      { name: p.name, unit_amount: p.unit_amount, currency: p.currency, tax: p.tax, active: p.active, is_test: p.is_test },
      {
        name: 'Café 500 g',
        unit_amount: 2_500_000,
        currency: 'COP',
        tax: { rate: 19, behavior: 'exclusive', type: 'iva' },
        active: true,
        is_test: true,
      },
    );
    assert.ok(Date.parse(p.created_at) && Date.parse(p.updated_at));

    const got = await co.req({ url: `/v1/prices/${p.id}` });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, p);

    const defaults = await co.req({ url: '/v1/prices', body: { name: 'Bolsa', unit_amount: 5000 } });
    assert.equal(defaults.status, 200, defaults.raw);
    assert.equal(defaults.body.currency, 'COP');
    assert.deepEqual(defaults.body.tax, { rate: 0, behavior: 'exclusive', type: 'iva' });

    const inc = await co.req({
      url: '/v1/prices',
      body: { name: 'Almuerzo', unit_amount: 3_000_000, currency: 'USD', tax: { rate: 8, behavior: 'inclusive', type: 'inc' }, active: false },
    });
    assert.equal(inc.status, 200, inc.raw);
    assert.deepEqual(inc.body.tax, { rate: 8, behavior: 'inclusive', type: 'inc' });
    assert.equal(inc.body.active, false);

    const all = await co.req({ url: '/v1/prices?sort=created_at' });
    assert.equal(all.status, 200);
    assert.equal(all.body.total, 3);
    assert.deepEqual(
      all.body.data.map((x: { id: string }) => x.id),
      [p.id, defaults.body.id, inc.body.id],
    );
    const active = await co.req({ url: '/v1/prices?filter[active]=false' });
    assert.deepEqual(
      active.body.data.map((x: { id: string }) => x.id),
      [inc.body.id],
    );
    const usd = await co.req({ url: '/v1/prices?filter[currency]=USD' });
    assert.deepEqual(
      usd.body.data.map((x: { id: string }) => x.id),
      [inc.body.id],
    );
    const desc = await co.req({ url: '/v1/prices?sort=-created_at&per_page=1' });
    assert.equal(desc.body.data[0].id, inc.body.id);
    assert.equal(desc.body.last_page, 3);
    const live = await co.req({ url: '/v1/prices', env: 'live' });
    assert.equal(live.body.total, 0, 'test and live never mix');

    const updated = await co.req({ method: 'PUT', url: `/v1/prices/${p.id}`, body: { unit_amount: 2_600_000, tax: { rate: 5 }, active: false } });
    assert.equal(updated.status, 200, updated.raw);
    assert.equal(updated.body.unit_amount, 2_600_000);
    assert.equal(updated.body.name, 'Café 500 g');
    assert.deepEqual(updated.body.tax, { rate: 5, behavior: 'exclusive', type: 'iva' });
    assert.equal(updated.body.active, false);
  });

  test('validation errors', async () => {
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, unit_amount: '2500000' } }), 'unit_amount');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, unit_amount: 0 } }), 'unit_amount');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, unit_amount: 10.5 } }), 'unit_amount');
    expectValidation(await co.req({ url: '/v1/prices', body: { unit_amount: 100 } }), 'name');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, currency: 'EUR' } }), 'currency');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, currency: null } }), 'currency');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, tax: { rate: 18 } } }), 'tax.rate');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, tax: { rate: 19, type: 'inc' } } }), 'tax.rate');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, tax: { rate: 19, behavior: 'sometimes' } } }), 'tax.behavior');
    expectValidation(await co.req({ url: '/v1/prices', body: { ...coffee, active: 'yes' } }), 'active');
    const p = (await co.req({ url: '/v1/prices', body: coffee })).body;
    expectValidation(await co.req({ method: 'PUT', url: `/v1/prices/${p.id}`, body: { tax: { rate: 7 } } }), 'tax.rate');
    const unchanged = await co.req({ url: `/v1/prices/${p.id}` });
    assert.equal(unchanged.body.tax.rate, 19);
    expectError(await co.req({ url: '/v1/prices?filter[active]=maybe' }), 422, 'validation_error');
    expectError(await co.req({ url: '/v1/prices?filter[name]=x' }), 400);
    expectError(await co.req({ url: '/v1/prices?sort=name' }), 400);
    expectError(await co.req({ url: '/v1/prices', body: coffee, idem: false }), 409, 'idempotency_error', 10003);
  });

  test('not found and scoping', async () => {
    expectError(await co.req({ url: '/v1/prices/price_nope' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/prices/price_0000000000aaaaaaaaaaaaaaaa' }), 404, 'record_not_found', 10002);
    const p = (await co.req({ url: '/v1/prices', body: coffee })).body;
    await expectScoped(co, other, { url: `/v1/prices/${p.id}` });
    await expectScoped(co, other, { method: 'PUT', url: `/v1/prices/${p.id}`, body: { name: 'Hijacked' } });
    const after = await co.req({ url: `/v1/prices/${p.id}` });
    assert.equal(after.body.name, coffee.name);
  });
});
