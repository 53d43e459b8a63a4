import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../platform/clock.ts';
import { nitCheckDigit } from '../../documents/dian/nit.ts';
import { DianDocumentBuilder, issueInstant } from '../../documents/dian/builder.ts';
import { loadSigningKey } from '../../documents/dian/certificate.ts';
import { documentIdentityCode, softwareSecurityCode } from '../../documents/dian/cufe.ts';
import { qrText } from '../../documents/dian/qr.ts';
import { buildUnsignedUbl } from '../../documents/dian/ubl.ts';
import { signUblDocument } from '../../documents/dian/xades.ts';
import { readApplicationResponse } from '../../documents/dian/attached-document.ts';
import { testCertificate } from '../../../test/support/dian.ts';
import type { FiscalDocument } from '../../documents/dian/model.ts';
import type { SubmitInput } from './port.ts';
import { SandboxTaxAuthority } from './sandbox.ts';

function doc(over: Partial<FiscalDocument> = {}): FiscalDocument {
  return {
    kind: 'invoice',
    environment: 'test',
    number: 'SETP990000001',
    prefix: 'SETP',
    folio: 990000001,
    issueDate: '2026-03-01',
    issueTime: '10:00:00-05:00',
    dueDate: null,
    currency: 'COP',
    note: null,
    issuer: {
      nit: '900373115',
      dv: String(nitCheckDigit('900373115')),
      legalName: 'Recaudo Pruebas SAS',
      tradeName: null,
      address: { line: 'Calle 1', cityCode: '11001', country: 'CO' },
      email: null,
      phone: null,
      responsibilities: ['O-13'],
      taxRegime: '48',
      softwareId: 'sw',
      softwarePin: '12345',
      certificate: testCertificate(),
    },
    receiver: {
      kind: 'company',
      documentType: 'NIT',
      documentNumber: '800197268',
      dv: String(nitCheckDigit('800197268')),
      name: 'Cliente SA',
      email: null,
      phone: null,
      address: null,
      responsibilities: ['O-13'],
      taxRegime: '48',
    },
    resolution: {
      number: '18760000001',
      prefix: 'SETP',
      from: 990000000,
      to: 995000000,
      validFrom: '2019-01-19',
      validUntil: '2030-01-19',
      technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
    },
    lines: [
      {
        description: 'x',
        quantity: 1,
        unitAmount: 10000n,
        subtotal: 10000n,
        taxCode: '01',
        taxRateBp: 1900,
        taxAmount: 1900n,
        total: 11900n,
        taxBehavior: 'exclusive',
      },
    ],
    totals: { subtotal: 10000n, taxAmount: 1900n, total: 11900n },
    paymentMeansCode: '10',
    paymentMethod: '1',
    reference: null,
    ...over,
  };
}

async function input(
  d: FiscalDocument,
  tamper?: (b: { xml: string; identityCode: string; qrText: string }) => void,
  testScenario: string | null = null,
): Promise<SubmitInput> {
  const built = await new DianDocumentBuilder().build(d);
  tamper?.(built);
  return { companyId: 'c', environment: 'test', document: d, built, testScenario };
}

/** A validly signed document whose text `edit` changed before signing (the builder refuses wrong input itself). */
async function signedWrong(d: FiscalDocument, edit: (xml: string) => string): Promise<SubmitInput> {
  const code = documentIdentityCode(d);
  const unsigned = buildUnsignedUbl(d, {
    identityCode: code,
    qrText: qrText(d, code),
    softwareSecurityCode: softwareSecurityCode(d.issuer.softwareId, d.issuer.softwarePin, d.number),
  });
  const edited = edit(unsigned);
  assert.notEqual(edited, unsigned, 'the edit changed nothing');
  const xml = signUblDocument(edited, { key: loadSigningKey(d.issuer.certificate!), signingTime: issueInstant(d) });
  return { companyId: 'c', environment: 'test', document: d, built: { xml, identityCode: code, qrText: qrText(d, code) }, testScenario: null };
}

