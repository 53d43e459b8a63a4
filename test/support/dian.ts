import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import nodePath from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FiscalDocument, FiscalIssuer, FiscalLine, FiscalReceiver, SigningCertificate, TaxCode } from '../../src/documents/dian/model.ts';
import { nitCheckDigit } from '../../src/documents/dian/nit.ts';
import { generateTestCertificate } from '../../src/documents/dian/certificate.ts';
import { documentIdentityCode } from '../../src/documents/dian/cufe.ts';

/**
 * Test data for the legal document (used by the tests and bench/sign.ts; never by the service):
 * DIAN's habilitación numbering, an issuer, receivers, and a seeded corpus of invoices and credit
 * notes covering natural and company receivers, IVA 0/5/19 and INC, tax-inclusive and exclusive
 * lines, many lines, hostile text, and full and partial credit notes.
 */

export const TEST_RESOLUTION = {
  number: '18760000001',
  prefix: 'SETP',
  from: 990000000,
  to: 995000000,
  validFrom: '2019-01-19',
  validUntil: '2030-01-19',
  technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
};

let cachedCert: (SigningCertificate & { certificatePem: string }) | null = null;
/** One self-signed certificate per process (generated, never committed). */
export function testCertificate(): SigningCertificate & { certificatePem: string } {
  cachedCert ??= generateTestCertificate({
    nit: '900373115',
    legalName: 'Recaudo Pruebas S.A.S.',
    password: 'test-only',
    validFrom: new Date('2024-01-01T00:00:00Z'),
    years: 10,
  });
  return cachedCert;
}

export function testIssuer(certificate: SigningCertificate | null = testCertificate()): FiscalIssuer {
  return {
    nit: '900373115',
    dv: String(nitCheckDigit('900373115')),
    legalName: 'Recaudo Pruebas S.A.S.',
    tradeName: 'Recaudo',
    address: { line: 'Cra 7 # 71-21 Of. 1201', cityCode: '11001', country: 'CO' },
    email: 'facturacion@recaudo.test',
    phone: '6017435000',
    responsibilities: ['O-13', 'O-15'],
    taxRegime: '48',
    softwareId: '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0',
    softwarePin: '12345',
    certificate,
  };
}

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const div = (n: bigint, d: bigint) => (n * 2n + d) / (2n * d); // half-up for non-negative numbers

/** A line the way issue 6 computes it: exclusive adds tax on top; inclusive splits the gross. */
export function makeLine(
  description: string,
  quantity: number,
  unitAmount: bigint,
  taxCode: TaxCode,
  taxRateBp: number,
  taxBehavior: 'exclusive' | 'inclusive',
): FiscalLine {
  const milli = BigInt(Math.round(quantity * 1000));
  const gross = div(unitAmount * milli, 1000n);
  let subtotal: bigint, taxAmount: bigint;
  if (taxBehavior === 'exclusive') {
    subtotal = gross;
    taxAmount = div(subtotal * BigInt(taxRateBp), 10000n);
  } else {
    subtotal = div(gross * 10000n, 10000n + BigInt(taxRateBp));
    taxAmount = gross - subtotal;
  }
  return { description, quantity, unitAmount, subtotal, taxCode, taxRateBp, taxAmount, total: subtotal + taxAmount, taxBehavior };
}

export function totalsOf(lines: FiscalLine[]) {
  const subtotal = lines.reduce((s, l) => s + l.subtotal, 0n);
  const taxAmount = lines.reduce((s, l) => s + l.taxAmount, 0n);
  return { subtotal, taxAmount, total: subtotal + taxAmount };
}

const RECEIVERS: FiscalReceiver[] = [
  {
    kind: 'company',
    documentType: 'NIT',
    documentNumber: '800197268',
    dv: '4',
    name: 'Comercializadora Andina S.A.S.',
    email: 'compras@andina.test',
    phone: '6044440000',
    address: { line: 'Calle 10 # 43-12', cityCode: '05001', country: 'CO' },
    responsibilities: ['O-13'],
    taxRegime: '48',
  },
  {
    kind: 'company',
    documentType: 'NIT',
    documentNumber: '860002964',
    dv: '4',
    name: 'Distribuidora "La 14" & Cía. Ltda.',
    email: null,
    phone: null,
    address: { line: 'Av. 6N # 23-45 <Local 3>', cityCode: '76001', country: 'CO' },
    responsibilities: ['O-15', 'O-23'],
    taxRegime: '49',
  },
  {
    kind: 'natural',
    documentType: 'CC',
    documentNumber: '1020304050',
    dv: null,
    name: 'María José Ñáñez Peña',
    email: 'maria@example.test',
    phone: '3001234567',
    address: { line: 'Cl 45 # 12-30 Apto 502', cityCode: '11001', country: 'CO' },
    responsibilities: ['R-99-PN'],
    taxRegime: '49',
  },
  {
    kind: 'natural',
    documentType: 'CE',
    documentNumber: '456789',
    dv: null,
    name: "Jean-Luc O'Brien",
    email: 'jl@example.test',
    phone: null,
    address: null,
    responsibilities: [],
    taxRegime: null,
  },
  {
    kind: 'natural',
    documentType: 'PASSPORT',
    documentNumber: 'AB123456',
    dv: null,
    name: 'Anna Müller',
    email: null,
    phone: null,
    address: { line: 'Hotel Caribe, Bocagrande', cityCode: '13001', country: 'CO' },
    responsibilities: [],
    taxRegime: null,
  },
  {
    kind: 'company',
    documentType: 'NIT',
    documentNumber: '900206480',
    dv: '2',
    name: 'Servicios Técnicos del Café S.A.',
    email: 'ap@cafe.test',
    phone: '6068800000',
    address: { line: 'Km 2 vía Chinchiná', cityCode: '17001', country: 'CO' },
    responsibilities: ['O-13', 'O-47'],
    taxRegime: '48',
  },
];

