import { createHash, randomUUID, sign, type KeyObject } from 'node:crypto';
import { loadSigningKey } from '../../documents/dian/certificate.ts';
import type { SigningCertificate } from '../../documents/dian/model.ts';

/**
 * WS-Security for DIAN's web service (reference/dian.md "Web service"): a SOAP 1.2 header with
 * WS-Addressing (`wsa:Action`, `wsa:To` carrying a `wsu:Id`) and a `wsse:Security` block holding a
 * `wsu:Timestamp`, the company certificate as an X.509 `BinarySecurityToken`, and an XMLDSig
 * signature (exclusive C14N, RSA-SHA256, SHA-256 digest) over the `wsa:To` element whose key is a
 * `SecurityTokenReference` to the token.
 *
 * How the canonical form is produced without a DOM: the two signed pieces (`wsa:To` and
 * `ds:SignedInfo`) are WRITTEN in their exclusive-C14N form, so their text in the envelope is
 * byte-for-byte what a verifier's canonicalizer yields:
 * - each declares on itself exactly the namespaces it visibly uses (`wsa:To`: `wsa` and `wsu`;
 *   `ds:SignedInfo`: `ds`), sorted by prefix, before the attributes; exclusive C14N renders those
 *   at the apex whatever the ancestors declare, and no InclusiveNamespaces PrefixList is used;
 * - attributes in C14N order (no-namespace first, then by namespace URI, then local name), double
 *   quotes, values and text escaped as C14N escapes them;
 * - no whitespace between elements, and empty elements written as start/end tag pairs.
 * The digest is SHA-256 of the `wsa:To` text; the signature is RSA-SHA256 of the SignedInfo text.
 * The fake DIAN server in the tests re-canonicalizes both from the parsed envelope with its own
 * exclusive-C14N implementation, so a divergence between "written" and "canonical" fails there.
 */

export const NS = {
  soap: 'http://www.w3.org/2003/05/soap-envelope',
  wcf: 'http://wcf.dian.colombia',
  wsa: 'http://www.w3.org/2005/08/addressing',
  wsse: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd',
  wsu: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

export const ALGORITHMS = {
  excC14n: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  x509v3: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3',
  base64Binary: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary',
} as const;

/** The company certificate, ready to sign: leaf certificate DER and its private key. */
export interface WsCredentials {
  certificateDer: Buffer;
  privateKey: KeyObject;
}

/**
 * PKCS#12 → credentials, through the one loader (certificate.ts `loadSigningKey`: node-forge opens
 * it, the leaf is the certificate whose public key matches the private key, cached by content).
 */
export function loadWsCredentials(certificate: SigningCertificate): WsCredentials {
  const key = loadSigningKey(certificate);
  return { certificateDer: Buffer.from(key.certificateBase64, 'base64'), privateKey: key.privateKey };
}

/** Credentials per certificate (the loader caches each distinct PKCS#12 by content; kept as the DIAN client's handle). */
export class CredentialsCache {
  get(certificate: SigningCertificate): WsCredentials {
    return loadWsCredentials(certificate);
  }
}

/** C14N text escaping (character content). */
export function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#xD;');
}

/** C14N attribute-value escaping. */
export function escapeAttr(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/"/g, '&quot;')
    .replace(/\t/g, '&#x9;')
    .replace(/\n/g, '&#xA;')
    .replace(/\r/g, '&#xD;');
}

/** `2026-11-21T23:40:00.000Z`: WS-Security timestamps in UTC with milliseconds. */
export function wsuTime(d: Date): string {
  return d.toISOString();
}

export interface SecuredEnvelopeInput {
  /** Full action URI, e.g. `http://wcf.dian.colombia/IWcfDianCustomerServices/SendBillSync`. */
  action: string;
  /** The endpoint URL; goes into the signed `wsa:To`. */
  to: string;
  /** The operation element, e.g. `<wcf:GetStatus><wcf:trackId>…</wcf:trackId></wcf:GetStatus>`. */
  body: string;
  credentials: WsCredentials;
  now: Date;
  /** Timestamp validity; DIAN's examples use 60 s. */
  ttlSeconds?: number;
  /** Id suffix for the wsu:Id attributes; random by default (tests pin it). */
  idSuffix?: string;
}

