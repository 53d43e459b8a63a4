import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../platform/clock.ts';
import { nitCheckDigit } from '../customers/validate.ts';
import { SimpleDocumentBuilder } from './document/simple-builder.ts';
import type { FiscalDocument, SubmitInput } from './ports.ts';
import { SandboxTaxAuthority } from './sandbox-authority.ts';

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
      certificate: null,
    },
    receiver: { kind: 'company', documentType: 'NIT', documentNumber: '800197268', dv: String(nitCheckDigit('800197268')), name: 'Cliente SA', email: null, phone: null, address: null, responsibilities: ['O-13'], taxRegime: '48' },
    resolution: { number: '18760000001', prefix: 'SETP', from: 990000000, to: 995000000, validFrom: '2019-01-19', validUntil: '2030-01-19', technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c' },
    lines: [{ description: 'x', quantity: 1, unitAmount: 10000n, subtotal: 10000n, taxCode: '01', taxRateBp: 1900, taxAmount: 1900n, total: 11900n, taxBehavior: 'exclusive' }],
    totals: { subtotal: 10000n, taxAmount: 1900n, total: 11900n },
    paymentMeansCode: '10',
    paymentMethod: '1',
    reference: null,
    ...over,
  };
}

async function input(d: FiscalDocument, tamper?: (b: { xml: string; identityCode: string; qrText: string }) => void, testScenario: string | null = null): Promise<SubmitInput> {
  const built = await new SimpleDocumentBuilder().build(d);
  tamper?.(built);
  return { companyId: 'c', environment: 'test', document: d, built, testScenario };
}

describe('sandbox tax authority', () => {
  const clock = new ManualClock();
  const now = new SandboxTaxAuthority({ clock, delayMs: 0 });

  test('accepts a valid document', async () => {
    const out = await now.submit(await input(doc()));
    assert.equal(out.status, 'accepted');
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
    const note = doc({ kind: 'credit_note', reference: { number: 'SETP990000001', cufe: 'a'.repeat(96), issueDate: '2026-03-01', discrepancyCode: '2', reason: 'x' } });
    await rejects(await input(note, (b) => (b.identityCode = 'f'.repeat(96))), /Regla: CAD06/);
  });

  test('rejects totals that do not add up (FAU02, FAU04, FAU14)', async () => {
    await rejects(await input(doc({ totals: { subtotal: 10001n, taxAmount: 1900n, total: 11901n } })), /FAU02/);
    await rejects(await input(doc({ totals: { subtotal: 10000n, taxAmount: 1899n, total: 11899n } })), /FAU04/);
    await rejects(await input(doc({ totals: { subtotal: 10000n, taxAmount: 1900n, total: 12000n } })), /FAU14/);
  });

  test('rejects wrong check digits (FAJ24 issuer, FAK24 receiver)', async () => {
    const d = doc();
    await rejects(await input(doc({ issuer: { ...d.issuer, dv: String((Number(d.issuer.dv) + 1) % 10) } })), /FAJ24/);
    await rejects(await input(doc({ receiver: { ...d.receiver, dv: String((Number(d.receiver.dv) + 1) % 10) } })), /FAK24/);
  });

  test('rejects a number outside the resolution range (FAD05e)', async () => {
    await rejects(await input(doc({ folio: 995000001, number: 'SETP995000001' })), /FAD05e/);
  });

  test('test_scenario stamp_rejected rejects (FAJ43b)', async () => {
    await rejects(await input(doc(), undefined, 'stamp_rejected'), /FAJ43b/);
  });
});
