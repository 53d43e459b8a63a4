import type { FiscalAddress, FiscalDocument, FiscalLine, TaxCode } from './model.ts';
import { nitCheckDigit } from './nit.ts';
import { dianAmount } from './cufe.ts';
import { divipolaPlace } from './places.ts';

/**
 * UBL 2.1 Invoice and CreditNote with DIAN's extensions (reference/dian.md "UBL 2.1 document"),
 * written directly as text, elements in schema order, without indentation. The second UBL
 * extension is left as an empty `ext:ExtensionContent` for the signature (xades.ts splices it in;
 * an empty extension content is schema-invalid, so only the signed document validates).
 */

export const NS = {
  invoice: 'urn:oasis:names:specification:ubl:schema:xsd:Invoice-2',
  creditNote: 'urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2',
  cac: 'urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2',
  cbc: 'urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2',
  ext: 'urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2',
  sts: 'dian:gov:co:facturaelectronica:Structures-2-1',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  xades: 'http://uri.etsi.org/01903/v1.3.2#',
} as const;

export const DIAN = {
  nit: '800197268',
  dv: '4',
  agencyId: '195',
  agencyName: 'CO, DIAN (Dirección de Impuestos y Aduanas Nacionales)',
} as const;

export const TAX_NAMES: Record<TaxCode, string> = { '01': 'IVA', '04': 'INC', '03': 'ICA' };

/** SPEC document types → DIAN identity document codes (TipoIdFiscal). */
export const DOCUMENT_TYPE_CODES: Record<string, string> = { CC: '13', CE: '22', NIT: '31', PASSPORT: '41' };

export const PROFILES = {
  invoice: { customization: '10', profile: 'DIAN 2.1: Factura Electrónica de Venta', typeCode: '01', scheme: 'CUFE-SHA384' },
  credit_note: { customization: '20', profile: 'DIAN 2.1: Nota Crédito de Factura Electrónica de Venta', typeCode: '91', scheme: 'CUDE-SHA384' },
} as const;

export class DocumentBuildError extends Error {}

