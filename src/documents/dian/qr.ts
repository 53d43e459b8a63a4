import type { FiscalDocument } from './model.ts';
import { dianAmount, taxTotalsByCode } from './cufe.ts';

/**
 * The QR text (reference/dian.md "QR code"): one `Label: value` per line, then DIAN's lookup URL.
 * The exact labels are unconfirmed by the annex we have, so they live here and only here.
 */
export const QR_LABELS = {
  number: 'NumFac',
  issueDate: 'FecFac',
  issueTime: 'HorFac',
  issuerNit: 'NitFac',
  receiverDocument: 'DocAdq',
  lineExtension: 'ValFac',
  iva: 'ValIva',
  otherTaxes: 'ValOtroIm',
  total: 'ValTolFac',
  cufe: 'CUFE',
  cude: 'CUDE',
} as const;

export const DIAN_LOOKUP_URL = {
  live: 'https://catalogo-vpfe.dian.gov.co/document/searchqr?documentkey=',
  test: 'https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=',
} as const;

export function qrText(document: FiscalDocument, identityCode: string): string {
  const taxes = taxTotalsByCode(document);
  const L = QR_LABELS;
  return [
    `${L.number}: ${document.number}`,
    `${L.issueDate}: ${document.issueDate}`,
    `${L.issueTime}: ${document.issueTime}`,
    `${L.issuerNit}: ${document.issuer.nit}`,
    `${L.receiverDocument}: ${document.receiver.documentNumber}`,
    `${L.lineExtension}: ${dianAmount(document.totals.subtotal)}`,
    `${L.iva}: ${dianAmount(taxes['01'])}`,
    `${L.otherTaxes}: ${dianAmount(taxes['04'] + taxes['03'])}`,
    `${L.total}: ${dianAmount(document.totals.total)}`,
    `${document.kind === 'invoice' ? L.cufe : L.cude}: ${identityCode}`,
    DIAN_LOOKUP_URL[document.environment] + identityCode,
  ].join('\n');
}
