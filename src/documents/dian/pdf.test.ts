import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import fc from 'fast-check';
import type { BuiltDocument, FiscalDocument } from './model.ts';
import { documentIdentityCode } from './cufe.ts';
import { formatCop, formatRate, groupTaxes, renderFiscalPdf } from './pdf.ts';

// jsqr is CommonJS with a `default` in its typings: take whichever the loader hands us.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule.default }).default ?? jsQRModule) as unknown as typeof jsQRModule.default;

const hasPoppler = spawnSync('pdftoppm', ['-v']).error === undefined && spawnSync('pdftotext', ['-v']).error === undefined;

function fixture(kind: 'invoice' | 'credit_note' = 'invoice', lineCount = 3): FiscalDocument {
  const lines = Array.from({ length: lineCount }, (_, i) => {
    const rate = [1900, 500, 0, 800][i % 4];
    const subtotal = BigInt(1_000_000 + i * 12_345);
    const tax = (subtotal * BigInt(rate)) / 10_000n;
    return {
      description: `Servicio de cobranza nº ${i + 1} — gestión de cartera`,
      quantity: i % 2 ? 2.5 : 1,
      unitAmount: subtotal,
      subtotal,
      taxCode: (i % 4 === 3 ? '04' : '01') as '01' | '04',
      taxRateBp: rate,
      taxAmount: tax,
      total: subtotal + tax,
      taxBehavior: 'exclusive' as const,
    };
  });
  const subtotal = lines.reduce((s, l) => s + l.subtotal, 0n);
  const taxAmount = lines.reduce((s, l) => s + l.taxAmount, 0n);
  return {
    kind,
    environment: 'test',
    number: kind === 'invoice' ? 'SETP990000042' : 'NC1',
    prefix: kind === 'invoice' ? 'SETP' : 'NC',
    folio: kind === 'invoice' ? 990000042 : 1,
    issueDate: '2026-11-20',
    issueTime: '10:15:30-05:00',
    dueDate: '2026-12-20',
    currency: 'COP',
    note: null,
    issuer: {
      nit: '900206480',
      dv: '2',
      legalName: 'Compañía Recaudadora S.A.S.',
      tradeName: 'Recaudo',
      address: { line: 'Carrera 7 # 71-21', cityCode: '11001', country: 'CO' },
      email: 'facturas@example.co',
      phone: null,
      responsibilities: ['O-13', 'O-15'],
      taxRegime: '48',
      softwareId: '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0',
      softwarePin: '12345',
      certificate: null,
    },
    receiver: {
      kind: 'company',
      documentType: 'NIT',
      documentNumber: '860002964',
      dv: '4',
      name: 'Cliente Ejemplo Ltda.',
      email: 'cuentas@cliente.co',
      phone: null,
      address: { line: 'Calle 10 # 5-51', cityCode: '05001', country: 'CO' },
      responsibilities: ['R-99-PN'],
      taxRegime: '49',
    },
    resolution: {
      number: '18760000001',
      prefix: kind === 'invoice' ? 'SETP' : 'NC',
      from: 990000000,
      to: 995000000,
      validFrom: '2019-01-19',
      validUntil: '2030-01-19',
      technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
    },
    lines,
    totals: { subtotal, taxAmount, total: subtotal + taxAmount },
    paymentMeansCode: '42',
    paymentMethod: '2',
    reference:
      kind === 'credit_note'
        ? { number: 'SETP990000042', cufe: 'a'.repeat(96), issueDate: '2026-11-20', discrepancyCode: '2', reason: 'Anulación de factura' }
        : null,
  };
}

function built(doc: FiscalDocument): BuiltDocument {
  const code = documentIdentityCode(doc);
  const qrText = [
    `NumFac: ${doc.number}`,
    `FecFac: ${doc.issueDate}`,
    `HorFac: ${doc.issueTime}`,
    `NitFac: ${doc.issuer.nit}`,
    `DocAdq: ${doc.receiver.documentNumber}`,
    `ValFac: 30037.03`,
    `ValIva: 4200.00`,
    `ValOtroIm: 0.00`,
    `ValTolFac: 34237.03`,
    `CUFE: ${code}`,
    `https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=${code}`,
  ].join('\n');
  return { xml: '<Invoice/>', identityCode: code, qrText };
}

function renderAndRead(pdf: Buffer): { text: string; pages: string[]; dir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'recaudo-pdf-'));
  writeFileSync(path.join(dir, 'doc.pdf'), pdf);
  execFileSync('pdftoppm', ['-png', '-r', '150', path.join(dir, 'doc.pdf'), path.join(dir, 'page')]);
  const text = execFileSync('pdftotext', ['-layout', path.join(dir, 'doc.pdf'), '-'], { encoding: 'utf8' });
  const pages = readdirSync(dir)
    .filter((f) => f.endsWith('.png'))
    .sort()
    .map((f) => path.join(dir, f));
  return { text, pages, dir };
}

