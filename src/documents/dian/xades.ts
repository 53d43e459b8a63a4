import { createHash, createPublicKey, sign as rsaSign, verify as rsaVerify, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import {
  attr,
  canonicalize,
  canonicalizeDocument,
  child,
  children,
  descendants,
  inScopeNamespaces,
  parseXml,
  path,
  textOf,
  type XmlDocument,
  type XmlElement,
} from './c14n.ts';
import { distinguishedName, type SigningKey } from './certificate.ts';
import { escapeText, NS } from './ubl.ts';

/**
 * XAdES-EPES enveloped signature with DIAN's policy v2 (reference/dian.md "Signature"): inclusive
 * C14N 1.0, RSA-SHA256, three references (the document with the enveloped-signature transform,
 * KeyInfo, SignedProperties). The signature is spliced into the untouched document text, in the
 * first empty `ext:ExtensionContent` of the root's `ext:UBLExtensions`; every digest is computed on
 * the canonical form of the parsed text with the signature in its final place (inclusive C14N
 * carries the ancestors' namespaces).
 */

export const ALG = {
  c14n: 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315',
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  enveloped: 'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
  signedProperties: 'http://uri.etsi.org/01903#SignedProperties',
} as const;

export const DIAN_POLICY = {
  identifier: 'https://facturaelectronica.dian.gov.co/politicadefirma/v2/politicadefirmav2.pdf',
  description: 'Política de firma para facturas electrónicas de la República de Colombia',
  digest: 'dMoMvtcG5aIzgYo0tIsSQeVJBDnUnfSOfBpxXrmor0Y=',
} as const;

const DIGESTS: Record<string, string> = {
  'http://www.w3.org/2001/04/xmlenc#sha256': 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384': 'sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512': 'sha512',
};
const SIGNATURE_METHODS: Record<string, string> = {
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256': 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384': 'sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': 'sha512',
};

export class SignatureError extends Error {}

function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('base64');
}

/** `YYYY-MM-DDTHH:MM:SS-05:00`: the instant in Bogotá time (UTC−5, no daylight saving). */
export function bogotaDateTime(d: Date): string {
  const b = new Date(d.getTime() - 5 * 3_600_000);
  return b.toISOString().slice(0, 19) + '-05:00';
}

/** The empty extension content that receives the signature. */
function signatureSlot(doc: XmlDocument): XmlElement {
  const exts = child(doc.root, NS.ext, 'UBLExtensions');
  if (!exts) throw new SignatureError('the document has no ext:UBLExtensions');
  for (const ext of children(exts, NS.ext, 'UBLExtension')) {
    const content = child(ext, NS.ext, 'ExtensionContent');
    if (content && !children(content).length && !textOf(content)?.trim()) return content;
  }
  throw new SignatureError('the document has no empty ext:ExtensionContent for the signature');
}

export interface SignOptions {
  key: SigningKey;
  /** The instant claimed as SigningTime; must fall inside the certificate's validity. */
  signingTime: Date;
  /** `supplier` (the issuer signs) or `third party` (a provider signs). */
  role?: 'supplier' | 'third party';
}

const P = '@@'; // placeholder marker, never valid in base64

