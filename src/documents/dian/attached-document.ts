import { createHash } from 'node:crypto';
import type { BuiltDocument, FiscalDocument, FiscalIssuer, FiscalReceiver } from './model.ts';
import { child, normalizeLineEnds, parseXml, path, textOf } from './c14n.ts';
import { generateTestCertificate, loadSigningKey, type SigningKey } from './certificate.ts';
import { DIAN, documentTypeCode, DocumentBuildError, escapeAttr, escapeText, NS, PROFILES } from './ubl.ts';
import type { DianRuleFailure } from './verify.ts';
import { bogotaDateTime, signUblDocument } from './xades.ts';

/**
 * What DIAN delivers around an accepted document: the authority's ApplicationResponse (accepted,
 * with notifications, or rejected with rule messages) and the AttachedDocument the issuer sends
 * the buyer (the signed invoice plus the ApplicationResponse, embedded as CDATA), signed the same
 * way as the invoice.
 */

const NS_AR = 'urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2';
const NS_AD = 'urn:oasis:names:specification:ubl:schema:xsd:AttachedDocument-2';
const DIAN_NAME = 'Unidad Especial Dirección de Impuestos y Aduanas Nacionales';

type A = Record<string, string | null | undefined>;
function el(name: string, content: string, attrs?: A): string {
  let a = '';
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) a += ` ${k}="${escapeAttr(v)}"`;
  return `<${name}${a}>${content}</${name}>`;
}
const t = (name: string, value: string | null | undefined, attrs?: A) =>
  value === null || value === undefined ? '' : el(name, escapeText(value), attrs);
const cdata = (s: string) => `<![CDATA[${normalizeLineEnds(s).split(']]>').join(']]]]><![CDATA[>')}]]>`;

const rootNs = (defaultNs: string) =>
  ` xmlns="${defaultNs}" xmlns:cac="${NS.cac}" xmlns:cbc="${NS.cbc}" xmlns:ds="${NS.ds}" xmlns:ext="${NS.ext}" xmlns:sts="${NS.sts}" xmlns:xades="${NS.xades}"`;

function bogotaParts(d: Date): { date: string; time: string } {
  const s = bogotaDateTime(d);
  return { date: s.slice(0, 10), time: s.slice(11) };
}

function companyId(number: string, typeCode: string, dv: string | null): string {
  return t('cbc:CompanyID', number, {
    schemeAgencyID: DIAN.agencyId,
    schemeAgencyName: DIAN.agencyName,
    schemeID: typeCode === '31' ? dv : null,
    schemeName: typeCode,
  });
}

function issuerTaxScheme(i: Pick<FiscalIssuer, 'legalName' | 'nit' | 'dv' | 'responsibilities' | 'taxRegime'>): string {
  return el(
    'cac:PartyTaxScheme',
    t('cbc:RegistrationName', i.legalName) +
      companyId(i.nit, '31', i.dv) +
      t('cbc:TaxLevelCode', i.responsibilities.length ? i.responsibilities.join(';') : 'R-99-PN', { listName: i.taxRegime }) +
      el('cac:TaxScheme', i.taxRegime === '48' ? t('cbc:ID', '01') + t('cbc:Name', 'IVA') : t('cbc:ID', 'ZZ') + t('cbc:Name', 'No aplica')),
  );
}

function receiverTaxScheme(r: FiscalReceiver): string {
  const code = documentTypeCode(r.documentType);
  return el(
    'cac:PartyTaxScheme',
    t('cbc:RegistrationName', r.name) +
      companyId(r.documentNumber, code, r.dv) +
      t('cbc:TaxLevelCode', r.responsibilities.length ? r.responsibilities.join(';') : 'R-99-PN', { listName: r.taxRegime }) +
      el('cac:TaxScheme', r.taxRegime === '48' ? t('cbc:ID', '01') + t('cbc:Name', 'IVA') : t('cbc:ID', 'ZZ') + t('cbc:Name', 'No aplica')),
  );
}

let sandboxKey: SigningKey | null = null;
/** The sandbox authority's signing key: a self-signed certificate generated once per process, never stored. */
export function sandboxAuthorityKey(): SigningKey {
  sandboxKey ??= loadSigningKey(
    generateTestCertificate({
      nit: DIAN.nit,
      legalName: 'DIAN sandbox (Recaudo, not the real authority)',
      password: 'sandbox',
      validFrom: new Date('2020-01-01T00:00:00Z'),
      years: 20,
    }),
  );
  return sandboxKey;
}

export interface ApplicationResponseInput {
  document: Pick<FiscalDocument, 'kind' | 'environment' | 'number' | 'issuer'>;
  /** CUFE/CUDE of the document answered. */
  identityCode: string;
  outcome: 'accepted' | 'rejected';
  /** Rejection rules (rejected) or notifications (accepted), DIAN style `{ code, message }`. */
  messages: DianRuleFailure[];
  /** When the authority answered. */
  at: Date;
  /** The authority's key (default: the sandbox authority's). */
  key?: SigningKey;
}

