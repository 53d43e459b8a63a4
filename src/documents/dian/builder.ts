import type { BuiltDocument, DocumentBuilder, FiscalDocument } from './model.ts';
import { loadSigningKey } from './certificate.ts';
import { documentIdentityCode, softwareSecurityCode } from './cufe.ts';
import { qrText } from './qr.ts';
import { buildUnsignedUbl, DocumentBuildError } from './ubl.ts';
import { signUblDocument } from './xades.ts';

export type RenderPdf = (document: FiscalDocument, built: BuiltDocument) => Promise<Buffer>;

export interface DianDocumentBuilderOptions {
  /** The PDF renderer (dian/pdf.ts `renderFiscalPdf`); without it renderPdf throws. */
  renderPdf?: RenderPdf;
  /**
   * The SigningTime to claim. Default: the document's own issue instant (IssueDate + IssueTime,
   * Bogotá), which keeps a rebuild byte-identical; pass a clock to claim the actual signing time.
   */
  signingTime?: (document: FiscalDocument) => Date;
  /** `third party` when a technology provider signs for the issuer. */
  role?: 'supplier' | 'third party';
}

/** The issue instant of a document (`YYYY-MM-DD` + `HH:MM:SS-05:00`). */
export function issueInstant(document: Pick<FiscalDocument, 'issueDate' | 'issueTime'>): Date {
  const d = new Date(`${document.issueDate}T${document.issueTime}`);
  if (Number.isNaN(d.getTime())) throw new DocumentBuildError(`bad issue date/time ${document.issueDate} ${document.issueTime}`);
  return d;
}

/**
 * The DIAN legal document (pure: no database, no network): UBL 2.1 XML with DIAN's extensions,
 * CUFE/CUDE, QR text, XAdES-EPES signature with the issuer's PKCS#12.
 */
export class DianDocumentBuilder implements DocumentBuilder {
  constructor(private readonly options: DianDocumentBuilderOptions = {}) {}

  async build(document: FiscalDocument): Promise<BuiltDocument> {
    return buildDianDocument(document, this.options);
  }

  async renderPdf(document: FiscalDocument, built: BuiltDocument): Promise<Buffer> {
    if (!this.options.renderPdf) throw new Error('DianDocumentBuilder: no PDF renderer configured');
    return this.options.renderPdf(document, built);
  }
}

/** Synchronous core of build(): XML + identity code + QR text + signature. */
export function buildDianDocument(document: FiscalDocument, options: Omit<DianDocumentBuilderOptions, 'renderPdf'> = {}): BuiltDocument {
  if (!document.issuer.certificate) throw new DocumentBuildError('the issuer has no signing certificate');
  const identityCode = documentIdentityCode(document);
  const qr = qrText(document, identityCode);
  const unsigned = buildUnsignedUbl(document, {
    identityCode,
    qrText: qr,
    softwareSecurityCode: softwareSecurityCode(document.issuer.softwareId, document.issuer.softwarePin, document.number),
  });
  const key = loadSigningKey(document.issuer.certificate);
  const xml = signUblDocument(unsigned, {
    key,
    signingTime: (options.signingTime ?? issueInstant)(document),
    role: options.role ?? 'supplier',
  });
  return { xml, identityCode, qrText: qr };
}
