import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { BuiltDocument, FiscalDocument } from './model.ts';
import { DianDocumentBuilder, buildDianDocument, issueInstant } from './builder.ts';
import { loadSigningKey } from './certificate.ts';
import { documentIdentityCode, identityCode, softwareSecurityCode } from './cufe.ts';
import { qrText } from './qr.ts';
import {
  makeCorpus,
  makeInvoice,
  makeCreditNote,
  rng,
  skipSchemaReason,
  skipXmlsecReason,
  tempDir,
  testCertificate,
  testIssuer,
  TEST_RESOLUTION,
  XSD,
  xmllintBatch,
  xmlsecBatch,
} from '../../../test/support/dian.ts';
import { buildUnsignedUbl, DocumentBuildError } from './ubl.ts';
import { verifyDianDocument, type DianVerifyExpectation } from './verify.ts';
import { signUblDocument } from './xades.ts';

const NOTE_RANGE = { prefix: 'NC', from: 1, to: 100000 };

function expectFor(d: FiscalDocument): DianVerifyExpectation {
  return d.kind === 'invoice'
    ? { key: TEST_RESOLUTION.technicalKey, environment: 'test', resolution: TEST_RESOLUTION, softwarePin: d.issuer.softwarePin }
    : { key: d.issuer.softwarePin, environment: 'test', resolution: NOTE_RANGE };
}

/** Builds an unsigned document, lets `edit` change its text, then signs it: a validly signed but wrong document. */
function signedWith(d: FiscalDocument, edit: (xml: string) => string): string {
  const cufe = documentIdentityCode(d);
  const unsigned = buildUnsignedUbl(d, {
    identityCode: cufe,
    qrText: qrText(d, cufe),
    softwareSecurityCode: softwareSecurityCode(d.issuer.softwareId, d.issuer.softwarePin, d.number),
  });
  const edited = edit(unsigned);
  assert.notEqual(edited, unsigned, 'the edit changed nothing');
  return signUblDocument(edited, { key: loadSigningKey(d.issuer.certificate!), signingTime: issueInstant(d) });
}

const corpus = makeCorpus(60);
const built: Array<{ document: FiscalDocument; label: string; built: BuiltDocument; file: string }> = [];
const dir = tempDir('corpus');
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('corpus: 60 documents are built (natural and company receivers, IVA 0/5/19 and INC, inclusive and exclusive, many lines, full and partial credit notes)', async () => {
  const builder = new DianDocumentBuilder();
  for (const [i, e] of corpus.entries()) {
    const b = await builder.build(e.document);
    const file = path.join(dir, `${String(i).padStart(2, '0')}-${e.document.number}.xml`);
    fs.writeFileSync(file, b.xml);
    built.push({ ...e, built: b, file });
  }
  const docs = corpus.map((e) => e.document);
  const lines = docs.flatMap((d) => d.lines);
  assert.ok(docs.length >= 50);
  assert.ok(docs.some((d) => d.receiver.kind === 'natural') && docs.some((d) => d.receiver.kind === 'company'));
  for (const [code, rate] of [
    ['01', 0],
    ['01', 500],
    ['01', 1900],
    ['04', 800],
  ] as const) {
    assert.ok(
      lines.some((l) => l.taxCode === code && l.taxRateBp === rate),
      `a line with tax ${code} at ${rate} bp`,
    );
  }
  assert.ok(lines.some((l) => l.taxBehavior === 'inclusive') && lines.some((l) => l.taxBehavior === 'exclusive'));
  assert.ok(
    docs.some((d) => d.lines.length >= 100),
    'a document with many lines',
  );
  assert.ok(
    docs.some((d) => d.reference?.discrepancyCode === '2') && docs.some((d) => d.reference?.discrepancyCode === '1'),
    'full and partial credit notes',
  );
  for (const b of built) {
    assert.equal(b.built.identityCode, documentIdentityCode(b.document));
    assert.ok(b.built.xml.includes(`>${b.built.identityCode}</cbc:UUID>`));
    assert.ok(b.built.xml.includes(`<sts:QRCode>${b.built.qrText}</sts:QRCode>`), 'the QR text is in the XML');
  }
});

test('corpus: every document validates against the UBL 2.1 + DIAN XSDs (xmllint, one run per document type)', { skip: skipSchemaReason() }, () => {
  for (const kind of ['invoice', 'credit_note'] as const) {
    const files = built.filter((b) => b.document.kind === kind).map((b) => b.file);
    assert.ok(files.length > 0);
    const r = xmllintBatch(kind === 'invoice' ? XSD.Invoice : XSD.CreditNote, files);
    assert.ok(
      r.ok,
      r.output
        .split('\n')
        .filter((l) => !l.endsWith('validates'))
        .slice(0, 20)
        .join('\n'),
    );
    assert.equal((r.output.match(/ validates$/gm) ?? []).length, files.length);
  }
});