/** DIAN's response codes: 02 validated, 04 rejected. */
export const RESPONSE_CODES = {
  accepted: { code: '02', text: 'Documento validado por la DIAN' },
  rejected: { code: '04', text: 'Documento rechazado por la DIAN' },
} as const;

/** A DIAN-shaped ApplicationResponse (signed by the authority's key). */
export function makeApplicationResponse(input: ApplicationResponseInput): string {
  const { document: d, identityCode } = input;
  const env = d.environment === 'live' ? '1' : '2';
  const when = bogotaParts(input.at);
  const response = RESPONSE_CODES[input.outcome];
  const uuid = createHash('sha384').update(`${d.number}${identityCode}${when.date}${when.time}${response.code}`).digest('hex');
  const id = String(BigInt('0x' + uuid.slice(0, 15)));
  const lines = input.messages.length ? input.messages : input.outcome === 'accepted' ? [{ code: '0000', message: '0' }] : [];
  const softwareSecurity = createHash('sha384').update(`${DIAN.nit}${uuid}`).digest('hex');
  const xml =
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' +
    `<ApplicationResponse${rootNs(NS_AR)}>` +
    el(
      'ext:UBLExtensions',
      el(
        'ext:UBLExtension',
        el(
          'ext:ExtensionContent',
          el(
            'sts:DianExtensions',
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
                t('sts:ProviderID', DIAN.nit, {
                  schemeAgencyID: DIAN.agencyId,
                  schemeAgencyName: DIAN.agencyName,
                  schemeID: DIAN.dv,
                  schemeName: '31',
                }) + t('sts:SoftwareID', 'recaudo-sandbox-authority', { schemeAgencyID: DIAN.agencyId, schemeAgencyName: DIAN.agencyName }),
              ) +
              t('sts:SoftwareSecurityCode', softwareSecurity, { schemeAgencyID: DIAN.agencyId, schemeAgencyName: DIAN.agencyName }) +
              el(
                'sts:AuthorizationProvider',
                t('sts:AuthorizationProviderID', DIAN.nit, {
                  schemeAgencyID: DIAN.agencyId,
                  schemeAgencyName: DIAN.agencyName,
                  schemeID: DIAN.dv,
                  schemeName: '31',
                }),
              ) +
              t('sts:QRCode', `https://catalogo-vpfe${env === '2' ? '-hab' : ''}.dian.gov.co/document/searchqr?documentkey=${identityCode}`),
          ),
        ),
      ) + '<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>',
    ) +
    t('cbc:UBLVersionID', 'UBL 2.1') +
    t('cbc:CustomizationID', '1') +
    t('cbc:ProfileID', 'DIAN 2.1') +
    t('cbc:ProfileExecutionID', env) +
    t('cbc:ID', id) +
    t('cbc:UUID', uuid, { schemeName: 'CUDE-SHA384' }) +
    t('cbc:IssueDate', when.date) +
    t('cbc:IssueTime', when.time) +
    el(
      'cac:SenderParty',
      el(
        'cac:PartyTaxScheme',
        t('cbc:RegistrationName', DIAN_NAME) + companyId(DIAN.nit, '31', DIAN.dv) + el('cac:TaxScheme', t('cbc:ID', '01') + t('cbc:Name', 'IVA')),
      ),
    ) +
    el('cac:ReceiverParty', issuerTaxScheme(d.issuer)) +
    el(
      'cac:DocumentResponse',
      el('cac:Response', t('cbc:ResponseCode', response.code) + t('cbc:Description', response.text)) +
        el('cac:DocumentReference', t('cbc:ID', d.number) + t('cbc:UUID', identityCode, { schemeName: PROFILES[d.kind].scheme })) +
        lines
          .map((m, i) =>
            el(
              'cac:LineResponse',
              el('cac:LineReference', t('cbc:LineID', String(i + 1))) +
                el('cac:Response', t('cbc:ResponseCode', m.code) + t('cbc:Description', m.message)),
            ),
          )
          .join(''),
    ) +
    '</ApplicationResponse>';
  return signUblDocument(xml, { key: input.key ?? sandboxAuthorityKey(), signingTime: input.at, role: 'third party' });
}