function signatureTemplate(id: string, key: SigningKey, signingTime: string, role: string, digests: [string, string, string]): string {
  const dm = `<ds:DigestMethod Algorithm="${ALG.sha256}"/>`;
  const signedInfo =
    `<ds:SignedInfo><ds:CanonicalizationMethod Algorithm="${ALG.c14n}"/><ds:SignatureMethod Algorithm="${ALG.rsaSha256}"/>` +
    `<ds:Reference Id="${id}-ref0" URI=""><ds:Transforms><ds:Transform Algorithm="${ALG.enveloped}"/></ds:Transforms>${dm}<ds:DigestValue>${digests[0]}</ds:DigestValue></ds:Reference>` +
    `<ds:Reference URI="#${id}-keyinfo">${dm}<ds:DigestValue>${digests[1]}</ds:DigestValue></ds:Reference>` +
    `<ds:Reference Type="${ALG.signedProperties}" URI="#${id}-signedprops">${dm}<ds:DigestValue>${digests[2]}</ds:DigestValue></ds:Reference>` +
    `</ds:SignedInfo>`;
  return (
    `<ds:Signature xmlns:ds="${NS.ds}" Id="${id}">` +
    signedInfo +
    `<ds:SignatureValue Id="${id}-sigvalue">${P}SV${P}</ds:SignatureValue>` +
    `<ds:KeyInfo Id="${id}-keyinfo"><ds:X509Data><ds:X509Certificate>${key.certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>` +
    `<ds:Object><xades:QualifyingProperties xmlns:xades="${NS.xades}" Target="#${id}"><xades:SignedProperties Id="${id}-signedprops"><xades:SignedSignatureProperties>` +
    `<xades:SigningTime>${signingTime}</xades:SigningTime>` +
    `<xades:SigningCertificate><xades:Cert><xades:CertDigest>${dm}<ds:DigestValue>${key.certificateDigest}</ds:DigestValue></xades:CertDigest>` +
    `<xades:IssuerSerial><ds:X509IssuerName>${escapeText(key.issuerName)}</ds:X509IssuerName><ds:X509SerialNumber>${key.serialNumber}</ds:X509SerialNumber></xades:IssuerSerial></xades:Cert></xades:SigningCertificate>` +
    `<xades:SignaturePolicyIdentifier><xades:SignaturePolicyId><xades:SigPolicyId><xades:Identifier>${DIAN_POLICY.identifier}</xades:Identifier><xades:Description>${escapeText(DIAN_POLICY.description)}</xades:Description></xades:SigPolicyId>` +
    `<xades:SigPolicyHash>${dm}<ds:DigestValue>${DIAN_POLICY.digest}</ds:DigestValue></xades:SigPolicyHash></xades:SignaturePolicyId></xades:SignaturePolicyIdentifier>` +
    `<xades:SignerRole><xades:ClaimedRoles><xades:ClaimedRole>${escapeText(role)}</xades:ClaimedRole></xades:ClaimedRoles></xades:SignerRole>` +
    `</xades:SignedSignatureProperties></xades:SignedProperties></xades:QualifyingProperties></ds:Object></ds:Signature>`
  );
}

/**
 * Signs a UBL document (Invoice, CreditNote, AttachedDocument...) that has an empty
 * `ext:ExtensionContent` for the signature. Deterministic: the same text, key and time give the
 * same bytes (the signature id derives from the document's digest; RSA PKCS#1 v1.5 is deterministic).
 */