function decodeQr(pngPath: string): string | null {
  const png = PNG.sync.read(readFileSync(pngPath));
  const found = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  return found?.data ?? null;
}

test('money and rates in Colombian style, from bigint cents', () => {
  assert.equal(formatCop(0n), '$ 0,00');
  assert.equal(formatCop(5n), '$ 0,05');
  assert.equal(formatCop(123_456_789n), '$ 1.234.567,89');
  assert.equal(formatCop(100_000_000_000_000_001n), '$ 1.000.000.000.000.000,01');
  assert.equal(formatCop(-150_000n), '-$ 1.500,00');
  assert.equal(formatRate(1900), '19 %');
  assert.equal(formatRate(250), '2,5 %');
  assert.equal(formatRate(0), '0 %');
});

test('property: Colombian money text reads back to the same cents', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (cents) => {
      const text = formatCop(cents);
      assert.match(text, /^-?\$ \d{1,3}(\.\d{3})*,\d{2}$/);
      const negative = text.startsWith('-');
      const digits = text.replace(/[^0-9]/g, '');
      assert.equal((negative ? -1n : 1n) * BigInt(digits), cents);
    }),
  );
});

test('taxes are grouped by code and rate', () => {
  const groups = groupTaxes(fixture('invoice', 8).lines);
  assert.deepEqual(
    groups.map((g) => `${g.code}:${g.rateBp}`),
    ['01:0', '01:500', '01:1900', '04:800'],
  );
  const doc = fixture('invoice', 8);
  assert.equal(
    groups.reduce((s, g) => s + g.tax, 0n),
    doc.totals.taxAmount,
  );
});

test('the PDF is deterministic: same document, same bytes', async () => {
  const doc = fixture();
  const b = built(doc);
  const one = await renderFiscalPdf(doc, b);
  const two = await renderFiscalPdf(doc, b);
  assert.ok(one.subarray(0, 5).toString() === '%PDF-');
  assert.ok(one.equals(two));
});

test(
  'invoice PDF: the QR decodes to the QR text, the CUFE and the Spanish content are present',
  { skip: !hasPoppler && 'pdftoppm/pdftotext not installed' },
  async () => {
    const doc = fixture('invoice', 3);
    const b = built(doc);
    const { text, pages, dir } = renderAndRead(await renderFiscalPdf(doc, b));
    try {
      assert.equal(pages.length, 1);
      assert.equal(decodeQr(pages[0]), b.qrText);
      const flat = text.replace(/\s+/g, ' ');
      assert.ok(text.includes(b.identityCode), 'the CUFE is printed on one line');
      for (const expected of [
        'Factura electrónica de venta',
        'SETP990000042',
        '2026-11-20',
        '10:15:30-05:00',
        '2026-12-20',
        'Compañía Recaudadora S.A.S.',
        '900206480-2',
        'Bogotá',
        'O-13; O-15',
        'Cliente Ejemplo Ltda.',
        'NIT 860002964-4',
        'cuentas@cliente.co',
        'Descripción',
        'Valor unitario',
        'IVA 19 %',
        'Autorización de numeración de facturación DIAN No. 18760000001',
        'rango SETP990000000 al SETP995000000',
        'vigencia desde 2019-01-19 hasta 2030-01-19',
        '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0',
        formatCop(doc.totals.total),
        'CUFE',
      ]) {
        assert.ok(flat.includes(expected), `missing ${expected}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'credit note PDF: title, CUDE, the referenced invoice; many lines flow onto more pages',
  { skip: !hasPoppler && 'pdftoppm/pdftotext not installed' },
  async () => {
    const doc = fixture('credit_note', 60);
    const b = built(doc);
    const { text, pages, dir } = renderAndRead(await renderFiscalPdf(doc, b));
    try {
      assert.ok(pages.length >= 2);
      assert.equal(decodeQr(pages[0]), b.qrText);
      const flat = text.replace(/\s+/g, ' ');
      for (const expected of [
        'Nota crédito electrónica',
        'NC1',
        'CUDE',
        b.identityCode,
        'Factura referenciada',
        'SETP990000042',
        'a'.repeat(96),
        'Anulación de factura',
        'página 2 de',
      ]) {
        assert.ok(flat.includes(expected), `missing ${expected}`);
      }
      assert.ok(!flat.includes('Autorización de numeración'));
      for (let i = 1; i <= 60; i++) assert.ok(flat.includes(`nº ${i} `), `line ${i}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