/** Reads the outcome back from an ApplicationResponse (response code and line messages). */
export function readApplicationResponse(xml: string): { accepted: boolean; code: string | null; messages: DianRuleFailure[] } {
  const root = parseXml(normalizeLineEnds(xml)).root;
  const dr = child(root, NS.cac, 'DocumentResponse');
  const code = textOf(path(dr, [NS.cac, 'Response'], [NS.cbc, 'ResponseCode']))?.trim() ?? null;
  const messages: DianRuleFailure[] = [];
  for (const lr of dr?.children ?? []) {
    if (lr.type !== 'element' || lr.local !== 'LineResponse') continue;
    const c = textOf(path(lr, [NS.cac, 'Response'], [NS.cbc, 'ResponseCode']))?.trim() ?? '';
    const m = textOf(path(lr, [NS.cac, 'Response'], [NS.cbc, 'Description'])) ?? '';
    if (c !== '0000') messages.push({ code: c, message: m });
  }
  return { accepted: code === RESPONSE_CODES.accepted.code, code, messages };
}

export interface AttachedDocumentInput {
  document: FiscalDocument;
  built: BuiltDocument;
  /** The authority's signed ApplicationResponse for the document. */
  applicationResponse: string;
  /** When the container is made (default: the document's issue instant). */
  at?: Date;
  /** The issuer's key (default: the document's certificate). */
  key?: SigningKey;
}

/** The AttachedDocument sent to the buyer: the signed document and the authority's answer, signed by the issuer. */
export function makeAttachedDocument(input: AttachedDocumentInput): string {
  const { document: d, built } = input;
  const cert = d.issuer.certificate;
  const key = input.key ?? (cert ? loadSigningKey(cert) : null);
  if (!key) throw new DocumentBuildError('the issuer has no signing certificate');
  const answer = readApplicationResponse(input.applicationResponse);
  const answerRoot = parseXml(normalizeLineEnds(input.applicationResponse)).root;
  const at = input.at ?? new Date(`${d.issueDate}T${d.issueTime}`);
  const when = bogotaParts(at);
  const validation = {
    date: textOf(child(answerRoot, NS.cbc, 'IssueDate')) ?? when.date,
    time: textOf(child(answerRoot, NS.cbc, 'IssueTime')) ?? when.time,
  };
  const env = d.environment === 'live' ? '1' : '2';
  const invoice = d.kind === 'invoice';
  const xml =
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' +
    `<AttachedDocument${rootNs(NS_AD)}>` +
    '<ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>' +
    t('cbc:UBLVersionID', 'UBL 2.1') +
    t('cbc:CustomizationID', 'Documentos adjuntos') +
    t('cbc:ProfileID', 'Factura Electrónica de Venta') +
    t('cbc:ProfileExecutionID', env) +
    t('cbc:ID', d.number) +
    t('cbc:IssueDate', when.date) +
    t('cbc:IssueTime', when.time) +
    t('cbc:DocumentType', 'Contenedor de Factura Electrónica') +
    t('cbc:ParentDocumentID', d.number) +
    el('cac:SenderParty', issuerTaxScheme(d.issuer)) +
    el('cac:ReceiverParty', receiverTaxScheme(d.receiver)) +
    el(
      'cac:Attachment',
      el('cac:ExternalReference', t('cbc:MimeCode', 'text/xml') + t('cbc:EncodingCode', 'UTF-8') + el('cbc:Description', cdata(built.xml))),
    ) +
    el(
      'cac:ParentDocumentLineReference',
      t('cbc:LineID', '1') +
        el(
          'cac:DocumentReference',
          t('cbc:ID', d.number) +
            t('cbc:UUID', built.identityCode, { schemeName: invoice ? 'CUFE-SHA384' : 'CUDE-SHA384' }) +
            t('cbc:IssueDate', d.issueDate) +
            t('cbc:DocumentType', 'ApplicationResponse') +
            el(
              'cac:Attachment',
              el(
                'cac:ExternalReference',
                t('cbc:MimeCode', 'text/xml') + t('cbc:EncodingCode', 'UTF-8') + el('cbc:Description', cdata(input.applicationResponse)),
              ),
            ) +
            el(
              'cac:ResultOfVerification',
              t('cbc:ValidatorID', DIAN_NAME) +
                t('cbc:ValidationResultCode', answer.code ?? '') +
                t('cbc:ValidationDate', validation.date) +
                t('cbc:ValidationTime', validation.time),
            ),
        ),
    ) +
    '</AttachedDocument>';
  return signUblDocument(xml, { key, signingTime: at, role: 'supplier' });
}

/** The embedded documents of an AttachedDocument, byte for byte as they were embedded. */
export function readAttachedDocument(xml: string): { document: string | null; applicationResponse: string | null } {
  const root = parseXml(normalizeLineEnds(xml)).root;
  return {
    document: textOf(path(root, [NS.cac, 'Attachment'], [NS.cac, 'ExternalReference'], [NS.cbc, 'Description'])),
    applicationResponse: textOf(
      path(
        root,
        [NS.cac, 'ParentDocumentLineReference'],
        [NS.cac, 'DocumentReference'],
        [NS.cac, 'Attachment'],
        [NS.cac, 'ExternalReference'],
        [NS.cbc, 'Description'],
      ),
    ),
  };
}
