import { Worker } from 'node:worker_threads';
import { CertificateLimitError, checkPkcs12Work, loadSigningKey } from '../../documents/dian/certificate.ts';
import type { CertificateSummary } from './tables.ts';

export type OpenedPkcs12 = { summary: CertificateSummary } | { refused: string };

/**
 * Opens a PKCS#12 (the signing certificate of the fiscal profile) with its password and summarizes
 * the certificate; `refused` when the bytes are not a PKCS#12 that this password opens, or it holds
 * no certificate for its private key, or it asks for more key-derivation work than accepted (read
 * from its structure before any is done: dian/certificate.ts MAX_PKCS12_ITERATIONS). Opened by the
 * one loader (invoices/dian/certificate.ts), so a certificate the profile accepts is one the
 * document signature and the DIAN client can use.
 */
export function openPkcs12(p12: Buffer, password: string): OpenedPkcs12 {
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

/** Longest a certificate a request sent may take to open (three derivations at the bound take ~4 s here). */
export const CERTIFICATE_OPEN_TIMEOUT_MS = 15_000;
/** Certificates being opened at once; more wait their turn (each worker takes a core while it runs). */
const MAX_OPENING = 2;
let opening = 0;
const waiting: (() => void)[] = [];

/**
 * openPkcs12 for a certificate someone sent (PUT /fiscal-profile, `recaudo fiscal-profile set`):
 * the file's work bound is checked here first (a DER parse: a refused file never reaches a worker),
 * then the key derivations run in a worker thread with a time limit, so the API keeps answering
 * meanwhile — even a file within the bound (200,000 iterations per derivation) costs node-forge
 * about a second per derivation. At most MAX_OPENING run at once. Never call it inside a
 * transaction: it waits for the worker.
 */
export async function openPkcs12Isolated(p12: Buffer, password: string, timeoutMs = CERTIFICATE_OPEN_TIMEOUT_MS): Promise<OpenedPkcs12> {
  try {
    checkPkcs12Work(p12);
  } catch (err) {
    if (err instanceof CertificateLimitError) return { refused: `is refused before opening: ${err.message}` };
    return { refused: 'is not a PKCS#12 with a certificate and its private key that certificate_password opens' };
  }
  if (opening >= MAX_OPENING) await new Promise<void>((resolve) => waiting.push(resolve));
  opening++;
  try {
    return await inWorker(p12, password, timeoutMs);
  } finally {
    opening--;
    waiting.shift()?.();
  }
}

function inWorker(p12: Buffer, password: string, timeoutMs: number): Promise<OpenedPkcs12> {
  // The sources run through tsx (tests, development), the build from dist/: the worker is beside this file.
  const entry = new URL(`./certificate-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
  return new Promise((resolve, reject) => {
    const worker = new Worker(entry, { workerData: { p12: new Uint8Array(p12), password }, resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve({ refused: `took longer than ${Math.round(timeoutMs / 1000)} s to open` });
    }, timeoutMs);
    const done = () => clearTimeout(timer);
    worker.once('message', (opened: OpenedPkcs12) => {
      done();
      resolve(opened);
      void worker.terminate();
    });
    worker.once('error', (error) => {
      done();
      reject(error);
    });
    worker.once('exit', (code) => {
      done();
      // Answered, timed out or failed already: a later exit changes nothing.
      reject(new Error(`the certificate worker exited (${code}) without an answer`));
    });
  });
}
