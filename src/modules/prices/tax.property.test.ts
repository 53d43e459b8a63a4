import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { ALLOWED_RATES_BP, lineAmounts, sumLines, type TaxBehavior, type TaxType } from './tax.ts';

/**
 * The tax math of PRODUCT.md, checked against an independent model in exact rationals:
 * exclusive: subtotal = gross, tax = round_half_up(gross × rate); inclusive: total = gross,
 * subtotal = round_half_up(gross / (1 + rate)), subtotal + tax = gross exactly; totals are the
 * sums of the lines, and preview over HTTP gives the same numbers as the model.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** round_half_up(n / d) for n, d > 0, by comparing the remainder with half the divisor. */
function roundHalfUp(n: bigint, d: bigint): bigint {
  const q = n / d;
  const r = n % d;
  return 2n * r >= d ? q + 1n : q;
}

const taxArb = fc.constantFrom<TaxType>('iva', 'inc').chain((type) =>
  fc.record({
    type: fc.constant(type),
    bp: fc.constantFrom(...ALLOWED_RATES_BP[type]),
    behavior: fc.constantFrom<TaxBehavior>('exclusive', 'inclusive'),
  }),
);

describe('tax math (property)', () => {
  test('each line follows the formulas exactly; totals are sums', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ unit: fc.bigInt({ min: 1n, max: 10n ** 12n }), qty: fc.integer({ min: 1, max: 1000 }), tax: taxArb }), {
          minLength: 1,
          maxLength: 20,
        }),
        (lines) => {
          const amounts = lines.map((l) => {
            const a = lineAmounts(l.unit, l.qty, l.tax.bp, l.tax.behavior);
            const gross = l.unit * BigInt(l.qty);
            const rate = BigInt(l.tax.bp);
            if (l.tax.behavior === 'exclusive') {
              assert.equal(a.subtotal, gross);
              assert.equal(a.taxAmount, roundHalfUp(gross * rate, 10_000n));
            } else {
              assert.equal(a.total, gross);
              assert.equal(a.subtotal, roundHalfUp(gross * 10_000n, 10_000n + rate));
              assert.equal(a.subtotal + a.taxAmount, gross, 'inclusive: subtotal + tax = gross exactly');
            }
            assert.equal(a.subtotal + a.taxAmount, a.total);
            assert.ok(a.taxAmount >= 0n && a.subtotal >= 0n);
            return a;
          });
          const sum = sumLines(amounts);
          assert.equal(
            sum.subtotal,
            amounts.reduce((s, a) => s + a.subtotal, 0n),
          );
          assert.equal(
            sum.taxAmount,
            amounts.reduce((s, a) => s + a.taxAmount, 0n),
          );
          assert.equal(sum.total, sum.subtotal + sum.taxAmount);
        },
      ),
      { numRuns: RUNS * 5 },
    );
  });

  test('half-way cases round up', () => {
    assert.equal(lineAmounts(1010n, 1, 500, 'exclusive').taxAmount, 51n); // 50.5
    assert.equal(lineAmounts(1030n, 1, 500, 'exclusive').taxAmount, 52n); // 51.5
    assert.equal(lineAmounts(1009n, 1, 500, 'exclusive').taxAmount, 50n); // 50.45
    // inclusive: 105 / 1.05 = 100 exactly; 2 / 1.19 = 1.68 → 2, tax 0
    assert.deepEqual(lineAmounts(105n, 1, 500, 'inclusive'), { subtotal: 100n, taxAmount: 5n, total: 105n });
    assert.deepEqual(lineAmounts(2n, 1, 1900, 'inclusive'), { subtotal: 2n, taxAmount: 0n, total: 2n });
    // 1785 / 1.19 = 1500 exactly
    assert.deepEqual(lineAmounts(1785n, 1, 1900, 'inclusive'), { subtotal: 1500n, taxAmount: 285n, total: 1785n });
  });

  describe('preview over HTTP matches the model', () => {
    let h: Harness;
    let co: Company;
    const priceIds: { id: string; unit: bigint; bp: number; behavior: TaxBehavior }[] = [];
    before(async () => {
      h = await createHarness();
      co = await h.company();
      for (const [unit, rate, behavior, type] of [
        [150_000, 19, 'exclusive', 'iva'],
        [333_333, 5, 'inclusive', 'iva'],
        [99_999, 8, 'inclusive', 'inc'],
        [1_000_001, 0, 'exclusive', 'iva'],
      ] as const) {
        const p = (await co.req({ url: '/v1/prices', body: { name: `P${unit}`, unit_amount: unit, tax: { rate, behavior, type } } })).body;
        priceIds.push({ id: p.id, unit: BigInt(unit), bp: rate * 100, behavior });
      }
    });
    after(() => h.close());

    test('random catalog and free lines', async () => {
      const lineArb = fc.oneof(
        fc.record({
          kind: fc.constant('catalog' as const),
          price: fc.integer({ min: 0, max: 3 }),
          qty: fc.integer({ min: 1, max: 50 }),
          override: fc.option(taxArb, { nil: undefined }),
        }),
        fc.record({
          kind: fc.constant('free' as const),
          unit: fc.integer({ min: 1, max: 50_000_000 }),
          qty: fc.integer({ min: 1, max: 50 }),
          tax: fc.option(taxArb, { nil: undefined }),
        }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(lineArb, { minLength: 1, maxLength: 8 }), async (lines) => {
          const items = lines.map((l) =>
            l.kind === 'catalog'
              ? {
                  price_id: priceIds[l.price].id,
                  quantity: l.qty,
                  ...(l.override ? { tax: { rate: l.override.bp / 100, behavior: l.override.behavior, type: l.override.type } } : {}),
                }
              : {
                  description: 'libre',
                  unit_amount: l.unit,
                  quantity: l.qty,
                  ...(l.tax ? { tax: { rate: l.tax.bp / 100, behavior: l.tax.behavior, type: l.tax.type } } : {}),
                },
          );
          const model = lines.map((l) => {
            if (l.kind === 'catalog') {
              const p = priceIds[l.price];
              return lineAmounts(p.unit, l.qty, l.override?.bp ?? p.bp, l.override?.behavior ?? p.behavior);
            }
            return lineAmounts(BigInt(l.unit), l.qty, l.tax?.bp ?? 0, l.tax?.behavior ?? 'exclusive');
          });
          const sum = sumLines(model);
          const res = await co.req({ url: '/v1/invoices/preview', body: { items } });
          if (sum.total < 100_000n || sum.total > 500_000_000_00n) {
            assert.equal(res.body.code, 'invalid_invoice_line', res.raw);
            return;
          }
          assert.equal(res.status, 200, res.raw);
          res.body.data.items.forEach((line: Record<string, number>, i: number) => {
            assert.equal(line.subtotal, Number(model[i].subtotal));
            assert.equal(line.tax_amount, Number(model[i].taxAmount));
            assert.equal(line.total, Number(model[i].total));
          });
          assert.equal(res.body.data.subtotal, Number(sum.subtotal));
          assert.equal(res.body.data.tax_amount, Number(sum.taxAmount));
          assert.equal(res.body.data.total, Number(sum.total));
        }),
        { numRuns: Math.max(20, Math.floor(RUNS / 4)) },
      );
    });
  });
});
