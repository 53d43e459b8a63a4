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

/**
 * Bounds on the work of opening a PKCS#12 (issue 29). node-forge runs the file's own MAC and PBE
 * iteration counts (PKCS#12 KDF, PBKDF2) synchronously before it can tell whether the password is
 * right, so a 1.4 KB file with 2,000,000 iterations froze the API for seconds and the format allows
 * counts that block for hours. The counts are read from the ASN.1 structure first (parsing DER is
 * cheap and linear) and the file is refused before any key derivation when one count is above
 * MAX_PKCS12_ITERATIONS (200,000, the bound PRODUCT.md "Security defaults" sets) or all of them
 * together are above MAX_PKCS12_TOTAL_ITERATIONS (three derivations at that bound). Real files
 * use 2,048 (OpenSSL) or 10,000 (Java keytool, Windows) per derivation, three derivations or so (the
 * MAC, the certificates' bag, the key's bag). Key bags only visible once their encrypted bag is
 * decrypted are checked by the same rule when node-forge is about to derive their key (the
 * `getCipher` guard below). The bytes are capped at MAX_PKCS12_BYTES (the API caps the base64 text
 * at 300,000 characters, about 219 KiB, in the fiscal profile's schema).
 */
export const MAX_PKCS12_ITERATIONS = 200_000;
export const MAX_PKCS12_TOTAL_ITERATIONS = 600_000;
export const MAX_PKCS12_BYTES = 256 * 1024;

/** The PKCS#12 asks for more work than accepted (refused before any key derivation). */
export class CertificateLimitError extends CertificateError {}

const OID_DATA = '1.2.840.113549.1.7.1';
const OID_ENCRYPTED_DATA = '1.2.840.113549.1.7.6';
const OID_PBES2 = '1.2.840.113549.1.5.13';
const OID_PKCS12_PBE_PREFIX = '1.2.840.113549.1.12.1.';
const OID_SHROUDED_KEY_BAG = '1.2.840.113549.1.12.10.1.2';
const U = forge.asn1.Class.UNIVERSAL;
const T = forge.asn1.Type;

type Asn1 = forge.asn1.Asn1;
const children = (n: Asn1 | undefined): Asn1[] => (n && Array.isArray(n.value) ? (n.value as Asn1[]) : []);
const is = (n: Asn1 | undefined, type: number): n is Asn1 => !!n && n.tagClass === U && n.type === type;
const oidOf = (n: Asn1 | undefined): string | null => (is(n, T.OID) && typeof n.value === 'string' ? forge.asn1.derToOid(n.value) : null);

/** An INTEGER's value (BigInt: the bytes may be any length); null when not an INTEGER. */
function integerOf(n: Asn1 | undefined): bigint | null {
  if (!is(n, T.INTEGER) || typeof n.value !== 'string' || n.value.length === 0) return null;
  return BigInt('0x' + forge.util.bytesToHex(n.value));
}

/** The bytes of an OCTET STRING, BER chunks joined (as node-forge reads PKCS#7 Data). */
function octetsOf(n: Asn1 | undefined): string | null {
  if (!is(n, T.OCTETSTRING)) return null;
  if (typeof n.value === 'string') return n.value;
  return children(n)
    .map((c) => (typeof c.value === 'string' ? c.value : ''))
    .join('');
}

/**
 * The iteration count of a password-based encryption algorithm (its OID and parameters, as in an
 * AlgorithmIdentifier): PKCS#12 PBE-params `{salt, iterations}` or PBES2 `{PBKDF2 {salt,
 * iterationCount, …}, scheme}`; null for other algorithms (node-forge refuses them unread).
 */
export function pbeIterations(oid: string, params: Asn1 | undefined): bigint | null {
  if (oid.startsWith(OID_PKCS12_PBE_PREFIX)) return integerOf(children(params)[1]);
  if (oid === OID_PBES2) return integerOf(children(children(children(params)[0])[1])[1]);
  return null;
}

function spend(budget: { left: bigint }, count: bigint | null, what: string): void {
  if (count === null) return;
  if (count > BigInt(MAX_PKCS12_ITERATIONS))
    throw new CertificateLimitError(`the PKCS#12 ${what} uses ${count} key-derivation iterations; at most ${MAX_PKCS12_ITERATIONS} are accepted`);
  budget.left -= count;
  if (budget.left < 0n)
    throw new CertificateLimitError(`the PKCS#12 needs more than ${MAX_PKCS12_TOTAL_ITERATIONS} key-derivation iterations in all`);
}