export function signUblDocument(xml: string, opts: SignOptions): string {
  const { key } = opts;
  if (opts.signingTime < key.notBefore || opts.signingTime > key.notAfter) {
    throw new SignatureError(`signing time ${opts.signingTime.toISOString()} is outside the certificate's validity`);
  }
  const doc = parseXml(xml);
  const slot = signatureSlot(doc);
  for (let e: XmlElement | null = slot; e; e = e.parent) {
    // The fragments below are canonicalized without their ancestors' xml:* attributes (C14N would inherit them).
    if (e.attrs.some((a) => a.prefix === 'xml')) throw new SignatureError(`xml:* attributes on <${e.name}> above the signature are not supported`);
  }
  const ctx = inScopeNamespaces(slot);
  // Document reference: the whole document without the signature = the document with the slot empty.
  const docDigest = sha256(canonicalizeDocument(doc));
  const id =
    'xmldsig-' +
    createHash('sha256')
      .update(xml)
      .digest('hex')
      .slice(0, 32)
      .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
  const signingTime = bogotaDateTime(opts.signingTime);
  const role = opts.role ?? 'supplier';

  // KeyInfo and SignedProperties do not depend on SignedInfo: canonicalize them in the signature's context.
  const draft = parseXml(signatureTemplate(id, key, signingTime, role, [docDigest, 'x', 'x']), ctx).root;
  const keyInfo = child(draft, NS.ds, 'KeyInfo')!;
  const signedProps = path(draft, [NS.ds, 'Object'], [NS.xades, 'QualifyingProperties'], [NS.xades, 'SignedProperties'])!;
  const sig = signatureTemplate(id, key, signingTime, role, [
    docDigest,
    sha256(canonicalize(keyInfo, { inherited: ctx })),
    sha256(canonicalize(signedProps, { inherited: ctx })),
  ]);
  const signedInfo = child(parseXml(sig, ctx).root, NS.ds, 'SignedInfo')!;
  const value = rsaSign('sha256', Buffer.from(canonicalize(signedInfo, { inherited: ctx }), 'utf8'), key.privateKey).toString('base64');
  const signature = sig.replace(`${P}SV${P}`, value);

  if (slot.startTagEnd === slot.end) {
    // Written self-closing: open it (same canonical form) and put the signature inside.
    const open = xml.slice(slot.start, slot.startTagEnd).replace(/\s*\/>$/, '>');
    return xml.slice(0, slot.start) + open + signature + `</${slot.name}>` + xml.slice(slot.end);
  }
  return xml.slice(0, slot.startTagEnd) + signature + xml.slice(slot.startTagEnd);
}

// ---------------------------------------------------------------- verification

export interface SignatureCheck {
  ok: boolean;
  /** What failed, in plain words (empty when ok). */
  problems: string[];
  /** The signer's certificate (PEM) when one was found. */
  certificatePem: string | null;
  signingTime: string | null;
}

function findById(root: XmlElement, id: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    for (const a of e.attrs)
      if ((a.local === 'Id' || a.local === 'ID' || a.local === 'id') && a.value === id) {
        out.push(e);
        break;
      }
    for (const c of e.children) if (c.type === 'element') walk(c);
  };
  walk(root);
  return out;
}

/**
 * Checks the signature of a parsed UBL document the way DIAN's validator would: exactly one
 * ds:Signature in the UBL extensions; the three references (whole document with the enveloped
 * transform, KeyInfo, SignedProperties) digest to their values; SignedInfo's RSA signature verifies
 * with the certificate in KeyInfo; and the XAdES semantics (certificate digest, issuer and serial,
 * DIAN policy identifier and hash, SigningTime inside the validity, a claimed role).
 */
