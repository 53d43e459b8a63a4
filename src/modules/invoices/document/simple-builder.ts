import PDFDocument from 'pdfkit';
import { dianAmount, documentIdentityCode } from '../dian/cufe.ts';
import type { BuiltDocument, DocumentBuilder, FiscalDocument } from '../ports.ts';

/**
 * Placeholder DocumentBuilder (issue 6): a small well-formed XML carrying the number, dates,
 * parties, lines, totals and the real CUFE/CUDE, a QR text and a one-page PDF. Not the legal UBL
 * document: issue 7's builder (src/modules/invoices/dian/) replaces it in ports.ts, one line.
 */
function esc(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

function el(name: string, value: string | null | undefined, attrs = ''): string {
  return value === null || value === undefined ? '' : `<${name}${attrs}>${esc(value)}</${name}>`;
}

export function qrText(d: FiscalDocument, code: string): string {
  const tax = d.totals.taxAmount;
  return [
    `NumFac: ${d.number}`,
    `FecFac: ${d.issueDate}`,
    `HorFac: ${d.issueTime}`,
    `NitFac: ${d.issuer.nit}`,
    `DocAdq: ${d.receiver.documentNumber}`,
    `ValFac: ${dianAmount(d.totals.subtotal)}`,
    `ValIva: ${dianAmount(tax)}`,
    `ValOtroIm: 0.00`,
    `ValTolFac: ${dianAmount(d.totals.total)}`,
    `${d.kind === 'invoice' ? 'CUFE' : 'CUDE'}: ${code}`,
    `QRCode: https://catalogo-vpfe${d.environment === 'live' ? '' : '-hab'}.dian.gov.co/document/searchqr?documentkey=${code}`,
  ].join('\n');
}

export class SimpleDocumentBuilder implements DocumentBuilder {
  async build(d: FiscalDocument): Promise<BuiltDocument> {
    const code = documentIdentityCode(d);
    const root = d.kind === 'invoice' ? 'Invoice' : 'CreditNote';
    const party = (tag: string, p: { name: string; id: string; dv: string | null; email: string | null; address: string | null }) =>
      `<${tag}>${el('Name', p.name)}${el('CompanyID', p.id, p.dv ? ` schemeID="${esc(p.dv)}"` : '')}${el('Email', p.email)}${el('Address', p.address)}</${tag}>`;
    const lines = d.lines
      .map(
        (l, i) =>
          `<Line>${el('ID', String(i + 1))}${el('Description', l.description)}${el('Quantity', String(l.quantity))}${el('UnitAmount', dianAmount(l.unitAmount))}` +
          `${el('LineExtensionAmount', dianAmount(l.subtotal))}<Tax${` code="${l.taxCode}" percent="${(l.taxRateBp / 100).toFixed(2)}"`}>${dianAmount(l.taxAmount)}</Tax>${el('Total', dianAmount(l.total))}</Line>`,
      )
      .join('');
    const ref = d.reference
      ? `<BillingReference>${el('ID', d.reference.number)}${el('UUID', d.reference.cufe)}${el('IssueDate', d.reference.issueDate)}${el('DiscrepancyCode', d.reference.discrepancyCode)}${el('Reason', d.reference.reason)}</BillingReference>`
      : '';
    const xml =
      `<?xml version="1.0" encoding="UTF-8"?>\n` +
      `<${root} xmlns="urn:recaudo:placeholder:1">` +
      el('ProfileExecutionID', d.environment === 'live' ? '1' : '2') +
      el('ID', d.number) +
      el('UUID', code, ` schemeName="${d.kind === 'invoice' ? 'CUFE-SHA384' : 'CUDE-SHA384'}"`) +
      el('IssueDate', d.issueDate) +
      el('IssueTime', d.issueTime) +
      el('DueDate', d.dueDate) +
      el('DocumentCurrencyCode', d.currency) +
      el('Note', d.note) +
      `<Resolution>${el('Number', d.resolution.number)}${el('Prefix', d.resolution.prefix)}${el('From', String(d.resolution.from))}${el('To', String(d.resolution.to))}</Resolution>` +
      ref +
      party('Supplier', { name: d.issuer.legalName, id: d.issuer.nit, dv: d.issuer.dv, email: d.issuer.email, address: `${d.issuer.address.line}, ${d.issuer.address.cityCode}` }) +
      party('Customer', {
        name: d.receiver.name,
        id: d.receiver.documentNumber,
        dv: d.receiver.dv,
        email: d.receiver.email,
        address: d.receiver.address ? `${d.receiver.address.line}, ${d.receiver.address.cityCode}` : null,
      }) +
      `<PaymentMeans>${el('ID', d.paymentMethod)}${el('Code', d.paymentMeansCode)}</PaymentMeans>` +
      lines +
      `<Totals>${el('LineExtensionAmount', dianAmount(d.totals.subtotal))}${el('TaxAmount', dianAmount(d.totals.taxAmount))}${el('PayableAmount', dianAmount(d.totals.total))}</Totals>` +
      el('QRCode', qrText(d, code)) +
      `</${root}>\n`;
    return { xml, identityCode: code, qrText: qrText(d, code) };
  }

  async renderPdf(d: FiscalDocument, built: BuiltDocument): Promise<Buffer> {
    const doc = new PDFDocument({ size: 'LETTER', margin: 50, info: { Title: d.number, CreationDate: new Date(`${d.issueDate}T12:00:00Z`) } });
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
    const title = d.kind === 'invoice' ? 'Factura electrónica de venta' : 'Nota crédito electrónica';
    doc.fontSize(16).text(`${title} ${d.number}`);
    doc.fontSize(9).text(`${d.issuer.legalName} — NIT ${d.issuer.nit}-${d.issuer.dv}`);
    doc.text(`Resolución ${d.resolution.number}: ${d.resolution.prefix} ${d.resolution.from} a ${d.resolution.to}, vigente ${d.resolution.validFrom} a ${d.resolution.validUntil}`);
    doc.text(`Fecha: ${d.issueDate} ${d.issueTime}`);
    doc.text(`Adquiriente: ${d.receiver.name} — ${d.receiver.documentType} ${d.receiver.documentNumber}${d.receiver.dv ? `-${d.receiver.dv}` : ''}`);
    if (d.reference) doc.text(`Referencia: factura ${d.reference.number} (${d.reference.issueDate}), ${d.reference.reason}`);
    doc.moveDown();
    for (const l of d.lines) doc.text(`${l.quantity} × ${l.description}: ${dianAmount(l.subtotal)} + IVA/INC ${(l.taxRateBp / 100).toFixed(2)} % ${dianAmount(l.taxAmount)} = ${dianAmount(l.total)}`);
    doc.moveDown();
    doc.text(`Subtotal ${dianAmount(d.totals.subtotal)}   Impuestos ${dianAmount(d.totals.taxAmount)}   Total ${d.currency} ${dianAmount(d.totals.total)}`);
    doc.moveDown();
    doc.fontSize(7).text(`${d.kind === 'invoice' ? 'CUFE' : 'CUDE'}: ${built.identityCode}`);
    doc.text(built.qrText);
    doc.end();
    await done;
    return Buffer.concat(chunks);
  }
}
