import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TaxCode } from './model.ts';
import { buildDianDocument } from './builder.ts';
import { attr, canonicalize, canonicalizeDocument, child, descendants, parseXml, path, textOf, type XmlElement } from './c14n.ts';
import { NS } from './ubl.ts';
import { makeCreditNote, makeInvoice, makeLine, rng, testIssuer, TEST_RESOLUTION, totalsOf } from '../../../test/support/dian.ts';
import { verifyDianDocument } from './verify.ts';

const issuer = testIssuer();
const taxArb = fc.constantFrom<[TaxCode, number]>(['01', 0], ['01', 500], ['01', 1900], ['04', 400], ['04', 800], ['04', 1600]);
const lineArb = fc.record({
  description: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  quantity: fc.oneof(
    fc.integer({ min: 1, max: 10_000 }),
    fc.integer({ min: 1, max: 99_999 }).map((n) => n / 1000),
  ),
  unit: fc.bigInt({ min: 1n, max: 10_000_000_000n }),
  tax: taxArb,
  inclusive: fc.boolean(),
});

test('property: any document of valid lines builds, and verify.ts accepts it with the same CUFE/CUDE (totals, taxes, signature)', () => {
  fc.assert(
    fc.property(
      fc.array(lineArb, { minLength: 1, maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.boolean(),
      (specs, note, asCreditNote) => {
        const base = makeInvoice(7, rng(1), issuer, { lines: 1 });
        const lines = specs.map((s) => makeLine(s.description, s.quantity, s.unit, s.tax[0], s.tax[1], s.inclusive ? 'inclusive' : 'exclusive'));
        const invoice = { ...base, note, lines, totals: totalsOf(lines) };
        const d = asCreditNote ? makeCreditNote(invoice, 3, true) : invoice;
        const built = buildDianDocument(d);
        const v = verifyDianDocument(built.xml, {
          key: d.kind === 'invoice' ? TEST_RESOLUTION.technicalKey : issuer.softwarePin,
          environment: 'test',
          resolution: d.kind === 'invoice' ? TEST_RESOLUTION : { prefix: 'NC', from: 1, to: 100 },
          softwarePin: issuer.softwarePin,
        });
        assert.deepEqual(v.failures, []);
        assert.equal(v.identityCode, built.identityCode);
      },
    ),
    { numRuns: 40 },
  );
});

test('property: canonical form is a fixed point (canonicalizing canonical XML changes nothing)', () => {
  const text = fc
    .string({ unit: 'binary', maxLength: 20 })
    .map((s) => s.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDFFF]/g, ''));
  fc.assert(
    fc.property(text, text, (a, b) => {
      const esc = (s: string) =>
        s
          .replace(/&/g, '&amp;')
          .replace(/</g, '&lt;')
          .replace(/"/g, '&quot;')
          .replace(/\r/g, '&#xD;')
          .replace(/\n/g, '&#xA;')
          .replace(/\t/g, '&#x9;');
      const xml = `<r xmlns="urn:x" xmlns:p="urn:p" p:b="${esc(b)}" a="${esc(a)}"><p:c>${esc(a)}</p:c></r>`;
      const once = canonicalizeDocument(parseXml(xml));
      assert.equal(canonicalizeDocument(parseXml(once)), once);
    }),
    { numRuns: 200 },
  );
});

test('property: verify.ts never throws on a mangled document (byte edits anywhere), and rejects every edit of signed content', () => {
  const d = makeInvoice(9, rng(9), issuer, { lines: 2 });
  const xml = buildDianDocument(d).xml;
  const expectation = { key: TEST_RESOLUTION.technicalKey, environment: 'test' as const, resolution: TEST_RESOLUTION };
  fc.assert(
    fc.property(fc.nat({ max: xml.length - 1 }), fc.nat({ max: 5 }), fc.string({ maxLength: 3 }), (at, remove, insert) => {
      const mangled = xml.slice(0, at) + insert + xml.slice(at + remove);
      const v = verifyDianDocument(mangled, expectation);
      // Edits of what the signature covers (the document without the signature, SignedInfo, KeyInfo,
      // SignedProperties) or of what the verifier pins (the signature's place, Id and attributes, the
      // qualifying properties' Target, the SignatureValue bytes) must be caught. Whitespace between
      // the signature's children or inside the base64 value, and SignatureValue's Id, are not.
      const canon = (s: string) => {
        const doc = parseXml(s);
        const sigs = descendants(doc.root, NS.ds, 'Signature');
        if (sigs.length !== 1) return `${sigs.length} signatures`;
        const sig = sigs[0];
        const qp = path(sig, [NS.ds, 'Object'], [NS.xades, 'QualifyingProperties']);
        const sp = child(qp, NS.xades, 'SignedProperties');
        const c = (e: XmlElement | null) => (e ? canonicalize(e) : '-');
        return [
          canonicalizeDocument(doc, sig),
          c(child(sig, NS.ds, 'SignedInfo')),
          c(child(sig, NS.ds, 'KeyInfo')),
          c(sp),
          sig.parent?.name,
          sig.attrs.map((a) => `${a.name}=${a.value}`).join(),
          attr(qp, 'Target'),
          textOf(child(sig, NS.ds, 'SignatureValue'))?.replace(/\s+/g, ''),
        ].join('\u0000');
      };
      const canonicalChanged = (() => {
        try {
          return canon(mangled) !== canon(xml);
        } catch {
          return true;
        }
      })();
      if (canonicalChanged) assert.equal(v.ok, false, `edit at ${at} (-${remove} +${JSON.stringify(insert)}) accepted`);
    }),
    { numRuns: 300 },
  );
});