// Characters XML 1.0 cannot carry at all (controls other than tab, line feed, carriage return; lone surrogates).
const INVALID_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text content: `&`, `<`, `>` escaped; a carriage return written `&#xD;` so it survives parsing. */
export function escapeText(s: string): string {
  return s.replace(INVALID_XML, '').replace(/[&<>\r]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&#xD;'));
}

/** Attribute values (double-quoted): whitespace characters as references so normalization keeps them. */
export function escapeAttr(s: string): string {
  return s
    .replace(INVALID_XML, '')
    .replace(/[&<>"\t\n\r]/g, (c) =>
      c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : c === '\t' ? '&#x9;' : c === '\n' ? '&#xA;' : '&#xD;',
    );
}

type Attrs = Record<string, string | null | undefined>;

function el(name: string, content: string | null | undefined, attrs?: Attrs): string {
  if (content === null || content === undefined) return '';
  let a = '';
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) a += ` ${k}="${escapeAttr(v)}"`;
  return `<${name}${a}>${content}</${name}>`;
}

/** An element with escaped text; omitted when the value is null/undefined. */
function t(name: string, value: string | null | undefined, attrs?: Attrs): string {
  return value === null || value === undefined ? '' : el(name, escapeText(value), attrs);
}

export function percent(bp: number): string {
  if (!Number.isInteger(bp) || bp < 0) throw new DocumentBuildError(`bad tax rate ${bp}`);
  return `${Math.trunc(bp / 100)}.${String(bp % 100).padStart(2, '0')}`;
}

export function quantityText(q: number): string {
  if (!Number.isFinite(q) || q <= 0) throw new DocumentBuildError(`bad quantity ${q}`);
  // At most six decimals (float noise such as 2.0700000000000003 is not a quantity).
  const s = String(Number(q.toFixed(6)));
  if (/e/i.test(s) || s === '0') throw new DocumentBuildError(`bad quantity ${q}`);
  return s.includes('.') ? s : `${s}.00`;
}

function amount(name: string, cents: bigint, currency: string): string {
  return el(name, dianAmount(cents), { currencyID: currency });
}

export function documentTypeCode(documentType: string): string {
  const code = DOCUMENT_TYPE_CODES[documentType.toUpperCase()] ?? (/^\d{2}$/.test(documentType) ? documentType : null);
  if (!code) throw new DocumentBuildError(`unknown receiver document type ${documentType}`);
  return code;
}

function companyId(number: string, typeCode: string, dv: string | null): string {
  return t('cbc:CompanyID', number, {
    schemeAgencyID: DIAN.agencyId,
    schemeAgencyName: DIAN.agencyName,
    schemeID: typeCode === '31' ? dv : null,
    schemeName: typeCode,
  });
}

function address(tag: string, a: FiscalAddress): string {
  const place = divipolaPlace(a.cityCode);
  if (!place) throw new DocumentBuildError(`unknown DIVIPOLA municipality ${a.cityCode}`);
  const country = (a.country || 'CO').toUpperCase();
  return el(
    tag,
    t('cbc:ID', place.cityCode) +
      t('cbc:CityName', place.cityName) +
      t('cbc:CountrySubentity', place.departmentName) +
      t('cbc:CountrySubentityCode', place.departmentCode) +
      el('cac:AddressLine', t('cbc:Line', a.line)) +
      el('cac:Country', t('cbc:IdentificationCode', country) + (country === 'CO' ? t('cbc:Name', 'Colombia', { languageID: 'es' }) : '')),
  );
}

function partyTaxScheme(regime: string | null): string {
  // Regime 48 (responsible for IVA) declares the IVA scheme; otherwise DIAN's "ZZ No aplica".
  return regime === '48'
    ? el('cac:TaxScheme', t('cbc:ID', '01') + t('cbc:Name', 'IVA'))
    : el('cac:TaxScheme', t('cbc:ID', 'ZZ') + t('cbc:Name', 'No aplica'));
}

function contact(email: string | null, phone: string | null): string {
  if (!email && !phone) return '';
  return el('cac:Contact', t('cbc:Telephone', phone) + t('cbc:ElectronicMail', email));
}

function issuerParty(d: FiscalDocument): string {
  const i = d.issuer;
  if (nitCheckDigit(i.nit) !== Number(i.dv)) throw new DocumentBuildError(`issuer NIT ${i.nit} has check digit ${nitCheckDigit(i.nit)}, not ${i.dv}`);
  const responsibilities = i.responsibilities.length ? i.responsibilities.join(';') : 'R-99-PN';
  return el(
    'cac:AccountingSupplierParty',
    t('cbc:AdditionalAccountID', '1') +
      el(
        'cac:Party',
        el('cac:PartyName', t('cbc:Name', i.tradeName || i.legalName)) +
          el('cac:PhysicalLocation', address('cac:Address', i.address)) +
          el(
            'cac:PartyTaxScheme',
            t('cbc:RegistrationName', i.legalName) +
              companyId(i.nit, '31', i.dv) +
              t('cbc:TaxLevelCode', responsibilities, { listName: i.taxRegime }) +
              address('cac:RegistrationAddress', i.address) +
              partyTaxScheme(i.taxRegime),
          ) +
          el(
            'cac:PartyLegalEntity',
            t('cbc:RegistrationName', i.legalName) + companyId(i.nit, '31', i.dv) + el('cac:CorporateRegistrationScheme', t('cbc:ID', d.prefix)),
          ) +
          contact(i.email, i.phone),
      ),
  );
}

function receiverParty(d: FiscalDocument): string {
  const r = d.receiver;
  const typeCode = documentTypeCode(r.documentType);
  if (typeCode === '31') {
    if (r.dv === null || nitCheckDigit(r.documentNumber) !== Number(r.dv)) {
      throw new DocumentBuildError(`receiver NIT ${r.documentNumber} needs check digit ${nitCheckDigit(r.documentNumber)}`);
    }
  }
  const dv = typeCode === '31' ? r.dv : null;
  const responsibilities = r.responsibilities.length ? r.responsibilities.join(';') : 'R-99-PN';
  return el(
    'cac:AccountingCustomerParty',
    t('cbc:AdditionalAccountID', r.kind === 'company' ? '1' : '2') +
      el(
        'cac:Party',
        el('cac:PartyIdentification', t('cbc:ID', r.documentNumber, { schemeID: dv, schemeName: typeCode })) +
          el('cac:PartyName', t('cbc:Name', r.name)) +
          (r.address ? el('cac:PhysicalLocation', address('cac:Address', r.address)) : '') +
          el(
            'cac:PartyTaxScheme',
            t('cbc:RegistrationName', r.name) +
              companyId(r.documentNumber, typeCode, dv) +
              t('cbc:TaxLevelCode', responsibilities, { listName: r.taxRegime }) +
              (r.address ? address('cac:RegistrationAddress', r.address) : '') +
              partyTaxScheme(r.taxRegime),
          ) +
          el('cac:PartyLegalEntity', t('cbc:RegistrationName', r.name) + companyId(r.documentNumber, typeCode, dv)) +
          contact(r.email, r.phone),
      ),
  );
}

interface TaxGroup {
  code: TaxCode;
  amount: bigint;
  rates: Array<{ rateBp: number; taxable: bigint; amount: bigint }>;
}

/** Taxes grouped by tax code (one TaxTotal each) and rate (one TaxSubtotal each), codes and rates ascending. */
export function taxGroups(lines: FiscalLine[]): TaxGroup[] {
  const byCode = new Map<TaxCode, Map<number, { taxable: bigint; amount: bigint }>>();
  for (const l of lines) {
    let rates = byCode.get(l.taxCode);
    if (!rates) byCode.set(l.taxCode, (rates = new Map()));
    const r = rates.get(l.taxRateBp) ?? { taxable: 0n, amount: 0n };
    r.taxable += l.subtotal;
    r.amount += l.taxAmount;
    rates.set(l.taxRateBp, r);
  }
  return [...byCode.entries()]
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([code, rates]) => {
      const list = [...rates.entries()].sort((a, b) => a[0] - b[0]).map(([rateBp, v]) => ({ rateBp, ...v }));
      return { code, amount: list.reduce((s, r) => s + r.amount, 0n), rates: list };
    });
}

