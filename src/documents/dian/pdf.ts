import PDFDocument from 'pdfkit';
import { encode as encodeQr } from 'uqr';
import municipalities from '../../data/municipalities.json' with { type: 'json' };
import regimes from '../../data/tax-regimes.json' with { type: 'json' };
import type { BuiltDocument, FiscalAddress, FiscalDocument, FiscalLine, TaxCode } from './model.ts';

/**
 * Graphical representation (representación gráfica) of a DIAN document, in Spanish, with pdfkit's
 * built-in Helvetica (WinAnsi covers Spanish accents). Deterministic: the PDF dates come from the
 * document's issue date/time, nothing depends on the wall clock, and the QR is drawn as vector
 * squares from uqr's module matrix (no raster image), so the same document gives the same bytes.
 */

const TAX_NAMES: Record<TaxCode, string> = { '01': 'IVA', '04': 'INC', '03': 'ICA' };
const DOCUMENT_TYPES: Record<string, string> = { CC: 'CC', CE: 'CE', PASSPORT: 'Pasaporte', NIT: 'NIT' };
const CITY_NAMES = municipalities as Record<string, string>;
const REGIME_NAMES = regimes as Record<string, string>;

/** Cents → Colombian money text: `$ 1.234.567,89` (thousands with dots, decimals with a comma). */
export function formatCop(cents: bigint): string {
  const negative = cents < 0n;
  const abs = negative ? -cents : cents;
  const units = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, '.');
  const decimals = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}$ ${units},${decimals}`;
}

/** Basis points → percentage text in Colombian style: 1900 → `19 %`, 250 → `2,5 %`. */
export function formatRate(bp: number): string {
  const whole = Math.trunc(bp / 100);
  const frac = (bp % 100).toString().padStart(2, '0').replace(/0+$/, '');
  return `${whole}${frac ? `,${frac}` : ''} %`;
}

/** Quantities are plain numbers in the contract: print with a decimal comma. */
function formatQuantity(q: number): string {
  return String(q).replace('.', ',');
}

function addressText(a: FiscalAddress | null): string {
  if (!a) return '—';
  const city = CITY_NAMES[a.cityCode];
  return `${a.line}, ${city ? `${city} (${a.cityCode})` : a.cityCode}, ${a.country}`;
}

/** Taxes grouped by tax code and rate, as the XML's TaxTotal/TaxSubtotal. */
export function groupTaxes(lines: FiscalLine[]): Array<{ code: TaxCode; rateBp: number; taxable: bigint; tax: bigint }> {
  const groups = new Map<string, { code: TaxCode; rateBp: number; taxable: bigint; tax: bigint }>();
  for (const l of lines) {
    const key = `${l.taxCode}:${l.taxRateBp}`;
    const g = groups.get(key) ?? { code: l.taxCode, rateBp: l.taxRateBp, taxable: 0n, tax: 0n };
    g.taxable += l.subtotal;
    g.tax += l.taxAmount;
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => (a.code === b.code ? a.rateBp - b.rateBp : a.code.localeCompare(b.code)));
}

/** Fixed PDF dates from the document's own issue date/time (Bogotá, -05:00). */
function issueInstant(document: FiscalDocument): Date {
  const d = new Date(`${document.issueDate}T${document.issueTime}`);
  return Number.isNaN(d.getTime()) ? new Date(0) : d;
}

export function documentTitle(document: FiscalDocument): string {
  return document.kind === 'invoice' ? 'Factura electrónica de venta' : 'Nota crédito electrónica';
}

export async function renderFiscalPdf(document: FiscalDocument, built: BuiltDocument): Promise<Buffer> {
  const instant = issueInstant(document);
  const pdf = new PDFDocument({
    size: 'A4',
    margin: 40,
    bufferPages: true,
    info: {
      Title: `${documentTitle(document)} ${document.number}`,
      Author: document.issuer.legalName,
      Subject: built.identityCode,
      Creator: 'Recaudo',
      Producer: 'Recaudo',
      CreationDate: instant,
      ModDate: instant,
    },
  });
  const chunks: Buffer[] = [];
  pdf.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });

  const left = 40;
  const width = pdf.page.width - 80;
  const bottom = pdf.page.height - 50;
  const codeLabel = document.kind === 'invoice' ? 'CUFE' : 'CUDE';
  const issuer = document.issuer;
  const receiver = document.receiver;

  const ensure = (height: number) => {
    if (pdf.y + height > bottom) pdf.addPage();
  };
  const heading = (text: string) => {
    ensure(30);
    pdf.moveDown(0.6).font('Helvetica-Bold').fontSize(10).fillColor('black').text(text, left, pdf.y, { width });
    pdf
      .moveTo(left, pdf.y + 1)
      .lineTo(left + width, pdf.y + 1)
      .lineWidth(0.5)
      .stroke();
    pdf.moveDown(0.3).font('Helvetica').fontSize(8.5);
  };
  const field = (label: string, value: string) => {
    ensure(14);
    pdf.font('Helvetica-Bold').fontSize(8.5).text(`${label}: `, left, pdf.y, { continued: true, width });
    pdf.font('Helvetica').text(value);
  };

  // Header: title, number, dates; the QR at the top right.
  const qrSize = 120;
  const qrX = left + width - qrSize;
  const qrY = 40;
  drawQr(pdf, built.qrText, qrX, qrY, qrSize);
  pdf
    .font('Helvetica-Bold')
    .fontSize(15)
    .text(documentTitle(document), left, 40, { width: width - qrSize - 10 });
  pdf
    .font('Helvetica-Bold')
    .fontSize(12)
    .text(`No. ${document.number}`, { width: width - qrSize - 10 });
  pdf.moveDown(0.4).font('Helvetica').fontSize(8.5);
  const headerField = (label: string, value: string) => {
    pdf.font('Helvetica-Bold').text(`${label}: `, left, pdf.y, { continued: true, width: width - qrSize - 10 });
    pdf.font('Helvetica').text(value);
  };
  headerField('Fecha de emisión', document.issueDate);
  headerField('Hora de emisión', document.issueTime);
  headerField('Fecha de vencimiento', document.dueDate ?? '—');
  headerField('Forma de pago', document.paymentMethod === '1' ? 'Contado' : 'Crédito');
  headerField('Medio de pago (código DIAN)', document.paymentMeansCode);
  headerField('Moneda', document.currency);
  pdf.y = Math.max(pdf.y, qrY + qrSize + 6);

  heading('Emisor');
  field('Razón social', issuer.legalName);
  if (issuer.tradeName) field('Nombre comercial', issuer.tradeName);
  field('NIT', `${issuer.nit}-${issuer.dv}`);
  field('Dirección', addressText(issuer.address));
  if (issuer.email) field('Correo electrónico', issuer.email);
  if (issuer.phone) field('Teléfono', issuer.phone);
  field('Responsabilidades fiscales', issuer.responsibilities.join('; ') || '—');
  field('Régimen', `${issuer.taxRegime}${REGIME_NAMES[issuer.taxRegime] ? ` (${REGIME_NAMES[issuer.taxRegime]})` : ''}`);

  heading('Adquiriente');
  field('Nombre', receiver.name);
  const docType = DOCUMENT_TYPES[receiver.documentType] ?? receiver.documentType;
  field('Documento', `${docType} ${receiver.documentNumber}${receiver.dv ? `-${receiver.dv}` : ''}`);
  field('Dirección', addressText(receiver.address));
  field('Correo electrónico', receiver.email ?? '—');
  if (receiver.phone) field('Teléfono', receiver.phone);

  if (document.kind === 'credit_note' && document.reference) {
    const r = document.reference;
    heading('Factura referenciada');
    field('Número', r.number);
    field('Fecha de emisión', r.issueDate);
    field('CUFE', r.cufe);
    field('Concepto de corrección', `${r.discrepancyCode} — ${r.reason}`);
  }

  // Lines table.
  heading('Detalle');
  const cols = [
    { title: 'Descripción', w: 0.27, align: 'left' as const },
    { title: 'Cantidad', w: 0.08, align: 'right' as const },
    { title: 'Valor unitario', w: 0.13, align: 'right' as const },
    { title: 'Subtotal', w: 0.13, align: 'right' as const },
    { title: 'Impuesto %', w: 0.11, align: 'right' as const },
    { title: 'Impuesto', w: 0.13, align: 'right' as const },
    { title: 'Total', w: 0.15, align: 'right' as const },
  ];
  const row = (cells: string[], bold: boolean) => {
    pdf.font(bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(7.5);
    let h = 0;
    cells.forEach((c, i) => (h = Math.max(h, pdf.heightOfString(c, { width: cols[i].w * width - 4 }))));
    ensure(h + 4);
    const y = pdf.y;
    let x = left;
    cells.forEach((c, i) => {
      pdf.text(c, x + 2, y, { width: cols[i].w * width - 4, align: cols[i].align });
      x += cols[i].w * width;
    });
    pdf.y = y + h + 3;
    pdf
      .moveTo(left, pdf.y - 1)
      .lineTo(left + width, pdf.y - 1)
      .lineWidth(0.2)
      .stroke();
  };
  row(
    cols.map((c) => c.title),
    true,
  );
  for (const l of document.lines) {
    row(
      [
        l.description,
        formatQuantity(l.quantity),
        formatCop(l.unitAmount),
        formatCop(l.subtotal),
        `${TAX_NAMES[l.taxCode]} ${formatRate(l.taxRateBp)}`,
        formatCop(l.taxAmount),
        formatCop(l.total),
      ],
      false,
    );
  }

  heading('Impuestos');
  for (const g of groupTaxes(document.lines)) {
    field(`${TAX_NAMES[g.code]} ${formatRate(g.rateBp)}`, `base ${formatCop(g.taxable)} — impuesto ${formatCop(g.tax)}`);
  }

  heading('Totales');
  field('Subtotal', formatCop(document.totals.subtotal));
  field('Total impuestos', formatCop(document.totals.taxAmount));
  field('Total a pagar', formatCop(document.totals.total));
  if (document.note) field('Nota', document.note);

  heading(codeLabel);
  ensure(24);
  pdf.font('Courier').fontSize(8).text(built.identityCode, left, pdf.y, { width });

  if (document.kind === 'invoice') {
    const r = document.resolution;
    heading('Autorización de numeración');
    ensure(30);
    pdf
      .font('Helvetica')
      .fontSize(8.5)
      .text(
        `Autorización de numeración de facturación DIAN No. ${r.number} del ${r.validFrom}, ` +
          `prefijo ${r.prefix || '(sin prefijo)'}, rango ${r.prefix}${r.from} al ${r.prefix}${r.to}, ` +
          `vigencia desde ${r.validFrom} hasta ${r.validUntil}.`,
        left,
        pdf.y,
        { width },
      );
  }

  heading('Software');
  ensure(30);
  pdf
    .font('Helvetica')
    .fontSize(8.5)
    .text(
      `Documento generado por Recaudo, software de facturación electrónica. ` +
        `Identificador del software DIAN: ${issuer.softwareId}. Emisor: ${issuer.legalName}, NIT ${issuer.nit}-${issuer.dv}.` +
        (document.environment === 'test' ? ' Ambiente de habilitación (pruebas): sin validez fiscal.' : ''),
      left,
      pdf.y,
      { width },
    );

  // Page numbers.
  const range = pdf.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    pdf.switchToPage(i);
    pdf.page.margins.bottom = 0; // the footer sits below the content's bottom margin
    pdf
      .font('Helvetica')
      .fontSize(7)
      .text(`${document.number} — página ${i - range.start + 1} de ${range.count}`, left, pdf.page.height - 35, {
        width,
        align: 'center',
        lineBreak: false,
      });
  }
  pdf.end();
  return done;
}

/** The QR matrix from uqr, drawn as filled squares (quiet zone of 4 modules, white background). */
function drawQr(pdf: PDFKit.PDFDocument, text: string, x: number, y: number, size: number): void {
  const qr = encodeQr(text, { ecc: 'M', border: 4 });
  const n = qr.size;
  const cell = size / n;
  pdf.save();
  pdf.rect(x, y, size, size).fill('white');
  pdf.fillColor('black');
  for (let r = 0; r < n; r++) {
    // Merge horizontal runs into one rectangle each: fewer path operations, same picture.
    let c = 0;
    while (c < n) {
      if (!qr.data[r][c]) {
        c++;
        continue;
      }
      const start = c;
      while (c < n && qr.data[r][c]) c++;
      pdf.rect(x + start * cell, y + r * cell, (c - start) * cell, cell);
    }
  }
  pdf.fill('black');
  pdf.restore();
}
