import { CertificateLimitError, loadSigningKey } from '../../documents/dian/certificate.ts';
import type { CertificateSummary } from './tables.ts';

/**
 * Opens a PKCS#12 (the signing certificate of the fiscal profile) with its password and summarizes
 * the certificate; `refused` when the bytes are not a PKCS#12 that this password opens, or it holds
 * no certificate for its private key, or it asks for more key-derivation work than accepted (read
 * from its structure before any is done: dian/certificate.ts MAX_PKCS12_ITERATIONS). Opened by the
 * one loader (invoices/dian/certificate.ts), so a certificate the profile accepts is one the
 * document signature and the DIAN client can use.
 */
export function openPkcs12(p12: Buffer, password: string): { summary: CertificateSummary } | { refused: string } {
  try {
    const key = loadSigningKey({ p12, password });
    return {
      summary: {
        subject: key.subjectDisplay,
        issuer: key.issuerDisplay,
        serial: key.serialHex,
        valid_from: key.notBefore.toISOString(),
        valid_until: key.notAfter.toISOString(),
      },
    };
  } catch (err) {
    if (err instanceof CertificateLimitError) return { refused: `is refused before opening: ${err.message}` };
    return { refused: 'is not a PKCS#12 with a certificate and its private key that certificate_password opens' };
  }
}

/** The summary of a PKCS#12 this password opens; null otherwise (openPkcs12). */
export function summarizePkcs12(p12: Buffer, password: string): CertificateSummary | null {
  const opened = openPkcs12(p12, password);
  return 'summary' in opened ? opened.summary : null;
}