describe('sandbox tax authority', () => {
  const clock = new ManualClock();
  const now = new SandboxTaxAuthority({ clock, delayMs: 0 });

  test('accepts a valid document', async () => {
    const out = await now.submit(await input(doc()));
    assert.equal(out.status, 'accepted');
    if (out.status !== 'accepted') return;
    assert.ok(out.applicationResponse, 'a DIAN-shaped ApplicationResponse');
    const answer = readApplicationResponse(out.applicationResponse);
    assert.equal(answer.accepted, true);
    assert.equal(answer.code, '02');
    assert.ok(out.applicationResponse.includes(`>${(await input(doc())).built.identityCode}</cbc:UUID>`), 'it answers for the document');
  });

  test('answers pending, then the outcome after the delay, re-derived after a restart', async () => {
    const auth = new SandboxTaxAuthority({ clock, delayMs: 5_000 });
    const i = await input(doc());
    const first = await auth.submit(i);
    assert.equal(first.status, 'pending');
    assert.equal((await auth.status({ ...i, trackId: first.trackId })).status, 'pending');
    clock.advance(5_000);
    const restarted = new SandboxTaxAuthority({ clock, delayMs: 5_000 });
    assert.equal((await restarted.status({ ...i, trackId: first.trackId })).status, 'accepted');
  });

  const rejects = async (i: SubmitInput, rule: RegExp) => {
    const out = await now.submit(i);
    assert.equal(out.status, 'rejected');
    if (out.status === 'rejected') assert.match(out.reason, rule);
  };

  test('rejects an identity code that does not match its inputs (FAD06; CAD06 for credit notes)', async () => {
    await rejects(await input(doc(), (b) => (b.identityCode = 'f'.repeat(96))), /Regla: FAD06, Rechazo: /);
    const note = doc({
      kind: 'credit_note',
      reference: { number: 'SETP990000001', cufe: 'a'.repeat(96), issueDate: '2026-03-01', discrepancyCode: '2', reason: 'x' },
    });
    await rejects(await input(note, (b) => (b.identityCode = 'f'.repeat(96))), /Regla: CAD06/);
  });

  test("rejects totals that do not add up (the verifier's FAU02, FAU14 rules)", async () => {
    await rejects(
      await signedWrong(doc(), (x) =>
        x.replace(
          '<cbc:LineExtensionAmount currencyID="COP">100.00</cbc:LineExtensionAmount><cbc:TaxExclusive',
          '<cbc:LineExtensionAmount currencyID="COP">100.01</cbc:LineExtensionAmount><cbc:TaxExclusive',
        ),
      ),
      /Regla: FAU02/,
    );
    const payable = await signedWrong(doc(), (x) =>
      x.replace('<cbc:PayableAmount currencyID="COP">119.00</cbc:PayableAmount>', '<cbc:PayableAmount currencyID="COP">120.00</cbc:PayableAmount>'),
    );
    const out = await now.submit(payable);
    assert.equal(out.status, 'rejected');
    if (out.status === 'rejected') {
      assert.match(out.reason, /Regla: FAU14/);
      assert.doesNotMatch(out.reason, /ZE02/, 'the signature itself is valid');
    }
  });

  test('rejects a document changed after signing (ZE02 signature, and the amount rule it breaks)', async () => {
    await rejects(
      await input(
        doc(),
        (b) =>
          (b.xml = b.xml.replace(
            '<cbc:PayableAmount currencyID="COP">119.00</cbc:PayableAmount>',
            '<cbc:PayableAmount currencyID="COP">1.00</cbc:PayableAmount>',
          )),
      ),
      /Regla: ZE02, Rechazo: .*Regla: FAU14/,
    );
  });

  test('rejects a document of the other environment (FAD06 on ProfileExecutionID)', async () => {
    const i = await input(doc());
    await rejects({ ...i, environment: 'live' }, /Regla: FAD06/);
  });

  test('rejects wrong check digits (FAJ24 issuer, FAK24 receiver)', async () => {
    const d = doc();
    const wrong = (dv: string) => String((Number(dv) + 1) % 10);
    await rejects(
      await signedWrong(d, (x) =>
        x.replaceAll(
          `schemeID="${d.issuer.dv}" schemeName="31">${d.issuer.nit}<`,
          `schemeID="${wrong(d.issuer.dv)}" schemeName="31">${d.issuer.nit}<`,
        ),
      ),
      /Regla: FAJ24/,
    );
    await rejects(
      await signedWrong(d, (x) =>
        x.replaceAll(
          `schemeID="${d.receiver.dv}" schemeName="31">${d.receiver.documentNumber}<`,
          `schemeID="${wrong(d.receiver.dv!)}" schemeName="31">${d.receiver.documentNumber}<`,
        ),
      ),
      /Regla: FAK24/,
    );
  });

  test('rejects a number outside the resolution range (FAB11b)', async () => {
    await rejects(await input(doc({ folio: 995000001, number: 'SETP995000001' })), /Regla: FAB11b/);
  });

  test('test_scenario stamp_rejected rejects (FAJ43b)', async () => {
    await rejects(await input(doc(), undefined, 'stamp_rejected'), /FAJ43b/);
  });
});