export function verifyUblSignature(doc: XmlDocument): SignatureCheck {
  const problems: string[] = [];
  const result = (certificatePem: string | null, signingTime: string | null): SignatureCheck => ({
    ok: problems.length === 0,
    problems,
    certificatePem,
    signingTime,
  });
  const all = descendants(doc.root, NS.ds, 'Signature');
  if (all.length !== 1) {
    problems.push(all.length ? 'more than one ds:Signature in the document' : 'the document is not signed (no ds:Signature)');
    return result(null, null);
  }
  const signature = all[0];
  const holder = signature.parent;
  if (!holder || holder.ns !== NS.ext || holder.local !== 'ExtensionContent' || holder.parent?.parent?.parent !== doc.root) {
    problems.push('ds:Signature is not in the UBL extensions of the root element');
    return result(null, null);
  }
  // Not under any digest: hold them to the schema (ds:Signature and ds:SignatureValue carry only Id).
  for (const e of [signature, child(signature, NS.ds, 'SignatureValue')]) {
    const extra = e?.attrs.filter((a) => a.name !== 'Id') ?? [];
    if (extra.length) problems.push(`unexpected attribute ${extra[0].name} on ${e!.name}`);
  }
  const signedInfo = child(signature, NS.ds, 'SignedInfo');
  const sigValue = textOf(child(signature, NS.ds, 'SignatureValue'))?.replace(/\s+/g, '') ?? '';
  const certB64 = textOf(path(signature, [NS.ds, 'KeyInfo'], [NS.ds, 'X509Data'], [NS.ds, 'X509Certificate']))?.replace(/\s+/g, '') ?? '';
  if (!signedInfo || !sigValue || !certB64) {
    problems.push('ds:Signature lacks SignedInfo, SignatureValue or the X509 certificate');
    return result(null, null);
  }
  // Buffer.from(…, 'base64') skips characters it does not know: insist on strict base64 first.
  const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  if (!BASE64.test(sigValue) || !BASE64.test(certB64)) {
    problems.push('SignatureValue or X509Certificate is not valid base64');
    return result(null, null);
  }
  let x509: X509Certificate;
  const certDer = Buffer.from(certB64, 'base64');
  try {
    x509 = new X509Certificate(certDer);
  } catch {
    problems.push('the X509 certificate cannot be read');
    return result(null, null);
  }
  const certificatePem = x509.toString();

  if (attr(child(signedInfo, NS.ds, 'CanonicalizationMethod'), 'Algorithm') !== ALG.c14n)
    problems.push('SignedInfo canonicalization is not inclusive C14N 1.0');
  const sigAlg = SIGNATURE_METHODS[attr(child(signedInfo, NS.ds, 'SignatureMethod'), 'Algorithm') ?? ''];
  if (!sigAlg) problems.push('signature method is not RSA-SHA2');

  const keyInfo = child(signature, NS.ds, 'KeyInfo');
  const signedProps = path(signature, [NS.ds, 'Object'], [NS.xades, 'QualifyingProperties'], [NS.xades, 'SignedProperties']);
  let coversDocument = false,
    coversKeyInfo = false,
    coversProps = false;
  for (const ref of children(signedInfo, NS.ds, 'Reference')) {
    const uri = attr(ref, 'URI');
    const hash = DIGESTS[attr(child(ref, NS.ds, 'DigestMethod'), 'Algorithm') ?? ''];
    const expected = textOf(child(ref, NS.ds, 'DigestValue'))?.replace(/\s+/g, '') ?? '';
    if (!hash) {
      problems.push(`reference ${uri}: unsupported digest method`);
      continue;
    }
    const transformsEl = child(ref, NS.ds, 'Transforms');
    const transforms = transformsEl ? children(transformsEl, NS.ds, 'Transform').map((tr) => attr(tr, 'Algorithm')) : [];
    let canonical: string;
    if (uri === '') {
      if (!transforms.includes(ALG.enveloped)) {
        problems.push('the document reference lacks the enveloped-signature transform');
        continue;
      }
      if (transforms.some((a) => a !== ALG.enveloped && a !== ALG.c14n)) {
        problems.push('the document reference has an unsupported transform');
        continue;
      }
      canonical = canonicalizeDocument(doc, signature);
      coversDocument = true;
    } else if (uri?.startsWith('#')) {
      if (transforms.some((a) => a !== ALG.c14n)) {
        problems.push(`reference ${uri}: unsupported transform`);
        continue;
      }
      const targets = findById(doc.root, uri.slice(1));
      if (targets.length !== 1) {
        problems.push(`reference ${uri}: ${targets.length ? 'ambiguous id' : 'no such element'}`);
        continue;
      }
      const target = targets[0];
      if (target === keyInfo) coversKeyInfo = true;
      if (target === signedProps) {
        if (attr(ref, 'Type') !== ALG.signedProperties) problems.push('the SignedProperties reference lacks its Type');
        coversProps = true;
      }
      canonical = canonicalize(target);
    } else {
      problems.push(`reference ${uri}: unsupported URI`);
      continue;
    }
    const actual = createHash(hash).update(canonical, 'utf8').digest('base64');
    if (actual !== expected)
      problems.push(
        `reference ${uri === '' ? '(document)' : uri}: digest does not match (${uri === '' ? 'the document was changed after signing' : 'changed after signing'})`,
      );
  }
  if (!coversDocument) problems.push('no reference covers the whole document');
  if (!coversKeyInfo) problems.push('no reference covers KeyInfo');
  if (!coversProps || !signedProps) problems.push('no reference covers the XAdES SignedProperties');

  if (sigAlg) {
    const ok = rsaVerify(sigAlg, Buffer.from(canonicalize(signedInfo), 'utf8'), createPublicKey(certificatePem), Buffer.from(sigValue, 'base64'));
    if (!ok) problems.push('the signature value does not verify with the certificate');
  }

  // XAdES-EPES semantics (what xmlsec1 does not check).
  let signingTime: string | null = null;
  // The qualifying properties must point at this signature (neither attribute is under a digest).
  const qualifying = path(signature, [NS.ds, 'Object'], [NS.xades, 'QualifyingProperties']);
  if (qualifying && attr(qualifying, 'Target') !== `#${attr(signature, 'Id') ?? ''}`)
    problems.push('QualifyingProperties Target does not point at the signature');
  if (signedProps) {
    const ssp = child(signedProps, NS.xades, 'SignedSignatureProperties');
    signingTime = textOf(child(ssp, NS.xades, 'SigningTime'));
    const when = signingTime && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(signingTime) ? new Date(signingTime) : null;
    if (!when || Number.isNaN(when.getTime())) problems.push('SigningTime is missing or malformed');
    else if (when < new Date(x509.validFrom) || when > new Date(x509.validTo)) problems.push('SigningTime is outside the certificate validity');
    const cert = path(ssp, [NS.xades, 'SigningCertificate'], [NS.xades, 'Cert']);
    const certDigestAlg = DIGESTS[attr(path(cert, [NS.xades, 'CertDigest'], [NS.ds, 'DigestMethod']), 'Algorithm') ?? ''];
    const certDigest = textOf(path(cert, [NS.xades, 'CertDigest'], [NS.ds, 'DigestValue']))?.trim();
    if (!certDigestAlg || certDigest !== createHash(certDigestAlg).update(certDer).digest('base64'))
      problems.push('SigningCertificate digest does not match the certificate');
    const serial = textOf(path(cert, [NS.xades, 'IssuerSerial'], [NS.ds, 'X509SerialNumber']))?.trim();
    if (serial !== BigInt('0x' + x509.serialNumber).toString(10)) problems.push('SigningCertificate serial number does not match the certificate');
    const issuer = textOf(path(cert, [NS.xades, 'IssuerSerial'], [NS.ds, 'X509IssuerName']))?.trim();
    try {
      const fc = forge.pki.certificateFromAsn1(forge.asn1.fromDer(certDer.toString('binary')));
      if (issuer !== distinguishedName(fc.issuer.attributes)) problems.push('SigningCertificate issuer name does not match the certificate');
    } catch {
      problems.push('the certificate issuer cannot be read');
    }
    const policy = path(ssp, [NS.xades, 'SignaturePolicyIdentifier'], [NS.xades, 'SignaturePolicyId']);
    if (textOf(path(policy, [NS.xades, 'SigPolicyId'], [NS.xades, 'Identifier']))?.trim() !== DIAN_POLICY.identifier)
      problems.push("the signature policy is not DIAN's v2");
    if (textOf(path(policy, [NS.xades, 'SigPolicyHash'], [NS.ds, 'DigestValue']))?.trim() !== DIAN_POLICY.digest)
      problems.push("the signature policy hash is not DIAN's v2");
    const role = textOf(path(ssp, [NS.xades, 'SignerRole'], [NS.xades, 'ClaimedRoles'], [NS.xades, 'ClaimedRole']))?.trim();
    if (role !== 'supplier' && role !== 'third party') problems.push('no claimed role (supplier or third party)');
  }
  return result(certificatePem, signingTime);
}