function taxSubtotal(code: TaxCode, rateBp: number, taxable: bigint, tax: bigint, cur: string): string {
  return el(
    'cac:TaxSubtotal',
    amount('cbc:TaxableAmount', taxable, cur) +
      amount('cbc:TaxAmount', tax, cur) +
      el('cac:TaxCategory', t('cbc:Percent', percent(rateBp)) + el('cac:TaxScheme', t('cbc:ID', code) + t('cbc:Name', TAX_NAMES[code]))),
  );
}

/**
 * Price per line: the unit price before tax with BaseQuantity 1 when it multiplies exactly to the
 * line extension; otherwise (tax-inclusive lines, fractional quantities) the line extension priced
 * for the whole quantity (BaseQuantity = quantity), so PriceAmount × quantity / BaseQuantity is the
 * line extension to the cent.
 */
export function linePrice(l: FiscalLine): { price: bigint; baseQuantity: number } {
  if (l.taxBehavior === 'exclusive' && Number.isInteger(l.quantity) && l.unitAmount * BigInt(l.quantity) === l.subtotal) {
    return { price: l.unitAmount, baseQuantity: 1 };
  }
  return { price: l.subtotal, baseQuantity: l.quantity };
}

function line(d: FiscalDocument, l: FiscalLine, index: number): string {
  const cur = d.currency;
  const invoice = d.kind === 'invoice';
  const { price, baseQuantity } = linePrice(l);
  return el(
    invoice ? 'cac:InvoiceLine' : 'cac:CreditNoteLine',
    t('cbc:ID', String(index + 1)) +
      t(invoice ? 'cbc:InvoicedQuantity' : 'cbc:CreditedQuantity', quantityText(l.quantity), { unitCode: '94' }) +
      amount('cbc:LineExtensionAmount', l.subtotal, cur) +
      el('cac:TaxTotal', amount('cbc:TaxAmount', l.taxAmount, cur) + taxSubtotal(l.taxCode, l.taxRateBp, l.subtotal, l.taxAmount, cur)) +
      el('cac:Item', t('cbc:Description', l.description)) +
      el('cac:Price', amount('cbc:PriceAmount', price, cur) + t('cbc:BaseQuantity', quantityText(baseQuantity), { unitCode: '94' })),
  );
}

