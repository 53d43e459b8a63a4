import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import { buildDianDocument, issueInstant } from './builder.ts';
import { parseXml } from './c14n.ts';
import { generateTestCertificate, loadSigningKey, CertificateError, type SigningKey } from './certificate.ts';
import { documentIdentityCode, softwareSecurityCode } from './cufe.ts';
import {
  makeApplicationResponse,
  makeAttachedDocument,
  readApplicationResponse,
  readAttachedDocument,
  sandboxAuthorityKey,
} from './attached-document.ts';
import { qrText } from './qr.ts';
import {
  makeInvoice,
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
import { buildUnsignedUbl } from './ubl.ts';
import { verifyDianDocument } from './verify.ts';
import { bogotaDateTime, signUblDocument, verifyUblSignature } from './xades.ts';

const invoice = makeInvoice(5, rng(11), testIssuer(), { lines: 3 });
const expectation = { key: TEST_RESOLUTION.technicalKey, environment: 'test' as const, resolution: TEST_RESOLUTION };

function unsigned() {
  const cufe = documentIdentityCode(invoice);
  return buildUnsignedUbl(invoice, {
    identityCode: cufe,
    qrText: qrText(invoice, cufe),
    softwareSecurityCode: softwareSecurityCode(invoice.issuer.softwareId, invoice.issuer.softwarePin, invoice.number),
  });
}

function signWithKey(key: SigningKey, at = issueInstant(invoice)): string {
  return signUblDocument(unsigned(), { key, signingTime: at });
}

test('XAdES: the signature has DIAN policy v2, the certificate digest and decimal serial, SigningTime in Bogotá, role supplier', () => {
  const key = loadSigningKey(testCertificate());
  const xml = buildDianDocument(invoice).xml;
  assert.match(xml, /<ds:CanonicalizationMethod Algorithm="http:\/\/www.w3.org\/TR\/2001\/REC-xml-c14n-20010315"\/>/);
  assert.match(xml, /<ds:SignatureMethod Algorithm="http:\/\/www.w3.org\/2001\/04\/xmldsig-more#rsa-sha256"\/>/);
  assert.match(
    xml,
    /<ds:Reference Id="[^"]+-ref0" URI=""><ds:Transforms><ds:Transform Algorithm="http:\/\/www.w3.org\/2000\/09\/xmldsig#enveloped-signature"\/>/,
  );
  assert.match(xml, /<ds:Reference Type="http:\/\/uri.etsi.org\/01903#SignedProperties" URI="#[^"]+-signedprops">/);
  assert.ok(xml.includes(`<ds:X509SerialNumber>${key.serialNumber}</ds:X509SerialNumber>`));
  assert.match(key.serialNumber, /^\d{1,20}$/, 'decimal, at most 64 bits');
  assert.ok(
    xml.includes(
      `<xades:CertDigest><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue>${key.certificateDigest}</ds:DigestValue>`,
    ),
  );
  assert.ok(xml.includes('<xades:Identifier>https://facturaelectronica.dian.gov.co/politicadefirma/v2/politicadefirmav2.pdf</xades:Identifier>'));
  assert.ok(xml.includes('<ds:DigestValue>dMoMvtcG5aIzgYo0tIsSQeVJBDnUnfSOfBpxXrmor0Y=</ds:DigestValue>'));
  assert.ok(xml.includes('<xades:ClaimedRole>supplier</xades:ClaimedRole>'));
  assert.equal(bogotaDateTime(new Date('2026-01-01T03:04:05Z')), '2025-12-31T22:04:05-05:00');
  assert.equal(verifyUblSignature(parseXml(xml)).ok, true);
});

test('XAdES semantics are checked beyond the signature core: certificate digest, serial, issuer, SigningTime', () => {
  const key = loadSigningKey(testCertificate());
  const cases: Array<[SigningKey, RegExp, Date?]> = [
    [{ ...key, certificateDigest: Buffer.alloc(32).toString('base64') }, /SigningCertificate digest/],
    [{ ...key, serialNumber: '12345' }, /serial number/],
    [{ ...key, issuerName: 'CN=Someone else' }, /issuer name/],
    [{ ...key, notBefore: new Date(0), notAfter: new Date('2100-01-01') }, /SigningTime is outside/, new Date('2001-01-01T00:00:00Z')],
  ];
  for (const [k, problem, at] of cases) {
    const xml = signWithKey(k, at);
    const check = verifyUblSignature(parseXml(xml));
    assert.equal(check.ok, false);
    assert.equal(check.problems.length, 1, check.problems.join('; '));
    assert.match(check.problems[0], problem);
    assert.deepEqual(
      verifyDianDocument(xml, expectation).failures.map((f) => f.code),
      ['ZE02'],
    );
  }
});

