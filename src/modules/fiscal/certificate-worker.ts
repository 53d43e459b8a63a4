import { parentPort, workerData } from 'node:worker_threads';
import { openPkcs12 } from './certificate.ts';

/** Opens one PKCS#12 off the main thread (certificate.ts `openPkcs12Isolated`) and answers once. */
const { p12, password } = workerData as { p12: Uint8Array; password: string };
parentPort!.postMessage(openPkcs12(Buffer.from(p12), password));