/** Refuses a document whose numbers do not add up (DIAN would reject it: FAU02/FAU06/FAU14). */
export function assertConsistent(d: FiscalDocument): void {
  if (!d.lines.length) throw new DocumentBuildError('a document needs at least one line');
  let sub = 0n,
    tax = 0n;
  for (const l of d.lines) {
    if (l.subtotal < 0n || l.taxAmount < 0n) throw new DocumentBuildError('negative line amounts');
    if (l.subtotal + l.taxAmount !== l.total) throw new DocumentBuildError(`line "${l.description}": subtotal + tax ≠ total`);
    sub += l.subtotal;
    tax += l.taxAmount;
  }
  if (sub !== d.totals.subtotal) throw new DocumentBuildError('totals.subtotal is not the sum of the lines');
  if (tax !== d.totals.taxAmount) throw new DocumentBuildError('totals.taxAmount is not the sum of the line taxes');
  if (sub + tax !== d.totals.total) throw new DocumentBuildError('totals.total ≠ subtotal + tax');
  if (d.kind === 'credit_note' && !d.reference) throw new DocumentBuildError('a credit note references its invoice');
  if (d.kind === 'invoice' && !d.resolution.technicalKey) throw new DocumentBuildError('an invoice needs the technical key of its numbering range');
}

export interface UblParts {
  identityCode: string;
  qrText: string;
  softwareSecurityCode: string;
}

