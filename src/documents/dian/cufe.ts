import { createHash } from 'node:crypto';
import type { FiscalDocument } from './model.ts';

/**
 * DIAN identity codes (reference/dian.md "Identity codes"): lowercase hex SHA-384 of the fields
 * concatenated without separators. Invoices use the numbering range's technical key (CUFE);
 * credit and debit notes use the software PIN in its place (CUDE).
 */

/** Cents → DIAN amount text: two decimals with a dot, truncated (exact for integer cents). */
export function dianAmount(cents: bigint): string {
  const negative = cents < 0n;
  const abs = negative ? -cents : cents;
  return `${negative ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

export interface IdentityCodeInput {
  number: string; // NumFac: prefix + folio
  issueDate: string; // FecFac YYYY-MM-DD
  issueTime: string; // HorFac HH:MM:SS-05:00
  lineExtension: bigint; // ValFac, cents
  taxByCode: { '01': bigint; '04': bigint; '03': bigint }; // IVA, INC, ICA, cents
  payable: bigint; // ValTot, cents
  issuerNit: string; // NitOFE, digits without DV
  receiverNumber: string; // NumAdq, without DV
  key: string; // ClTec (CUFE) or software PIN (CUDE)
  environment: '1' | '2'; // TipoAmbiente: 1 production, 2 test
}

/** The exact string DIAN hashes; kept separate so a rejection can show what was hashed. */
export function identityCodeText(i: IdentityCodeInput): string {
  return (
    i.number +
    i.issueDate +
    i.issueTime +
    dianAmount(i.lineExtension) +
    '01' +
    dianAmount(i.taxByCode['01']) +
    '04' +
    dianAmount(i.taxByCode['04']) +
    '03' +
    dianAmount(i.taxByCode['03']) +
    dianAmount(i.payable) +
    i.issuerNit +
    i.receiverNumber +
    i.key +
    i.environment
  );
}

export function identityCode(i: IdentityCodeInput): string {
  return createHash('sha384').update(identityCodeText(i), 'utf8').digest('hex');
}

/** Tax totals per DIAN tax code (one total per code, summing every rate of that code). */
export function taxTotalsByCode(document: Pick<FiscalDocument, 'lines'>): { '01': bigint; '04': bigint; '03': bigint } {
  const totals = { '01': 0n, '04': 0n, '03': 0n };
  for (const line of document.lines) totals[line.taxCode] += line.taxAmount;
  return totals;
}

/** CUFE (invoice, technical key) or CUDE (credit note, software PIN) of a resolved document. */
export function documentIdentityCode(document: FiscalDocument): string {
  const key = document.kind === 'invoice' ? (document.resolution.technicalKey ?? '') : document.issuer.softwarePin;
  return identityCode({
    number: document.number,
    issueDate: document.issueDate,
    issueTime: document.issueTime,
    lineExtension: document.totals.subtotal,
    taxByCode: taxTotalsByCode(document),
    payable: document.totals.total,
    issuerNit: document.issuer.nit,
    receiverNumber: document.receiver.documentNumber,
    key,
    environment: document.environment === 'live' ? '1' : '2',
  });
}

/** SoftwareSecurityCode = SHA-384 hex of SoftwareID + PIN + NumFac. */
export function softwareSecurityCode(softwareId: string, pin: string, number: string): string {
  return createHash('sha384')
    .update(softwareId + pin + number, 'utf8')
    .digest('hex');
}
