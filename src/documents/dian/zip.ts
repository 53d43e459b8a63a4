import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import type { FiscalDocumentKind } from './model.ts';

/**
 * Zip packaging for DIAN's web service: one XML per zip (SendBillSync accepts exactly one; the
 * async operations accept several, we always send one), sent base64-encoded as `contentFile`.
 *
 * File names follow the technical annex's convention (the exact consecutive rules are
 * *unconfirmed*; DIAN has not been seen rejecting on the name, but keep it in this one place):
 *   XML: <type><NIT 10 digits><provider code 3 chars><year 2 digits><consecutive 8 hex>.xml
 *   zip: `z` + the same body + `.zip`
 * type: `fv` invoice, `nc` credit note, `nd` debit note, `ad` AttachedDocument. The provider code
 * is `000` when the company uses its own software. The consecutive should be unique per issuer and
 * year; we use the document's folio (modulo 16^8), see docs/dian-webservice.md.
 */

const TYPE_PREFIX: Record<FiscalDocumentKind | 'attached_document' | 'debit_note', string> = {
  invoice: 'fv',
  credit_note: 'nc',
  debit_note: 'nd',
  attached_document: 'ad',
};

export interface DianFileNameInput {
  kind: FiscalDocumentKind | 'attached_document' | 'debit_note';
  /** Issuer NIT, digits only, without check digit. */
  nit: string;
  /** Issue year (four digits or a date string starting with it). */
  year: number | string;
  /** Consecutive of files sent by the issuer (we pass the folio). */
  sequence: number | bigint;
  /** Software provider code, `000` for own software. */
  providerCode?: string;
}

export function dianFileNames(input: DianFileNameInput): { body: string; xml: string; zip: string } {
  const nit = input.nit.replace(/\D/g, '').padStart(10, '0').slice(-10);
  const year = String(input.year).slice(0, 4).slice(-2).padStart(2, '0');
  const provider = (input.providerCode ?? '000').padStart(3, '0').slice(-3);
  const sequence = (BigInt(input.sequence) % 0x1_0000_0000n).toString(16).padStart(8, '0');
  const body = `${nit}${provider}${year}${sequence}`;
  return { body, xml: `${TYPE_PREFIX[input.kind]}${body}.xml`, zip: `z${body}.zip` };
}

/** Fixed entry time so the same XML always gives the same zip bytes. */
const ZIP_MTIME = new Date('2020-01-01T00:00:00Z');

/** One XML in a zip (deflate), bytes. */
export function zipSingle(xmlName: string, xml: string): Uint8Array {
  return zipSync({ [xmlName]: [strToU8(xml), { mtime: ZIP_MTIME, level: 6 }] });
}

/** One XML in a zip, base64 (the `contentFile` of the Send* operations). */
export function zipSingleBase64(xmlName: string, xml: string): string {
  return Buffer.from(zipSingle(xmlName, xml)).toString('base64');
}

/** Every entry of a zip as UTF-8 text (used to read DIAN's zipped answers and by the fake server). */
export function unzipTexts(zip: Uint8Array): Array<{ name: string; text: string }> {
  const files = unzipSync(zip);
  return Object.entries(files).map(([name, bytes]) => ({ name, text: strFromU8(bytes) }));
}
