import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { chargeBody, payer } from '../../../test/support/charges.ts';
import { createPayment } from '../../../test/support/payments.ts';
import { alpha, asobancariaFile, LayoutError, num, RECORD_LENGTH } from './asobancaria.ts';
import { csvCell, decimalAmount } from './service.ts';

/**
 * GET /reports/collections (docs/reports.md): a Bogotá day's collections as an Asobancaria 2001
 * file and as CSV, with totals equal to the ledger's collections of that day.
 */

/** Splits a file into records, checking CRLF after every one. */
function records(file: string): string[] {
  assert.ok(file.endsWith('\r\n'), 'the last record ends with CRLF');
  const lines = file.slice(0, -2).split('\r\n');
  for (const l of lines) assert.equal(l.length, RECORD_LENGTH, `record of ${l.length} characters: ${JSON.stringify(l)}`);
  assert.ok(/^[\x20-\x7e\r\n]*$/.test(file), 'printable ASCII only');
  return lines;
}

describe('CSV cells (issue 29: formula injection)', () => {
  test('a text a spreadsheet would run is neutralised with an apostrophe; numbers and plain text are left as they are', () => {
    // Before: "=HYPERLINK(...)" was only quoted, and a spreadsheet still ran it.
    assert.equal(csvCell('=HYPERLINK("http://x.example","clic")'), `"'=HYPERLINK(""http://x.example"",""clic"")"`);
    assert.equal(csvCell('+57 300'), `"'+57 300"`);
    assert.equal(csvCell('@SUM(A1)'), `"'@SUM(A1)"`);
    assert.equal(csvCell('-cmd'), `"'-cmd"`);
    assert.equal(csvCell('\tcmd'), `"'\tcmd"`);
    assert.equal(csvCell('-1234.56'), '-1234.56', 'a negative amount stays a number');
    assert.equal(csvCell('FACT-001'), 'FACT-001');
    assert.equal(csvCell('a,b'), '"a,b"');
  });
});

describe('Asobancaria 2001 layout (pure)', () => {
  test('fields: zero-filled numbers, space-filled ASCII text, what does not fit is refused', () => {
    assert.equal(num(42n, 5), '00042');
    assert.throws(() => num(123456n, 5), LayoutError);
    assert.throws(() => num('-1', 5), LayoutError);
    assert.equal(alpha('Pagó Ñandú', 12), 'Pago Nandu  ');
    assert.equal(alpha('x'.repeat(60), 48).length, 48);
    assert.equal(decimalAmount(123456n), '1234.56');
    assert.equal(decimalAmount(5n), '0.05');
  });

  test('every record at its positions; controls count and sum the details', () => {
    const file = asobancariaFile({
      billerNit: '9001234567',
      serviceCode: '9001234567',
      header: { billerNit: '9001234567', collectionDate: '20260310', fileDate: '20260311', fileTime: '0815' },
      details: [
        { reference: 'FV-1001', amount: 150_000_00n, origin: '03', means: '04' },
        { reference: 'ÁRBOL', amount: 99n, origin: '03', means: '06', bankCode: '7' },
      ],
    });
    const [h01, h05, d1, d2, c08, c09, ...rest] = records(file);
    assert.equal(rest.length, 0);
    // 01: type 1-2, NIT 3-12, collection date 13-20, entity 21-23, account 24-40, file date 41-48, time 49-52, modifier 53, account type 54-55, reserved 56-162.
    assert.equal(h01.slice(0, 2), '01');
    assert.equal(h01.slice(2, 12), '9001234567');
    assert.equal(h01.slice(12, 20), '20260310');
    assert.equal(h01.slice(20, 23), '000');
    assert.equal(h01.slice(23, 40), '0'.repeat(17));
    assert.equal(h01.slice(40, 48), '20260311');
    assert.equal(h01.slice(48, 52), '0815');
    assert.equal(h01.slice(52, 53), 'A');
    assert.equal(h01.slice(53, 55), '00');
    assert.equal(h01.slice(55), ' '.repeat(107));
    // 05: type, service code 3-15, lot 16-19, reserved 20-162.
    assert.equal(h05, `05${'0009001234567'}0001${' '.repeat(143)}`);
    // 06: type, reference 3-50, amount 51-64, origin 65-66, means 67-68, operation 69-74, authorization 75-80, bank 81-83, branch 84-87, sequence 88-94, return reason 95-97, reserved 98-162.
    assert.equal(d1.slice(2, 50), 'FV-1001'.padEnd(48));
    assert.equal(d1.slice(50, 64), '00000015000000');
    assert.equal(d1.slice(64, 66), '03');
    assert.equal(d1.slice(66, 68), '04');
    assert.equal(d1.slice(68, 80), '0'.repeat(12));
    assert.equal(d1.slice(80, 83), '000');
    assert.equal(d1.slice(83, 87), '0000');
    assert.equal(d1.slice(87, 94), '0000001');
    assert.equal(d1.slice(94), ' '.repeat(68));
    assert.equal(d2.slice(2, 50), 'ARBOL'.padEnd(48));
    assert.equal(d2.slice(50, 64), '00000000000099');
    assert.equal(d2.slice(80, 83), '007');
    assert.equal(d2.slice(87, 94), '0000002');
    // 08: type, count 3-11, total 12-29, lot 30-33, reserved 34-162. 09: type, count, total, reserved 30-162.
    assert.equal(c08, `08${'000000002'}${'000000000015000099'}0001${' '.repeat(129)}`);
    assert.equal(c09, `09${'000000002'}${'000000000015000099'}${' '.repeat(133)}`);
  });

  test('a day without collections: the envelope with zero counts and totals', () => {
    const file = asobancariaFile({
      billerNit: '1',
      serviceCode: '1',
      header: { billerNit: '1', collectionDate: '20260101', fileDate: '20260102', fileTime: '0000' },
      details: [],
    });
    const lines = records(file);
    assert.deepEqual(
      lines.map((l) => l.slice(0, 2)),
      ['01', '05', '08', '09'],
    );
    assert.equal(lines[3].slice(2, 29), '0'.repeat(27));
  });
});