const TAXES: Array<[TaxCode, number]> = [
  ['01', 1900],
  ['01', 500],
  ['01', 0],
  ['04', 800],
  ['04', 400],
  ['04', 1600],
];
const WORDS = [
  'Servicio de soporte',
  'Licencia anual',
  'Café tostado 500 g',
  'Consultoría & diseño',
  'Cable <HDMI> 2 m',
  'Almuerzo ejecutivo',
  'Plan "Pro"',
  'Línea 1\r\nLínea 2',
  'Emoji 🚀 envío',
  'Tab\tseparado',
];

export interface CorpusEntry {
  document: FiscalDocument;
  label: string;
}

export function makeInvoice(
  n: number,
  random: () => number,
  issuer: FiscalIssuer,
  opts: { lines?: number; receiver?: FiscalReceiver; taxBehavior?: 'exclusive' | 'inclusive'; taxes?: Array<[TaxCode, number]> } = {},
): FiscalDocument {
  const lineCount = opts.lines ?? 1 + Math.floor(random() * 8);
  const lines: FiscalLine[] = [];
  for (let i = 0; i < lineCount; i++) {
    const [code, rate] = (opts.taxes ?? TAXES)[Math.floor(random() * (opts.taxes ?? TAXES).length)];
    const qty = random() < 0.2 ? Math.round(random() * 1000 + 25) / 100 : 1 + Math.floor(random() * 12);
    const unit = BigInt(100 + Math.floor(random() * 250_000_00));
    const behavior = opts.taxBehavior ?? (random() < 0.5 ? 'exclusive' : 'inclusive');
    lines.push(makeLine(`${WORDS[Math.floor(random() * WORDS.length)]} #${i + 1}`, qty, unit, code, rate, behavior));
  }
  const folio = TEST_RESOLUTION.from + n;
  const day = 1 + (n % 28);
  const paymentMethod = random() < 0.5 ? '1' : '2';
  return {
    kind: 'invoice',
    environment: 'test',
    number: `${TEST_RESOLUTION.prefix}${folio}`,
    prefix: TEST_RESOLUTION.prefix,
    folio,
    issueDate: `2026-10-${String(day).padStart(2, '0')}`,
    issueTime: `${String(8 + (n % 10)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}:07-05:00`,
    dueDate: paymentMethod === '2' ? `2026-11-${String(day).padStart(2, '0')}` : null,
    currency: 'COP',
    note: n % 3 === 0 ? `Pedido ${n} — entregar en portería & avisar <urgente>` : null,
    issuer,
    receiver: opts.receiver ?? RECEIVERS[n % RECEIVERS.length],
    resolution: { ...TEST_RESOLUTION },
    lines,
    totals: totalsOf(lines),
    paymentMeansCode: ['10', '42', '47', '48', 'ZZZ'][n % 5],
    paymentMethod,
    reference: null,
  };
}

/** A credit note for an invoice: full (cancellation, every line) or partial (return of some quantities). */
export function makeCreditNote(invoice: FiscalDocument, n: number, full: boolean): FiscalDocument {
  const lines = full
    ? invoice.lines
    : invoice.lines
        .slice(0, Math.max(1, Math.ceil(invoice.lines.length / 2)))
        .map((l) =>
          makeLine(
            l.description,
            Number.isInteger(l.quantity) && l.quantity > 1 ? l.quantity - 1 : l.quantity / 2,
            l.unitAmount,
            l.taxCode,
            l.taxRateBp,
            l.taxBehavior,
          ),
        );
  return {
    ...invoice,
    kind: 'credit_note',
    number: `NC${n}`,
    prefix: 'NC',
    folio: n,
    issueDate: invoice.issueDate,
    issueTime: '23:10:00-05:00',
    dueDate: null,
    note: null,
    resolution: { ...invoice.resolution, prefix: 'NC', from: 1, to: 100000, technicalKey: null },
    lines,
    totals: totalsOf(lines),
    reference: {
      number: invoice.number,
      cufe: documentIdentityCode(invoice),
      issueDate: invoice.issueDate,
      discrepancyCode: full ? '2' : '1',
      reason: full ? 'Anulación de la factura electrónica' : 'Devolución parcial de mercancía',
    },
  };
}

