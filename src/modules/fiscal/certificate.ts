import forge from 'node-forge';
import type { CertificateSummary } from './tables.ts';

/**
 * Opens a PKCS#12 (the signing certificate of the fiscal profile) with its password and summarizes
 * the certificate; null when the bytes are not a PKCS#12 that this password opens, or it holds no
 * certificate with its private key.
 */
export function summarizePkcs12(p12: Buffer, password: string): CertificateSummary | null {
  try {
    const asn1 = forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary')));
    const pfx = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
    const certs = pfx.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [];
    const keys = [
      ...(pfx.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag] ?? []),
      ...(pfx.getBags({ bagType: forge.pki.oids.keyBag })[forge.pki.oids.keyBag] ?? []),
    ];
    const cert = certs.find((b) => b.cert)?.cert;
    if (!cert || !keys.some((k) => k.key)) return null;
    const dn = (attrs: forge.pki.CertificateField[]) => attrs.map((a) => `${a.shortName ?? a.name ?? a.type}=${String(a.value)}`).join(', ');
    return {
      subject: dn(cert.subject.attributes),
      issuer: dn(cert.issuer.attributes),
      serial: cert.serialNumber,
      valid_from: cert.validity.notBefore.toISOString(),
      valid_until: cert.validity.notAfter.toISOString(),
    };
  } catch {
    return null;
  }
}
