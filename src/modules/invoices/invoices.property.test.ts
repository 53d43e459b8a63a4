import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { fromBasisPoints } from '../../platform/money.ts';
import { ALLOWED_RATES_BP, type TaxType } from '../prices/tax.ts';
import { splitOverLines } from './credit-notes.ts';
import { invoiceableCustomer } from '../../../test/support/invoices.ts';

/**
 * For random line sets (exclusive and inclusive, catalog and free lines, several rates of IVA and
 * INC, tax overrides on catalog lines) POST /invoices/preview and POST /invoices give identical
 * lines and totals, and the totals are the sums of the lines. Credit-note splits are exact.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);

const taxArb = fc.constantFrom<TaxType>('iva', 'inc').chain((type) =>
  fc.record({
    type: fc.constant(type),
    rate: fc.constantFrom(...ALLOWED_RATES_BP[type].map((bp) => fromBasisPoints(bp))),
    behavior: fc.constantFrom('exclusive', 'inclusive'),
  }),
);

describe('invoices: preview and create agree', () => {
  let h: Harness;
  let co: Company;
  let customer: any;
  const prices: string[] = [];
  before(async () => {
    h = await createHarness();
    co = await h.company();
    customer = await invoiceableCustomer(co);
    for (const [i, tax] of [{ rate: 19 }, { rate: 5, behavior: 'inclusive' }, { rate: 8, type: 'inc' }, { rate: 0 }].entries()) {
      const res = await co.req({ url: '/v1/prices', body: { name: `Producto ${i}`, unit_amount: 12_345 * (i + 1), tax } });
      assert.ok(res.status === 200 || res.status === 201, res.raw);
      prices.push(res.body.id);
    }
  });
  after(() => h.close());

  test('identical numbers; totals = sum of lines', async () => {
    const free = fc.record({
      description: fc.constantFrom('Servicio', 'Ítem ñ'),
      unit_amount: fc.integer({ min: 1, max: 50_000_000 }),
      quantity: fc.integer({ min: 1, max: 20 }),
      tax: fc.option(taxArb, { nil: undefined }),
    });
    const catalog = fc.record({
      price_id: fc.constantFrom(...prices),
      quantity: fc.integer({ min: 1, max: 20 }),
      tax: fc.option(taxArb, { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(free, catalog), { minLength: 1, maxLength: 8 }), async (items) => {
        const preview = await co.req({ url: '/v1/invoices/preview', body: { items } });
        const created = await co.req({ url: '/v1/invoices', body: { customer_id: customer.id, items } });
        if (preview.status !== 200) {
          // Outside the collectible range: both refuse the same way.
          assert.equal(created.status, preview.status, created.raw);
          assert.equal(created.body.code_name, preview.body.code_name);
          return;
        }
        assert.equal(created.status, 201, created.raw);
        const p = preview.body.data;
        assert.deepEqual(created.body.items, p.items);
        assert.deepEqual(created.body.totals, { subtotal: p.subtotal, tax_amount: p.tax_amount, total: p.total });
        const sum = (k: string) => p.items.reduce((s: number, l: any) => s + l[k], 0);
        assert.equal(p.subtotal, sum('subtotal'));
        assert.equal(p.tax_amount, sum('tax_amount'));
        assert.equal(p.total, sum('total'));
        assert.equal(Math.round(created.body.amount * 100), p.total, 'amount is the total in pesos');
        for (const l of p.items) assert.equal(l.subtotal + l.tax_amount, l.total);
      }),
      { numRuns: RUNS },
    );
  });

  test('a credit note split over the lines adds up exactly and keeps each line consistent', () => {
    const line = fc.record({ total: fc.bigInt({ min: 1n, max: 10n ** 11n }), bp: fc.constantFrom(0, 500, 1900, 800) });
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 10 }), fc.double({ min: 0, max: 1, noNaN: true }), (ls, f) => {
        const lines = ls.map((l) => ({
          price_id: null,
          description: 'x',
          quantity: 1,
          unit_amount: l.total,
          subtotal: l.total,
          tax_code: '01' as const,
          tax_rate_bp: l.bp,
          tax_behavior: 'exclusive' as const,
          tax_amount: 0n,
          total: l.total,
        }));
        const total = lines.reduce((s, l) => s + l.total, 0n);
        const amount = 1n + (BigInt(Math.floor(f * 1e6)) * (total - 1n)) / 1_000_000n;
        const split = splitOverLines(lines, amount);
        assert.equal(
          split.reduce((s, l) => s + l.total, 0n),
          amount,
        );
        for (const l of split) {
          assert.equal(l.subtotal + l.tax_amount, l.total);
          assert.ok(l.subtotal >= 0n && l.tax_amount >= 0n);
        }
      }),
      { numRuns: RUNS * 20 },
    );
  });
});