test('corpus: every signature verifies with xmlsec1 (one run), and changing one amount breaks it', { skip: skipXmlsecReason() }, () => {
  const cert = testCertificate().certificatePem;
  const r = xmlsecBatch(
    cert,
    built.map((b) => b.file),
  );
  assert.ok(r.ok, r.output.slice(-2000));
  assert.equal(r.verified, built.length);
  const tampered = path.join(dir, 'tampered.xml');
  fs.writeFileSync(
    tampered,
    built[1].built.xml.replace(/(<cbc:PayableAmount currencyID="COP">)(\d)/, (_m, a, d) => a + ((Number(d) + 1) % 10)),
  );
  assert.notEqual(fs.readFileSync(tampered, 'utf8'), built[1].built.xml);
  const t = xmlsecBatch(cert, [tampered]);
  assert.equal(t.ok, false);
  assert.match(t.output, /FAIL|failed/);
});

test('verify.ts accepts every corpus document and returns its CUFE/CUDE', () => {
  for (const b of built) {
    const v = verifyDianDocument(b.built.xml, expectFor(b.document));
    assert.deepEqual(v.failures, [], b.label);
    assert.equal(v.ok, true);
    assert.equal(v.identityCode, b.built.identityCode);
  }
});

test('verify.ts: one changed amount breaks the signature (ZE02) and the totals', () => {
  const b = built[1];
  const xml = b.built.xml.replace(/(<cbc:PayableAmount currencyID="COP">)(\d)/, (_m, a, d) => a + ((Number(d) + 1) % 10));
  const v = verifyDianDocument(xml, expectFor(b.document));
  assert.equal(v.ok, false);
  const codes = v.failures.map((f) => f.code);
  assert.ok(codes.includes('ZE02'), JSON.stringify(v.failures));
  assert.ok(codes.includes('FAU14'));
  assert.match(v.failures.find((f) => f.code === 'ZE02')!.message, /^Regla: ZE02, Rechazo: .*document/);
});

test('verify.ts catches a wrong CUFE (FAD06) and a wrong CUDE (CAD06) in validly signed documents', () => {
  const inv = built.find((b) => b.document.kind === 'invoice')!;
  const wrongKey = { ...inv.document, resolution: { ...inv.document.resolution, technicalKey: 'not-the-technical-key' } };
  const v = verifyDianDocument(buildDianDocument(wrongKey).xml, expectFor(inv.document));
  assert.deepEqual(
    v.failures.map((f) => f.code),
    ['FAD06'],
  );
  // The same document checked against the other environment: its CUFE is for test, not live.
  assert.deepEqual(
    verifyDianDocument(inv.built.xml, { ...expectFor(inv.document), environment: 'live' }).failures.map((f) => f.code),
    ['FAD06'],
  );
  const note = built.find((b) => b.document.kind === 'credit_note')!;
  const w = verifyDianDocument(note.built.xml, { ...expectFor(note.document), key: '99999' });
  assert.deepEqual(w.failures.map((f) => f.code).sort(), ['CAB27b', 'CAD06']);
  assert.match(w.failures[0].message, /^Regla: CA/);
});

test('verify.ts catches totals that do not add up (lines → tax totals → monetary totals)', () => {
  const d = corpus[1].document;
  const payable = verifyDianDocument(
    signedWith(d, (x) => x.replace(/(<cbc:PayableAmount currencyID="COP">)(\d+)/, (_m, a, n) => a + (BigInt(n) + 1n))),
    expectFor(d),
  );
  assert.ok(
    payable.failures.some((f) => f.code === 'FAU14'),
    JSON.stringify(payable.failures),
  );
  assert.ok(!payable.failures.some((f) => f.code === 'ZE02'), 'the signature itself is valid');
  const lineExt = verifyDianDocument(
    signedWith(d, (x) =>
      x.replace(
        /(<cac:InvoiceLine><cbc:ID>1<\/cbc:ID><cbc:InvoicedQuantity[^>]*>[^<]*<\/cbc:InvoicedQuantity><cbc:LineExtensionAmount currencyID="COP">)(\d+)/,
        (_m, a, n) => a + (BigInt(n) + 100n),
      ),
    ),
    expectFor(d),
  );
  const codes = lineExt.failures.map((f) => f.code);
  assert.ok(codes.includes('FAU02') && codes.includes('FAX07'), JSON.stringify(lineExt.failures));
  const tax = verifyDianDocument(
    signedWith(d, (x) =>
      x.replace(/(<\/cac:AccountingCustomerParty>.*?<cac:TaxTotal><cbc:TaxAmount currencyID="COP">)(\d+)/, (_m, a, n) => a + (BigInt(n) + 1n)),
    ),
    expectFor(d),
  );
  assert.ok(
    tax.failures.some((f) => f.code === 'FAS07'),
    JSON.stringify(tax.failures),
  );
  assert.ok(tax.failures.some((f) => f.code === 'FAU06'));
});