/** The exact `wsa:To` element text (already in exclusive-C14N form). */
export function toElement(to: string, id: string): string {
  return `<wsa:To xmlns:wsa="${NS.wsa}" xmlns:wsu="${NS.wsu}" wsu:Id="${escapeAttr(id)}">${escapeText(to)}</wsa:To>`;
}

/** The exact `ds:SignedInfo` text (already in exclusive-C14N form). */
export function signedInfoElement(referenceId: string, digestBase64: string): string {
  return (
    `<ds:SignedInfo xmlns:ds="${NS.ds}">` +
    `<ds:CanonicalizationMethod Algorithm="${ALGORITHMS.excC14n}"></ds:CanonicalizationMethod>` +
    `<ds:SignatureMethod Algorithm="${ALGORITHMS.rsaSha256}"></ds:SignatureMethod>` +
    `<ds:Reference URI="#${escapeAttr(referenceId)}">` +
    `<ds:Transforms><ds:Transform Algorithm="${ALGORITHMS.excC14n}"></ds:Transform></ds:Transforms>` +
    `<ds:DigestMethod Algorithm="${ALGORITHMS.sha256}"></ds:DigestMethod>` +
    `<ds:DigestValue>${digestBase64}</ds:DigestValue>` +
    `</ds:Reference>` +
    `</ds:SignedInfo>`
  );
}

/** A complete SOAP 1.2 envelope with the WS-Addressing and WS-Security headers, signed. */
export function buildSecuredEnvelope(input: SecuredEnvelopeInput): string {
  const suffix = input.idSuffix ?? randomUUID().replace(/-/g, '').toUpperCase();
  const ids = {
    ts: `TS-${suffix}`,
    token: `X509-${suffix}`,
    sig: `SIG-${suffix}`,
    keyInfo: `KI-${suffix}`,
    str: `STR-${suffix}`,
    to: `ID-${suffix}`,
  };
  const created = input.now;
  const expires = new Date(created.getTime() + (input.ttlSeconds ?? 60) * 1000);

  const to = toElement(input.to, ids.to);
  const digest = createHash('sha256').update(to, 'utf8').digest('base64');
  const signedInfo = signedInfoElement(ids.to, digest);
  const signatureValue = sign('sha256', Buffer.from(signedInfo, 'utf8'), input.credentials.privateKey).toString('base64');

  const security =
    `<wsse:Security xmlns:wsse="${NS.wsse}" xmlns:wsu="${NS.wsu}" soap:mustUnderstand="true">` +
    `<wsu:Timestamp wsu:Id="${ids.ts}"><wsu:Created>${wsuTime(created)}</wsu:Created><wsu:Expires>${wsuTime(expires)}</wsu:Expires></wsu:Timestamp>` +
    `<wsse:BinarySecurityToken EncodingType="${ALGORITHMS.base64Binary}" ValueType="${ALGORITHMS.x509v3}" wsu:Id="${ids.token}">` +
    input.credentials.certificateDer.toString('base64') +
    `</wsse:BinarySecurityToken>` +
    `<ds:Signature xmlns:ds="${NS.ds}" Id="${ids.sig}">` +
    signedInfo +
    `<ds:SignatureValue>${signatureValue}</ds:SignatureValue>` +
    `<ds:KeyInfo Id="${ids.keyInfo}"><wsse:SecurityTokenReference wsu:Id="${ids.str}">` +
    `<wsse:Reference URI="#${ids.token}" ValueType="${ALGORITHMS.x509v3}"></wsse:Reference>` +
    `</wsse:SecurityTokenReference></ds:KeyInfo>` +
    `</ds:Signature>` +
    `</wsse:Security>`;

  return (
    `<soap:Envelope xmlns:soap="${NS.soap}" xmlns:wcf="${NS.wcf}">` +
    `<soap:Header xmlns:wsa="${NS.wsa}">` +
    security +
    `<wsa:Action>${escapeText(input.action)}</wsa:Action>` +
    to +
    `</soap:Header>` +
    `<soap:Body>${input.body}</soap:Body>` +
    `</soap:Envelope>`
  );
}