/** The unsigned document text (XML declaration, one line of content, an empty signature extension). */
export function buildUnsignedUbl(d: FiscalDocument, parts: UblParts): string {
  assertConsistent(d);
  const invoice = d.kind === 'invoice';
  const p = PROFILES[d.kind];
  const cur = d.currency;
  const env = d.environment === 'live' ? '1' : '2';
  const root = invoice ? 'Invoice' : 'CreditNote';
  const ref = d.reference;

  const dianExtensions = el(
    'sts:DianExtensions',
    (invoice
      ? el(
          'sts:InvoiceControl',
          t('sts:InvoiceAuthorization', d.resolution.number) +
            el('sts:AuthorizationPeriod', t('cbc:StartDate', d.resolution.validFrom) + t('cbc:EndDate', d.resolution.validUntil)) +
            el(
              'sts:AuthorizedInvoices',
              t('sts:Prefix', d.resolution.prefix || null) + t('sts:From', String(d.resolution.from)) + t('sts:To', String(d.resolution.to)),
            ),
        )
      : '') +
      el(
        'sts:InvoiceSource',
        t('cbc:IdentificationCode', 'CO', {
          listAgencyID: '6',
          listAgencyName: 'United Nations Economic Commission for Europe',
          listSchemeURI: 'urn:oasis:names:specification:ubl:codelist:gc:CountryIdentificationCode-2.1',
        }),
      ) +
      el(
        'sts:SoftwareProvider',
        t('sts:ProviderID', d.issuer.nit, {
          schemeAgencyID: DIAN.agencyId,
          schemeAgencyName: DIAN.agencyName,
          schemeID: d.issuer.dv,
          schemeName: '31',
        }) + t('sts:SoftwareID', d.issuer.softwareId, { schemeAgencyID: DIAN.agencyId, schemeAgencyName: DIAN.agencyName }),
      ) +
      t('sts:SoftwareSecurityCode', parts.softwareSecurityCode, { schemeAgencyID: DIAN.agencyId, schemeAgencyName: DIAN.agencyName }) +
      el(
        'sts:AuthorizationProvider',
        t('sts:AuthorizationProviderID', DIAN.nit, {
          schemeAgencyID: DIAN.agencyId,
          schemeAgencyName: DIAN.agencyName,
          schemeID: DIAN.dv,
          schemeName: '31',
        }),
      ) +
      t('sts:QRCode', parts.qrText),
  );

  const header =
    t('cbc:UBLVersionID', 'UBL 2.1') +
    t('cbc:CustomizationID', p.customization) +
    t('cbc:ProfileID', p.profile) +
    t('cbc:ProfileExecutionID', env) +
    t('cbc:ID', d.number) +
    t('cbc:UUID', parts.identityCode, { schemeID: env, schemeName: p.scheme }) +
    t('cbc:IssueDate', d.issueDate) +
    t('cbc:IssueTime', d.issueTime) +
    (invoice ? t('cbc:DueDate', d.dueDate) + t('cbc:InvoiceTypeCode', p.typeCode) : t('cbc:CreditNoteTypeCode', p.typeCode)) +
    t('cbc:Note', d.note || (ref ? ref.reason : null)) +
    t('cbc:DocumentCurrencyCode', cur, {
      listAgencyID: '6',
      listAgencyName: 'United Nations Economic Commission for Europe',
      listID: 'ISO 4217 Alpha',
    }) +
    t('cbc:LineCountNumeric', String(d.lines.length)) +
    (!invoice && ref
      ? el(
          'cac:DiscrepancyResponse',
          t('cbc:ReferenceID', ref.number) + t('cbc:ResponseCode', ref.discrepancyCode) + t('cbc:Description', ref.reason),
        ) +
        el(
          'cac:BillingReference',
          el(
            'cac:InvoiceDocumentReference',
            t('cbc:ID', ref.number) + t('cbc:UUID', ref.cufe, { schemeName: 'CUFE-SHA384' }) + t('cbc:IssueDate', ref.issueDate),
          ),
        )
      : '');

  const paymentMeans = el(
    'cac:PaymentMeans',
    t('cbc:ID', d.paymentMethod) +
      t('cbc:PaymentMeansCode', d.paymentMeansCode) +
      t('cbc:PaymentDueDate', d.dueDate ?? (d.paymentMethod === '2' ? d.issueDate : null)),
  );

  const taxTotals = taxGroups(d.lines)
    .map((g) =>
      el(
        'cac:TaxTotal',
        amount('cbc:TaxAmount', g.amount, cur) + g.rates.map((r) => taxSubtotal(g.code, r.rateBp, r.taxable, r.amount, cur)).join(''),
      ),
    )
    .join('');

  const monetary = el(
    'cac:LegalMonetaryTotal',
    amount('cbc:LineExtensionAmount', d.totals.subtotal, cur) +
      amount('cbc:TaxExclusiveAmount', d.totals.subtotal, cur) +
      amount('cbc:TaxInclusiveAmount', d.totals.subtotal + d.totals.taxAmount, cur) +
      amount('cbc:PayableAmount', d.totals.total, cur),
  );

  const nsAttrs =
    ` xmlns="${invoice ? NS.invoice : NS.creditNote}" xmlns:cac="${NS.cac}" xmlns:cbc="${NS.cbc}" xmlns:ds="${NS.ds}"` +
    ` xmlns:ext="${NS.ext}" xmlns:sts="${NS.sts}" xmlns:xades="${NS.xades}"`;

  return (
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' +
    `<${root}${nsAttrs}>` +
    el(
      'ext:UBLExtensions',
      el('ext:UBLExtension', el('ext:ExtensionContent', dianExtensions)) +
        '<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>',
    ) +
    header +
    issuerParty(d) +
    receiverParty(d) +
    paymentMeans +
    taxTotals +
    monetary +
    d.lines.map((l, i) => line(d, l, i)).join('') +
    `</${root}>`
  );
}