describe('GET /reports/collections', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  const day = '2026-03-10';

  before(async () => {
    h = await createHarness();
    co = await h.company('Recaudos del Día SAS');
    other = await h.company('Otra SAS');
    // Freeze the clock inside the Bogotá day 2026-03-10 (09:30 local = 14:30Z).
    h.clock.freeze();
    h.clock.advance(new Date('2026-03-10T14:30:00Z').getTime() - h.clock.now().getTime());
  });
  after(() => h.close());

  test('the day’s paid charges and payments, in both formats; totals equal the ledger; other days and failures left out', async () => {
    const p = await payer(h, co);
    const paid1 = await co.req({
      url: '/v1/charges',
      body: chargeBody(p.customer, { card_id: p.card }, { amount: 150000, external_id: 'pedido-1' }),
    });
    assert.equal(paid1.body.status, 'paid', paid1.raw);
    h.clock.advance(1000);
    const paid2 = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 2500.5 }) });
    assert.equal(paid2.body.status, 'paid', paid2.raw);
    h.clock.advance(1000);
    const failed = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { test_scenario: 'INSUFFICIENT_FUNDS' }) });
    assert.equal(failed.body.status, 'failed', failed.raw);
    const payment = await createPayment(co, { amount: 80000, reference: 'FV-2001' });
    h.clock.advance(1000);
    const resolved = await co.req({ url: `/v1/payments/${payment.id}/resolve`, body: { action: 'approve' } });
    assert.equal(resolved.body.status, 'approved', resolved.raw);
    // Another company's collections never appear.
    const q = await payer(h, other);
    await other.req({ url: '/v1/charges', body: chargeBody(q.customer, { card_id: q.card }, { amount: 777 }) });

    // The next Bogotá day (00:10 local on the 11th = 05:10Z): not in the 10th's report.
    h.clock.advance(new Date('2026-03-11T05:10:00Z').getTime() - h.clock.now().getTime());
    const nextDay = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 1234 }) });
    assert.equal(nextDay.body.status, 'paid');

    const res = await co.req({ url: `/v1/reports/collections?date=${day}&format=asobancaria` });
    assert.equal(res.status, 200, res.raw);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(String(res.headers['content-disposition']), /recaudo-20260310\.txt/);
    const lines = records(res.raw);
    assert.deepEqual(
      lines.map((l) => l.slice(0, 2)),
      ['01', '05', '06', '06', '06', '08', '09'],
    );
    const details = lines.filter((l) => l.startsWith('06'));
    const amounts = details.map((l) => BigInt(l.slice(50, 64)));
    assert.deepEqual(amounts, [150_000_00n, 2_500_50n, 80_000_00n]);
    assert.deepEqual(
      details.map((l) => l.slice(2, 50).trimEnd()),
      ['pedido-1', paid2.body.id, 'FV-2001'],
    );
    assert.deepEqual(
      details.map((l) => l.slice(66, 68)),
      ['04', '04', '09'],
    );
    assert.deepEqual(
      details.map((l) => l.slice(87, 94)),
      ['0000001', '0000002', '0000003'],
    );
    const total = amounts.reduce((a, b) => a + b, 0n);
    for (const control of [lines[5], lines[6]]) {
      assert.equal(Number(control.slice(2, 11)), 3);
      assert.equal(BigInt(control.slice(11, 29)), total);
    }
    assert.equal(lines[5].slice(29, 33), '0001');
    assert.equal(lines[0].slice(12, 20), '20260310');

    // The ledger's collections of that day (company_available credits of `collection` transactions) sum to the same total.
    const ledger = await h.runtime.deps.database.db
      .selectFrom('ledger_transactions as t')
      .innerJoin('ledger_entries as e', 'e.transaction_id', 't.id')
      .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
      .select((eb) => eb.fn.sum<string>('e.amount').as('sum'))
      .where('t.company_id', '=', co.company.id)
      .where('t.environment', '=', 'test')
      .where('t.kind', '=', 'collection')
      .where('a.kind', '=', 'company_available')
      .where('t.created_at', '>=', new Date('2026-03-10T05:00:00Z'))
      .where('t.created_at', '<', new Date('2026-03-11T05:00:00Z'))
      .executeTakeFirstOrThrow();
    assert.equal(BigInt(ledger.sum), total);

    const csv = await co.req({ url: `/v1/reports/collections?date=${day}&format=csv` });
    assert.equal(csv.status, 200, csv.raw);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const rows = csv.raw.trimEnd().split('\r\n');
    assert.equal(rows[0], 'date,time,reference,source_type,source_id,method,currency,amount');
    assert.deepEqual(
      rows.slice(1).map((r) => r.split(',')),
      [
        ['2026-03-10', '09:30:00', 'pedido-1', 'charge', paid1.body.id, 'card', 'COP', '150000.00'],
        ['2026-03-10', '09:30:01', paid2.body.id, 'charge', paid2.body.id, 'card', 'COP', '2500.50'],
        ['2026-03-10', '09:30:03', 'FV-2001', 'payment', payment.id, 'sandbox', 'COP', '80000.00'],
      ],
    );

    const next = records((await co.req({ url: '/v1/reports/collections?date=2026-03-11' })).raw);
    assert.deepEqual(
      next.map((l) => l.slice(0, 2)),
      ['01', '05', '06', '08', '09'],
    );
    assert.equal(BigInt(next[2].slice(50, 64)), 1234_00n);
  });

  test('the live environment has its own (empty) day; bad dates and formats are 422; a key is required', async () => {
    const live = records((await co.req({ url: `/v1/reports/collections?date=${day}`, env: 'live' })).raw);
    assert.equal(live.length, 4);
    expectValidation(await co.req({ url: '/v1/reports/collections?date=2026-02-30' }), 'date');
    expectValidation(await co.req({ url: '/v1/reports/collections?date=10-03-2026' }), 'date');
    expectValidation(await co.req({ url: '/v1/reports/collections' }), 'date');
    expectValidation(await co.req({ url: `/v1/reports/collections?date=${day}&format=xlsx` }), 'format');
    expectError(await co.req({ url: `/v1/reports/collections?date=${day}`, key: null }), 401);
  });
});