test('verify.ts catches a wrong check digit (FAJ24 issuer, FAK24 receiver); the builder refuses to write one', () => {
  const d = corpus.find((e) => e.document.receiver.documentType === 'NIT' && e.document.kind === 'invoice')!.document;
  const badReceiver = verifyDianDocument(
    signedWith(d, (x) =>
      x.replace(
        /(<cac:AccountingCustomerParty>.*?<cac:PartyTaxScheme>.*?<cbc:CompanyID [^>]*schemeID=")(\d)/,
        (_m, a, dv) => a + ((Number(dv) + 1) % 10),
      ),
    ),
    expectFor(d),
  );
  assert.deepEqual(
    badReceiver.failures.map((f) => f.code),
    ['FAK24'],
  );
  const badIssuer = verifyDianDocument(
    signedWith(d, (x) =>
      x.replace(
        /(<cac:AccountingSupplierParty>.*?<cac:PartyTaxScheme>.*?<cbc:CompanyID [^>]*schemeID=")(\d)/,
        (_m, a, dv) => a + ((Number(dv) + 1) % 10),
      ),
    ),
    expectFor(d),
  );
  assert.deepEqual(
    badIssuer.failures.map((f) => f.code),
    ['FAJ24'],
  );
  assert.throws(() => buildDianDocument({ ...d, receiver: { ...d.receiver, dv: String((Number(d.receiver.dv) + 1) % 10) } }), DocumentBuildError);
  assert.throws(() => buildDianDocument({ ...d, issuer: { ...d.issuer, dv: String((Number(d.issuer.dv) + 1) % 10) } }), DocumentBuildError);
});

test('verify.ts catches a number outside the numbering range (FAB11b)', () => {
  const b = built[0];
  const v = verifyDianDocument(b.built.xml, { ...expectFor(b.document), resolution: { prefix: 'SETP', from: 990000100, to: 990000200 } });
  assert.deepEqual(
    v.failures.map((f) => f.code),
    ['FAB11b'],
  );
  const otherPrefix = verifyDianDocument(b.built.xml, { ...expectFor(b.document), resolution: { prefix: 'FE', from: 1, to: 995000000 } });
  assert.deepEqual(
    otherPrefix.failures.map((f) => f.code),
    ['FAB11b'],
  );
});

test('verify.ts: malformed or foreign XML is a structure rejection, never an exception', () => {
  for (const xml of [
    '',
    'not xml',
    '<Invoice>',
    '<?xml version="1.0"?><Other/>',
    '<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>',
    built[0].built.xml.replace('<ds:Signature', '<ds:Signatur'),
  ]) {
    const v = verifyDianDocument(xml, expectFor(built[0].document));
    assert.equal(v.ok, false);
    assert.ok(v.failures.length > 0);
  }
  const unsigned = verifyDianDocument(built[0].built.xml.replace(/<ds:Signature .*<\/ds:Signature>/, ''), expectFor(built[0].document));
  assert.deepEqual(
    unsigned.failures.map((f) => f.code),
    ['ZE02'],
  );
});

test('CUDE: the credit note identity code uses the software PIN, and the note references the invoice CUFE', () => {
  const note = built.find((b) => b.document.kind === 'credit_note' && b.document.reference?.discrepancyCode === '1')!;
  const d = note.document;
  const expected = identityCode({
    number: d.number,
    issueDate: d.issueDate,
    issueTime: d.issueTime,
    lineExtension: d.totals.subtotal,
    taxByCode: {
      '01': d.lines.filter((l) => l.taxCode === '01').reduce((s, l) => s + l.taxAmount, 0n),
      '04': d.lines.filter((l) => l.taxCode === '04').reduce((s, l) => s + l.taxAmount, 0n),
      '03': 0n,
    },
    payable: d.totals.total,
    issuerNit: d.issuer.nit,
    receiverNumber: d.receiver.documentNumber,
    key: d.issuer.softwarePin,
    environment: '2',
  });
  assert.equal(note.built.identityCode, expected);
  assert.match(note.built.xml, new RegExp(`<cbc:UUID schemeID="2" schemeName="CUDE-SHA384">${expected}</cbc:UUID>`));
  assert.match(
    note.built.xml,
    new RegExp(
      `<cac:BillingReference><cac:InvoiceDocumentReference><cbc:ID>${d.reference!.number}</cbc:ID><cbc:UUID schemeName="CUFE-SHA384">${d.reference!.cufe}</cbc:UUID><cbc:IssueDate>${d.reference!.issueDate}</cbc:IssueDate>`,
    ),
  );
  assert.match(note.built.xml, /<cac:DiscrepancyResponse><cbc:ReferenceID>[^<]+<\/cbc:ReferenceID><cbc:ResponseCode>1<\/cbc:ResponseCode>/);
  assert.match(note.built.qrText, /\nCUDE: [0-9a-f]{96}\n/);
});

test('QR text: labels, amounts and the lookup URL of the environment', () => {
  const d = makeInvoice(1, rng(3), testIssuer(), { lines: 2, taxes: [['01', 1900]] });
  const text = qrText(d, 'abc');
  const lines = text.split('\n');
  assert.deepEqual(lines.map((l) => l.split(':')[0]).slice(0, 10), [
    'NumFac',
    'FecFac',
    'HorFac',
    'NitFac',
    'DocAdq',
    'ValFac',
    'ValIva',
    'ValOtroIm',
    'ValTolFac',
    'CUFE',
  ]);
  assert.equal(lines[10], 'https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=abc');
  assert.ok(qrText({ ...d, environment: 'live' }, 'abc').endsWith('https://catalogo-vpfe.dian.gov.co/document/searchqr?documentkey=abc'));
});

test('XML text: hostile characters are escaped (carriage return as &#xD;), controls dropped, and survive a parse', () => {
  const d = makeInvoice(2, rng(5), testIssuer(), { lines: 1, taxes: [['01', 1900]] });
  d.lines[0] = { ...d.lines[0], description: 'a & b < c > d "e" \'f\'\r\ng\u0001h 🚀' };
  d.note = 'Nota\rcon retorno';
  const b = buildDianDocument(d);
  assert.ok(b.xml.includes('<cbc:Description>a &amp; b &lt; c &gt; d "e" \'f\'&#xD;\ngh 🚀</cbc:Description>'));
  assert.ok(b.xml.includes('<cbc:Note>Nota&#xD;con retorno</cbc:Note>'));
  assert.ok(!b.xml.includes('\r'));
  assert.deepEqual(verifyDianDocument(b.xml, expectFor(d)).failures, []);
});

test('builder: deterministic (same document → same bytes), SigningTime inside the certificate validity, PDF delegated', async () => {
  const d = corpus[2].document;
  assert.equal(buildDianDocument(d).xml, built[2].built.xml);
  assert.match(built[2].built.xml, new RegExp(`<xades:SigningTime>${d.issueDate}T${d.issueTime.slice(0, 8)}-05:00</xades:SigningTime>`));
  assert.throws(() => buildDianDocument(d, { signingTime: () => new Date('2001-01-01T00:00:00Z') }), /outside the certificate's validity/);
  assert.throws(() => buildDianDocument({ ...d, issuer: { ...d.issuer, certificate: null } }), DocumentBuildError);
  const calls: unknown[] = [];
  const builder = new DianDocumentBuilder({ renderPdf: async (doc, b) => (calls.push([doc, b]), Buffer.from('%PDF-')) });
  assert.equal((await builder.renderPdf(d, built[2].built)).toString(), '%PDF-');
  assert.deepEqual(calls, [[d, built[2].built]]);
  await assert.rejects(new DianDocumentBuilder().renderPdf(d, built[2].built), /no PDF renderer/);
});

test('builder: refuses documents DIAN would reject (totals, no lines, unknown municipality, unknown document type)', () => {
  const d = corpus[3].document;
  assert.throws(() => buildDianDocument({ ...d, totals: { ...d.totals, total: d.totals.total + 1n } }), DocumentBuildError);
  assert.throws(() => buildDianDocument({ ...d, lines: [], totals: { subtotal: 0n, taxAmount: 0n, total: 0n } }), DocumentBuildError);
  assert.throws(() => buildDianDocument({ ...d, issuer: { ...d.issuer, address: { ...d.issuer.address, cityCode: '99999' } } }), DocumentBuildError);
  assert.throws(() => buildDianDocument({ ...d, receiver: { ...d.receiver, documentType: 'XX' } }), DocumentBuildError);
  const inv = corpus[0].document;
  assert.throws(() => buildDianDocument({ ...makeCreditNote(inv, 9, true), reference: null }), DocumentBuildError);
});
