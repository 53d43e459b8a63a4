import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import type { SigningCertificate } from './model.ts';

/**
 * THE one PKCS#12 loader (reference/dian.md "Signing in Node"): node:crypto cannot read PKCS#12, so
 * node-forge opens it once (about 100 ms) and the private key is imported into node:crypto (RSA
 * signing about 1,300/s); the result is cached by the bytes' digest. Real `.p12` files carry the
 * chain: the leaf is the certificate whose public key matches the private key. Everything that
 * reads a company certificate goes through `loadSigningKey`: the XAdES signature (xades.ts), the
 * WS-Security credentials of the DIAN client (ws-security.ts `loadWsCredentials`) and the fiscal
 * profile's certificate check and summary (fiscal/certificate.ts `summarizePkcs12`).
 */

export interface SigningKey {
  privateKey: KeyObject;
  /** DER of the leaf certificate, base64 (ds:X509Certificate). */
  certificateBase64: string;
  certificatePem: string;
  /** SHA-256 of the certificate DER, base64 (xades:CertDigest). */
  certificateDigest: string;
  /** Issuer distinguished name, RFC 4514 order (ds:X509IssuerName). */
  issuerName: string;
  /** Serial number in decimal (ds:X509SerialNumber). */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  /** Display forms for the fiscal profile's summary: `CN=…, O=…` in certificate order, serial in hex. */
  subjectDisplay: string;
  issuerDisplay: string;
  serialHex: string;
}

export class CertificateError extends Error {}

const SHORT_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.9': 'STREET',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '2.5.4.5': 'SERIALNUMBER',
  '1.2.840.113549.1.9.1': 'E',
  '2.5.4.12': 'T',
};

function escapeDnValue(v: string): string {
  let s = v.replace(/[\\,+"<>;=]/g, (c) => '\\' + c);
  if (s.startsWith('#') || s.startsWith(' ')) s = '\\' + s;
  if (s.endsWith(' ') && s.length > 1) s = s.slice(0, -1) + '\\ ';
  return s;
}

/** A distinguished name as RFC 4514 text (last RDN first), the way X509IssuerName is written. */
export function distinguishedName(attributes: Array<{ type?: string; value?: unknown }>): string {
  return attributes
    .slice()
    .reverse()
    .map((a) => `${SHORT_NAMES[a.type ?? ''] ?? a.type}=${escapeDnValue(String(a.value ?? ''))}`)
    .join(',');
}

function derOf(cert: forge.pki.Certificate): Buffer {
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
}

function display(attributes: forge.pki.CertificateField[]): string {
  return attributes.map((a) => `${a.shortName ?? a.name ?? a.type}=${String(a.value)}`).join(', ');
}

function describe(cert: forge.pki.Certificate, privateKey: KeyObject): SigningKey {
  const der = derOf(cert);
  const serialHex = cert.serialNumber.replace(/^0+(?=.)/, '');
  return {
    privateKey,
    certificateBase64: der.toString('base64'),
    certificatePem: forge.pki.certificateToPem(cert),
    certificateDigest: createHash('sha256').update(der).digest('base64'),
    issuerName: distinguishedName(cert.issuer.attributes),
    serialNumber: BigInt('0x' + (serialHex || '0')).toString(10),
    notBefore: cert.validity.notBefore,
    notAfter: cert.validity.notAfter,
    subjectDisplay: display(cert.subject.attributes),
    issuerDisplay: display(cert.issuer.attributes),
    serialHex: cert.serialNumber,
  };
}

const cache = new Map<string, SigningKey>();
const CACHE_LIMIT = 64;

/** Opens a PKCS#12 (once per distinct bytes and password; then from the cache). */
export function loadSigningKey(certificate: SigningCertificate): SigningKey {
  const id = createHash('sha256').update(certificate.p12).update('\0').update(certificate.password, 'utf8').digest('hex');
  const hit = cache.get(id);
  if (hit) return hit;
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    // Non-strict DER: PKCS#12 files exported by common tools are not always strict DER.
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(certificate.p12.toString('binary'))), false, certificate.password);
  } catch (err) {
    throw new CertificateError(`cannot open the PKCS#12 certificate: ${(err as Error).message}`);
  }
  const keyBags = [
    ...(p12.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag] ?? []),
    ...(p12.getBags({ bagType: forge.pki.oids.keyBag })[forge.pki.oids.keyBag] ?? []),
  ];
  const key = keyBags.find((b) => b.key)?.key as forge.pki.rsa.PrivateKey | undefined;
  if (!key) throw new CertificateError('the PKCS#12 holds no private key');
  const certs = (p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [])
    .map((b) => b.cert)
    .filter((c): c is forge.pki.Certificate => !!c);
  const leaf = certs.find((c) => {
    const pub = c.publicKey as forge.pki.rsa.PublicKey;
    return pub.n && pub.n.equals(key.n) && pub.e.equals(key.e);
  });
  if (!leaf) throw new CertificateError('no certificate in the PKCS#12 matches its private key');
  const privateKey = createPrivateKey(forge.pki.privateKeyToPem(key));
  const loaded = describe(leaf, privateKey);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(id, loaded);
  return loaded;
}

export interface TestCertificateInput {
  /** Issuer NIT (digits), written in the subject's serialNumber. */
  nit: string;
  legalName: string;
  password: string;
  /** Start of validity; defaults to now minus one day. */
  validFrom?: Date;
  /** Validity in years (default 5). */
  years?: number;
}

/**
 * A self-signed test certificate as PKCS#12 (test environment only; generated at first use and
 * never committed): RSA 2048, SHA-256, serial of 64 bits (libxml2 rejects xs:integer over 24 digits).
 */
export function generateTestCertificate(input: TestCertificateInput): SigningCertificate & { certificatePem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const fKey = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString());
  const fPub = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const cert = forge.pki.createCertificate();
  cert.publicKey = fPub;
  const serial = randomBytes(8);
  serial[0] = (serial[0] & 0x7f) | 0x01; // positive, 64 bits at most, never zero
  cert.serialNumber = serial.toString('hex');
  const from = input.validFrom ?? new Date(Date.now() - 86_400_000);
  const until = new Date(from);
  until.setUTCFullYear(until.getUTCFullYear() + (input.years ?? 5));
  cert.validity.notBefore = from;
  cert.validity.notAfter = until;
  const name = [
    { name: 'commonName', value: input.legalName.slice(0, 64) },
    { name: 'serialNumber', value: input.nit },
    { name: 'organizationName', value: input.legalName.slice(0, 64) },
    { name: 'organizationalUnitName', value: 'Recaudo test certificate' },
    { name: 'countryName', value: 'CO' },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, nonRepudiation: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(fKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(fKey, [cert], input.password, { algorithm: '3des', friendlyName: 'recaudo-test' });
  return {
    p12: Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'),
    password: input.password,
    certificatePem: forge.pki.certificateToPem(cert),
  };
}
