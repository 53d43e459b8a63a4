import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';

describe('POST /invoices/preview', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let coffee: { id: string };
  before(async () => {
    h = await createHarness();
    co = await h.company();
    other = await h.company('Other SAS');
    coffee = (await co.req({ url: '/v1/prices', body: { name: 'Café 500 g', unit_amount: 2_500_000, tax: { rate: 19 } } })).body;
  });
  after(() => h.close());

  const preview = (items: unknown[], extra: Record<string, unknown> = {}, c?: Company) =>
    (c ?? co).req({ url: '/v1/invoices/preview', body: { items, ...extra } });

  test('catalog and free lines mix; exclusive and inclusive tax; overrides', async () => {
    const res = await preview([
      { price_id: coffee.id, quantity: 2 },
      { description: 'Servicio', unit_amount: 119_000, tax: { rate: 19, behavior: 'inclusive' } },
      { price_id: coffee.id, description: 'Café regalo', tax: { rate: 5 } },
      { description: 'Envío', unit_amount: 1010, tax: { rate: 5 } },
      { description: 'Almuerzo', unit_amount: 1000, quantity: 3, tax: { rate: 8, behavior: 'inclusive', type: 'inc' } },
      { description: 'Sin impuesto', unit_amount: 700 },
    ]);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.deepEqual(res.body.data.items, [
      {
        price_id: coffee.id,
        description: 'Café 500 g',
        quantity: 2,
        unit_amount: 2_500_000,
        subtotal: 5_000_000,
        tax_rate: 19,
        tax_amount: 950_000,
        total: 5_950_000,
      },
      { description: 'Servicio', quantity: 1, unit_amount: 119_000, subtotal: 100_000, tax_rate: 19, tax_amount: 19_000, total: 119_000 },
      {
        price_id: coffee.id,
        description: 'Café regalo',
        quantity: 1,
        unit_amount: 2_500_000,
        subtotal: 2_500_000,
        tax_rate: 5,
        tax_amount: 125_000,
        total: 2_625_000,
      },
      // 1010 × 5 % = 50.5 → 51 (half up)
      { description: 'Envío', quantity: 1, unit_amount: 1010, subtotal: 1010, tax_rate: 5, tax_amount: 51, total: 1061 },
      // 3000 / 1.08 = 2777.78 → 2778
      { description: 'Almuerzo', quantity: 3, unit_amount: 1000, subtotal: 2778, tax_rate: 8, tax_amount: 222, total: 3000 },
      { description: 'Sin impuesto', quantity: 1, unit_amount: 700, subtotal: 700, tax_rate: 0, tax_amount: 0, total: 700 },
    ]);
    const lines = res.body.data.items as { subtotal: number; tax_amount: number; total: number }[];
    assert.equal(
      res.body.data.subtotal,
      lines.reduce((s, l) => s + l.subtotal, 0),
    );
    assert.equal(
      res.body.data.tax_amount,
      lines.reduce((s, l) => s + l.tax_amount, 0),
    );
    assert.equal(
      res.body.data.total,
      lines.reduce((s, l) => s + l.total, 0),
    );
    assert.equal(res.body.data.total, 8_698_761);
  });

  test('creates nothing', async () => {
    const before = await h.runtime.deps.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('company_id', '=', co.company.id)
      .executeTakeFirst();
    const prices = (await co.req({ url: '/v1/prices' })).body.total;
    assert.equal((await preview([{ description: 'x', unit_amount: 200_000 }])).status, 200);
    const afterCount = await h.runtime.deps.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('company_id', '=', co.company.id)
      .executeTakeFirst();
    assert.equal(String(afterCount?.n), String(before?.n));
    assert.equal((await co.req({ url: '/v1/prices' })).body.total, prices);
  });

  test('invalid_invoice_line names the line that cannot be resolved', async () => {
    const ok = { description: 'ok', unit_amount: 200_000 };
    const check = async (items: unknown[], key: string, index: number, extra: Record<string, unknown> = {}) => {
      const res = await preview(items, extra);
      expectError(res, 422, 'invalid_invoice_line', 'invalid_invoice_line');
      assert.ok(res.body.errors?.[key]?.length, `errors.${key}: ${res.raw}`);
      assert.match(res.body.message, new RegExp(`line ${index}\\b`), res.raw);
    };
    await check([ok, { price_id: 'price_0000000000aaaaaaaaaaaaaaaa' }], 'items.1.price_id', 1);
    await check([ok, { price_id: 'nonsense' }], 'items.1.price_id', 1);
    const foreign = (await other.req({ url: '/v1/prices', body: { name: 'Ajeno', unit_amount: 500_000 } })).body;
    await check([{ price_id: foreign.id }], 'items.0.price_id', 0);
    const live = (await co.req({ url: '/v1/prices', env: 'live', body: { name: 'Live', unit_amount: 500_000 } })).body;
    await check([ok, ok, { price_id: live.id }], 'items.2.price_id', 2);
    const inactive = (await co.req({ url: '/v1/prices', body: { name: 'Viejo', unit_amount: 500_000, active: false } })).body;
    await check([{ price_id: inactive.id }], 'items.0.price_id', 0);
    const usd = (await co.req({ url: '/v1/prices', body: { name: 'Dólar', unit_amount: 500, currency: 'USD' } })).body;
    await check([{ price_id: coffee.id }, { price_id: usd.id }], 'items.1.price_id', 1);
    await check([ok, { price_id: usd.id }], 'items.1.price_id', 1, { currency: 'COP' });
    await check([ok, ok, { description: 'no amount' }], 'items.2', 2);
    await check([{ unit_amount: 1000 }], 'items.0', 0);
    await check([ok, { price_id: coffee.id, unit_amount: 5 }], 'items.1.unit_amount', 1);
    // A USD invoice of USD prices is fine.
    const dollars = await preview([{ price_id: usd.id, quantity: 3 }]);
    assert.equal(dollars.status, 200, dollars.raw);
    assert.equal(dollars.body.data.total, 1500);
  });

  test('a total outside the collectible range', async () => {
    const low = await preview([{ description: 'chicle', unit_amount: 99_999 }]);
    expectError(low, 422, 'invalid_invoice_line', 'invalid_invoice_line');
    assert.ok(low.body.errors.total?.length, low.raw);
    assert.equal((await preview([{ description: 'mínimo', unit_amount: 100_000 }])).status, 200);
    const high = await preview([
      { description: 'avión', unit_amount: 500_000_000_00, quantity: 1 },
      { description: 'un peso más', unit_amount: 100 },
    ]);
    expectError(high, 422, 'invalid_invoice_line', 'invalid_invoice_line');
    assert.ok(high.body.errors.total?.length, high.raw);
    assert.equal((await preview([{ description: 'máximo', unit_amount: 500_000_000_00 }])).status, 200);
    const usdLow = await preview([{ description: 'x', unit_amount: 99 }], { currency: 'USD' });
    expectError(usdLow, 422, 'invalid_invoice_line');
  });

  test('validation errors', async () => {
    expectValidation(await preview([{ description: 'x', unit_amount: '200000' }]), 'items.0.unit_amount');
    expectValidation(await preview([{ description: 'x', unit_amount: 2000.5 }]), 'items.0.unit_amount');
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000, quantity: 0 }]), 'items.0.quantity');
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000, quantity: 1.5 }]), 'items.0.quantity');
    expectValidation(
      await preview([
        { description: 'x', unit_amount: 200_000 },
        { description: 'y', unit_amount: 200_000, tax: { rate: 18 } },
      ]),
      'items.1.tax.rate',
    );
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000, tax: { rate: 19, type: 'inc' } }]), 'items.0.tax.rate');
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000, tax: { rate: 8, type: 'iva' } }]), 'items.0.tax.rate');
    expectValidation(await preview([{ price_id: coffee.id, tax: { rate: 12 } }]), 'items.0.tax.rate');
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000, tax: { behavior: 'inclusive' } }]), 'items.0.tax.rate');
    expectValidation(await preview([]), 'items');
    expectValidation(await co.req({ url: '/v1/invoices/preview', body: {} }), 'items');
    expectValidation(await preview([{ description: 'x', unit_amount: 200_000 }], { currency: 'EUR' }), 'currency');
    expectError(
      await co.req({ url: '/v1/invoices/preview', body: { items: [{ description: 'x', unit_amount: 200_000 }] }, idem: false }),
      409,
      'idempotency_error',
      10003,
    );
    expectError(await co.req({ url: '/v1/invoices/preview', body: { items: [] }, key: null }), 401, 'unauthenticated', 10000);
    expectError(await co.req({ url: '/v1/invoices/preview', body: { items: [] }, key: co.publishable_keys.test }), 404, 'record_not_found', 10002);
  });
});
