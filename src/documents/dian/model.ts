/**
 * The model of a DIAN fiscal document and the builder that makes it legal (the tax authority it is
 * sent to is a rail: src/rails/tax-authority/port.ts):
 *
 * - DocumentBuilder turns a resolved fiscal document (numbers already computed, folio already
 *   allocated) into the legal XML, its identity code (CUFE for invoices, CUDE for credit notes), the
 *   QR text and the PDF. Pure: no database, no network.
 *
 * Amounts are integer cents (bigint); tax rates are basis points (19 % = 1900) so no float ever
 * touches money. Dates are Bogotá local (`YYYY-MM-DD`, `HH:MM:SS-05:00`), as DIAN writes them.
 */

export type FiscalEnvironment = 'test' | 'live';
export type FiscalDocumentKind = 'invoice' | 'credit_note';

/** DIAN tax scheme codes: 01 IVA, 04 INC, 03 ICA. */
export type TaxCode = '01' | '04' | '03';

export interface FiscalAddress {
  line: string;
  /** DIVIPOLA 5-digit municipality code (11001 Bogotá). */
  cityCode: string;
  /** Country ISO 3166-1 alpha-2, `CO` unless known otherwise. */
  country: string;
}

export interface SigningCertificate {
  /** PKCS#12 bytes. */
  p12: Buffer;
  password: string;
}

/** The issuing company, from its fiscal profile for the environment. */
export interface FiscalIssuer {
  nit: string; // digits only, without the check digit
  dv: string; // NIT check digit
  legalName: string;
  tradeName: string | null;
  address: FiscalAddress;
  email: string | null;
  phone: string | null;
  /** DIAN responsibility codes (O-13, O-15, O-23, O-47, R-99-PN). */
  responsibilities: string[];
  /** DIAN regime code (48 IVA responsible, 49 not responsible). */
  taxRegime: string;
  softwareId: string;
  softwarePin: string;
  /** The signing certificate; null only where no signature is produced (should not happen in issue 7). */
  certificate: SigningCertificate | null;
}

/** The receiver, from the customer record. */
export interface FiscalReceiver {
  kind: 'natural' | 'company';
  /** SPEC document type: CC, CE, PASSPORT, NIT. */
  documentType: string;
  documentNumber: string;
  dv: string | null;
  /** Legal name (company) or first + last name (natural). */
  name: string;
  email: string | null;
  phone: string | null;
  address: FiscalAddress | null;
  responsibilities: string[];
  taxRegime: string | null;
}

export interface FiscalResolutionData {
  number: string;
  prefix: string;
  from: number;
  to: number;
  validFrom: string; // YYYY-MM-DD
  validUntil: string; // YYYY-MM-DD
  /** Technical key of the numbering range (invoices; enters the CUFE, never the XML). */
  technicalKey: string | null;
}

export interface FiscalLine {
  description: string;
  quantity: number;
  /** Unit price before tax, cents (for inclusive lines: the gross unit amount the customer sent). */
  unitAmount: bigint;
  /** Line extension amount (before tax), cents. */
  subtotal: bigint;
  taxCode: TaxCode;
  taxRateBp: number;
  taxAmount: bigint;
  total: bigint;
  taxBehavior: 'exclusive' | 'inclusive';
}

export interface FiscalTotals {
  subtotal: bigint;
  taxAmount: bigint;
  total: bigint;
}

/** For credit notes: the invoice the note corrects. */
export interface FiscalReference {
  number: string;
  /** CUFE of the referenced invoice. */
  cufe: string;
  issueDate: string; // YYYY-MM-DD
  /** DIAN credit-note concept: 1 partial return, 2 cancellation, 3 discount, 4 price adjustment. */
  discrepancyCode: '1' | '2' | '3' | '4' | '5' | '6';
  reason: string;
}

export interface FiscalDocument {
  kind: FiscalDocumentKind;
  environment: FiscalEnvironment;
  /** Prefix + folio, e.g. `SETP990000001`. */
  number: string;
  prefix: string;
  folio: number;
  issueDate: string; // YYYY-MM-DD, Bogotá
  issueTime: string; // HH:MM:SS-05:00
  dueDate: string | null;
  currency: string;
  note: string | null;
  issuer: FiscalIssuer;
  receiver: FiscalReceiver;
  resolution: FiscalResolutionData;
  lines: FiscalLine[];
  totals: FiscalTotals;
  /** DIAN payment means code (10 cash, 42 bank deposit, 47 debit transfer, 48 credit card, ZZZ other). */
  paymentMeansCode: string;
  /** 1 cash (paid), 2 credit (due later). */
  paymentMethod: '1' | '2';
  reference: FiscalReference | null;
}

export interface BuiltDocument {
  /** The signed XML, byte for byte what is submitted and served. */
  xml: string;
  /** CUFE (invoice) or CUDE (credit note), lowercase hex SHA-384. */
  identityCode: string;
  /** The QR text embedded in the XML and printed on the PDF. */
  qrText: string;
}

export interface DocumentBuilder {
  build(document: FiscalDocument): Promise<BuiltDocument>;
  /** Graphical representation (Spanish), with the QR image, the identity code and the numbering authorization. */
  renderPdf(document: FiscalDocument, built: BuiltDocument): Promise<Buffer>;
}