/** The encryption AlgorithmIdentifier of every shrouded key bag of a SafeContents (DER bytes). */
function checkSafeContents(der: string, budget: { left: bigint }): void {
  let safe: Asn1;
  try {
    safe = forge.asn1.fromDer(der, false);
  } catch {
    return; // not readable: node-forge refuses it before deriving anything for it
  }
  for (const bag of children(safe)) {
    const [bagId, bagValue] = children(bag);
    if (oidOf(bagId) !== OID_SHROUDED_KEY_BAG) continue;
    const algorithm = children(children(bagValue)[0])[0];
    const [oid, params] = children(algorithm);
    spend(budget, pbeIterations(oidOf(oid) ?? '', params), 'key bag');
  }
}

/**
 * Reads every iteration count visible without a password (the MAC's, each encrypted bag's, each
 * shrouded key's in plain bags) and throws CertificateLimitError when one is above the limits;
 * answers the MAC's count (what the bags' guard, which sees every bag's derivation, starts from).
 */
export function checkPkcs12Work(p12: Buffer): { macIterations: bigint } {
  if (p12.length > MAX_PKCS12_BYTES) throw new CertificateLimitError(`the PKCS#12 is larger than ${MAX_PKCS12_BYTES} bytes`);
  const budget = { left: BigInt(MAX_PKCS12_TOTAL_ITERATIONS) };
  let pfx: Asn1;
  try {
    pfx = forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary')), false);
  } catch {
    return { macIterations: 0n }; // not DER: node-forge fails on it at once
  }
  const [, authSafe, macData] = children(pfx);
  const macIterations = macData ? (integerOf(children(macData)[2]) ?? 1n) : 0n;
  spend(budget, macIterations, 'MAC');
  const done = { macIterations };
  const [contentType, content] = children(authSafe);
  if (oidOf(contentType) !== OID_DATA) return done;
  const authSafeDer = octetsOf(children(content)[0]);
  if (authSafeDer === null) return done;
  let infos: Asn1;
  try {
    infos = forge.asn1.fromDer(authSafeDer, false);
  } catch {
    return done;
  }
  for (const info of children(infos)) {
    const [type, value] = children(info);
    const inner = children(value)[0];
    const kind = oidOf(type);
    if (kind === OID_DATA) {
      const der = octetsOf(inner);
      if (der !== null) checkSafeContents(der, budget);
    } else if (kind === OID_ENCRYPTED_DATA) {
      // EncryptedData {version, EncryptedContentInfo {contentType, contentEncryptionAlgorithm, …}}
      const algorithm = children(children(inner)[1])[1];
      const [oid, params] = children(algorithm);
      spend(budget, pbeIterations(oidOf(oid) ?? '', params), 'encrypted bag');
    }
  }
  return done;
}

/**
 * While a PKCS#12 is being opened (synchronously, so no other opening interleaves), every key
 * node-forge derives for a bag passes here first: a key bag found inside an encrypted bag cannot be
 * read before, its count is charged to the same budget.
 */
let opening: { left: bigint } | null = null;
type GetCipher = (oid: string, params: Asn1, password: string) => unknown;
const pbe = (forge.pki as unknown as { pbe: { getCipher: GetCipher } }).pbe;
const forgeGetCipher = pbe.getCipher;
pbe.getCipher = function guardedGetCipher(this: unknown, oid, params, password) {
  if (opening) spend(opening, pbeIterations(oid, params), 'bag');
  return forgeGetCipher.call(this, oid, params, password);
};

const cache = new Map<string, SigningKey>();
const CACHE_LIMIT = 64;

/** Opens a PKCS#12 (once per distinct bytes and password; then from the cache). */
export function loadSigningKey(certificate: SigningCertificate): SigningKey {
  const id = createHash('sha256').update(certificate.p12).update('\0').update(certificate.password, 'utf8').digest('hex');
  const hit = cache.get(id);
  if (hit) return hit;
  // The work is bounded before it runs (MAX_PKCS12_ITERATIONS above): a refused file costs a DER parse.
  const { macIterations } = checkPkcs12Work(certificate.p12);
  let p12: forge.pkcs12.Pkcs12Pfx;
  opening = { left: BigInt(MAX_PKCS12_TOTAL_ITERATIONS) - macIterations };
  try {
    // Non-strict DER: PKCS#12 files exported by common tools are not always strict DER.
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(certificate.p12.toString('binary'))), false, certificate.password);
  } catch (err) {
    if (err instanceof CertificateLimitError) throw err;
    throw new CertificateError(`cannot open the PKCS#12 certificate: ${(err as Error).message}`);
  } finally {
    opening = null;
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