/** The acceptance corpus: `size` documents, two in three invoices, the rest credit notes. */
export function makeCorpus(size = 60, seed = 7, certificate: SigningCertificate = testCertificate()): CorpusEntry[] {
  const random = rng(seed);
  const issuer = testIssuer(certificate);
  const out: CorpusEntry[] = [];
  const invoices: FiscalDocument[] = [];
  let n = 0;
  const special: Array<[string, Parameters<typeof makeInvoice>[3]]> = [
    ['150 lines, mixed taxes', { lines: 150 }],
    ['IVA 19 exclusive, company', { receiver: RECEIVERS[0], taxes: [['01', 1900]], taxBehavior: 'exclusive' }],
    ['IVA 19 inclusive, natural', { receiver: RECEIVERS[2], taxes: [['01', 1900]], taxBehavior: 'inclusive' }],
    [
      'IVA 5 and 0',
      {
        taxes: [
          ['01', 500],
          ['01', 0],
        ],
        lines: 6,
      },
    ],
    ['INC only', { receiver: RECEIVERS[3], taxes: [['04', 800]], lines: 3 }],
    ['IVA 0 only', { taxes: [['01', 0]], lines: 2 }],
  ];
  for (const [label, opts] of special) {
    const d = makeInvoice(++n, random, issuer, opts);
    invoices.push(d);
    out.push({ document: d, label: `invoice ${d.number}: ${label}` });
  }
  while (out.length < Math.ceil((size * 2) / 3)) {
    const d = makeInvoice(++n, random, issuer);
    invoices.push(d);
    out.push({ document: d, label: `invoice ${d.number}: ${d.lines.length} lines, ${d.receiver.kind} receiver` });
  }
  let k = 0;
  while (out.length < size) {
    const inv = invoices[k % invoices.length];
    const full = k % 2 === 0;
    const d = makeCreditNote(inv, ++k, full);
    out.push({ document: d, label: `credit note ${d.number} (${full ? 'full' : 'partial'}) of ${inv.number}` });
  }
  return out;
}

// ---- external checkers for the tests (xmllint, xmlsec1), run in batches ----

/** `../shared/data/ubl21-dian-xsd` relative to the repository (present in CI; tests skip without it). */
export const XSD_DIR = nodePath.resolve(nodePath.dirname(fileURLToPath(import.meta.url)), '../../../shared/data/ubl21-dian-xsd');
export const XSD = {
  Invoice: nodePath.join(XSD_DIR, 'maindoc/DIAN-Invoice-2.1.xsd'),
  CreditNote: nodePath.join(XSD_DIR, 'maindoc/DIAN-CreditNote-2.1.xsd'),
  AttachedDocument: nodePath.join(XSD_DIR, 'maindoc/UBL-AttachedDocument-2.1.xsd'),
  ApplicationResponse: nodePath.join(XSD_DIR, 'maindoc/UBL-ApplicationResponse-2.1.xsd'),
};

export function hasTool(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).status === 0;
}

export function skipSchemaReason(): string | false {
  if (!fs.existsSync(XSD.Invoice)) return `UBL 2.1 + DIAN XSDs not found at ${XSD_DIR} (../shared/data/ubl21-dian-xsd): schema validation skipped`;
  if (!hasTool('xmllint')) return 'xmllint not installed (apt-get install libxml2-utils): schema validation skipped';
  return false;
}

export function skipXmlsecReason(): string | false {
  return hasTool('xmlsec1') ? false : 'xmlsec1 not installed (apt-get install xmlsec1): independent signature check skipped';
}

export function tempDir(label: string): string {
  return fs.mkdtempSync(nodePath.join(os.tmpdir(), `recaudo-dian-${label}-`));
}

/** Validates files against one schema in a single xmllint run; returns the error output per failing file. */
export function xmllintBatch(schema: string, files: string[]): { ok: boolean; output: string } {
  const r = spawnSync('xmllint', ['--noout', '--nonet', '--schema', schema, ...files], { encoding: 'utf8', maxBuffer: 64 << 20 });
  // libxml2 cannot hold xs:integer over 24 digits: our serials are 64-bit, so no exception is needed.
  return { ok: r.status === 0, output: (r.stderr ?? '') + (r.stdout ?? '') };
}

/** Verifies signatures with xmlsec1 in one run (it stops at the first failure). */
export function xmlsecBatch(certPem: string, files: string[]): { ok: boolean; verified: number; output: string } {
  const dir = tempDir('cert');
  const pem = nodePath.join(dir, 'cert.pem');
  fs.writeFileSync(pem, certPem);
  const r = spawnSync('xmlsec1', ['--verify', '--trusted-pem', pem, ...files], { encoding: 'utf8', maxBuffer: 64 << 20 });
  fs.rmSync(dir, { recursive: true, force: true });
  const output = (r.stderr ?? '') + (r.stdout ?? '');
  return { ok: r.status === 0, verified: (output.match(/^OK$/gm) ?? []).length, output };
}