test('signature wrapping: a second signature, a moved signature and an element stealing the SignedProperties id are refused', () => {
  const xml = buildDianDocument(invoice).xml;
  const sig = /<ds:Signature .*<\/ds:Signature>/.exec(xml)![0];
  const doubled = xml.replace('</sts:DianExtensions>', `</sts:DianExtensions>${sig}`);
  assert.match(verifyUblSignature(parseXml(doubled)).problems.join(), /more than one/);
  const id = /Id="([^"]+-signedprops)"/.exec(xml)![1];
  const stolen = xml.replace('<cbc:UBLVersionID>', `<cbc:UBLVersionID Id="${id}">`);
  assert.notEqual(stolen, xml);
  assert.match(verifyUblSignature(parseXml(stolen)).problems.join(), /ambiguous id/);
  const moved = xml.replace(sig, '').replace('<cac:PaymentMeans>', `<cac:PaymentMeans>${sig}`);
  assert.match(verifyUblSignature(parseXml(moved)).problems.join(), /not in the UBL extensions/);
});

test('certificates: the PKCS#12 is opened once (cached); a chain picks the leaf by its key; a wrong password is a clear error', () => {
  const cert = testCertificate();
  assert.equal(loadSigningKey(cert), loadSigningKey({ p12: Buffer.from(cert.p12), password: cert.password }), 'cached by content');
  assert.throws(() => loadSigningKey({ ...cert, password: 'wrong' }), CertificateError);
  // A .p12 with an extra (CA-like) certificate before the leaf.
  const other = generateTestCertificate({ nit: '800197268', legalName: 'Otra CA', password: 'x' });
  const p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(cert.p12.toString('binary')), cert.password);
  const keyBag = p12.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag]![0];
  const leaf = p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag]![0].cert!;
  const chain = forge.pkcs12.toPkcs12Asn1(keyBag.key!, [forge.pki.certificateFromPem(other.certificatePem), leaf], 'pw', { algorithm: '3des' });
  const loaded = loadSigningKey({ p12: Buffer.from(forge.asn1.toDer(chain).getBytes(), 'binary'), password: 'pw' });
  assert.equal(loaded.certificateDigest, loadSigningKey(cert).certificateDigest);
  assert.match(
    loadSigningKey(cert).issuerName,
    /^C=CO,OU=Recaudo test certificate,O=Recaudo Pruebas S\.A\.S\.,SERIALNUMBER=900373115,CN=Recaudo Pruebas S\.A\.S\.$/,
  );
});

test('ApplicationResponse (accepted / rejected with rule messages) and AttachedDocument: schema, signatures, round trip', () => {
  const built = buildDianDocument(invoice);
  const at = new Date('2026-10-06T15:00:00Z');
  const accepted = makeApplicationResponse({ document: invoice, identityCode: built.identityCode, outcome: 'accepted', messages: [], at });
  const failures = verifyDianDocument(built.xml, { ...expectation, key: 'wrong-key' }).failures;
  const rejected = makeApplicationResponse({ document: invoice, identityCode: built.identityCode, outcome: 'rejected', messages: failures, at });
  assert.deepEqual(readApplicationResponse(accepted), { accepted: true, code: '02', messages: [] });
  const r = readApplicationResponse(rejected);
  assert.equal(r.accepted, false);
  assert.equal(r.code, '04');
  assert.deepEqual(r.messages, failures);
  assert.match(r.messages[0].message, /^Regla: FAD06, Rechazo: /);

  const attached = makeAttachedDocument({ document: invoice, built, applicationResponse: accepted });
  const back = readAttachedDocument(attached);
  assert.equal(back.document, built.xml, 'the signed invoice is embedded byte for byte');
  assert.equal(back.applicationResponse, accepted);
  assert.deepEqual(verifyDianDocument(back.document!, expectation).failures, []);
  for (const xml of [accepted, rejected, attached]) assert.deepEqual(verifyUblSignature(parseXml(xml)).problems, []);
  assert.match(attached, /<cbc:ValidationResultCode>02<\/cbc:ValidationResultCode>/);

  const dir = tempDir('attached');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const files = { accepted: path.join(dir, 'ar.xml'), rejected: path.join(dir, 'rej.xml'), attached: path.join(dir, 'ad.xml') };
  fs.writeFileSync(files.accepted, accepted);
  fs.writeFileSync(files.rejected, rejected);
  fs.writeFileSync(files.attached, attached);
  if (!skipSchemaReason()) {
    const ar = xmllintBatch(XSD.ApplicationResponse, [files.accepted, files.rejected]);
    assert.ok(ar.ok, ar.output);
    const ad = xmllintBatch(XSD.AttachedDocument, [files.attached]);
    assert.ok(ad.ok, ad.output);
  }
  if (!skipXmlsecReason()) {
    assert.equal(xmlsecBatch(testCertificate().certificatePem, [files.attached]).verified, 1);
    assert.equal(xmlsecBatch(sandboxAuthorityKey().certificatePem, [files.accepted, files.rejected]).verified, 2);
  }
});
