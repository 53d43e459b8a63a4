import forge from 'node-forge';

/** A self-signed certificate and its key as a PKCS#12 (tests only; 1024-bit RSA for speed). */
export function makeTestPkcs12(password: string, commonName = 'Emisor de Pruebas SAS'): { p12: Buffer; serial: string } {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 1024, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '0a1b2c3d';
  cert.validity.notBefore = new Date('2025-01-01T00:00:00Z');
  cert.validity.notAfter = new Date('2035-01-01T00:00:00Z');
  const attrs = [
    { shortName: 'CN', value: commonName },
    { shortName: 'C', value: 'CO' },
  ];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(keys.privateKey, [cert], password, { algorithm: '3des' });
  return { p12: Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'), serial: cert.serialNumber };
}
