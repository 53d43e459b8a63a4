import { loadSigningKey } from '../../documents/dian/certificate.ts';
import type { CertificateSummary } from './tables.ts';

/**
 * Opens a PKCS#12 (the signing certificate of the fiscal profile) with its password and summarizes
 * the certificate; null when the bytes are not a PKCS#12 that this password opens, or it holds no
 * certificate for its private key. Opened by the one loader (invoices/dian/certificate.ts), so a
 * certificate the profile accepts is one the document signature and the DIAN client can use.
 */
export function summarizePkcs12(p12: Buffer, password: string): CertificateSummary | null {
  try {
    const key = loadSigningKey({ p12, password });
    return {
      subject: key.subjectDisplay,
      issuer: key.issuerDisplay,
      serial: key.serialHex,
      valid_from: key.notBefore.toISOString(),
      valid_until: key.notAfter.toISOString(),
    };
  } catch {
    return null;
  }
}
