import { systemClock, type Clock } from '../../platform/clock.ts';
import {
  operationResult,
  parseDianResponse,
  parseDianResponseList,
  parseFault,
  parseNumberingRanges,
  parseUploadResponse,
  soapBody,
  SoapParseError,
  type DianResponse,
  type NumberingRangeResult,
  type SoapFault,
  type UploadResponse,
} from './soap-response.ts';
import { buildSecuredEnvelope, escapeText, type WsCredentials } from './ws-security.ts';

/**
 * DIAN's web service (WcfDianCustomerServices) over SOAP 1.2 with WS-Security. One instance per
 * company certificate and endpoint; stateless otherwise. Every call carries a fresh timestamp and
 * signature. A call that times out or loses its connection throws `DianCallError` with
 * `outcomeUnknown: true`: the caller must settle it with GetStatus, never by sending again blindly.
 */

export const DIAN_ENDPOINTS = {
  test: 'https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc',
  production: 'https://vpfe.dian.gov.co/WcfDianCustomerServices.svc',
} as const;

export const DIAN_ACTION_BASE = 'http://wcf.dian.colombia/IWcfDianCustomerServices/';

export type DianOperation = 'SendBillSync' | 'SendBillAsync' | 'SendTestSetAsync' | 'GetStatus' | 'GetStatusZip' | 'GetNumberingRange';

/** `test` | `production` | an explicit URL (e.g. the fake server in tests). */
export function resolveEndpoint(endpoint: string): string {
  if (endpoint === 'test') return DIAN_ENDPOINTS.test;
  if (endpoint === 'production') return DIAN_ENDPOINTS.production;
  return new URL(endpoint).toString();
}

export type DianCallErrorKind = 'timeout' | 'network' | 'http' | 'fault' | 'parse';

export class DianCallError extends Error {
  constructor(
    readonly kind: DianCallErrorKind,
    message: string,
    readonly operation: DianOperation,
    readonly fault: SoapFault | null = null,
    readonly httpStatus: number | null = null,
  ) {
    super(message);
    this.name = 'DianCallError';
  }
  /** Whether DIAN may have received and processed the request (timeouts, dropped connections). */
  get outcomeUnknown(): boolean {
    return this.kind === 'timeout' || this.kind === 'network' || this.kind === 'http' || this.kind === 'parse';
  }
}

export interface DianClientOptions {
  endpoint: string;
  credentials: WsCredentials;
  /** Per call, including reading the answer. Default 30 s. */
  timeoutMs?: number;
  clock?: Clock;
  fetch?: typeof fetch;
  /** Timestamp validity in seconds (default 60). */
  ttlSeconds?: number;
}

function element(name: string, value: string): string {
  return `<wcf:${name}>${escapeText(value)}</wcf:${name}>`;
}

export class DianSoapClient {
  readonly url: string;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: DianClientOptions) {
    this.url = resolveEndpoint(options.endpoint);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** The signed envelope for an operation (exposed for tests and debugging). */
  envelope(operation: DianOperation, params: Array<[string, string]>): string {
    const body = `<wcf:${operation}>${params.map(([k, v]) => element(k, v)).join('')}</wcf:${operation}>`;
    return buildSecuredEnvelope({
      action: DIAN_ACTION_BASE + operation,
      to: this.url,
      body,
      credentials: this.options.credentials,
      now: this.clock.now(),
      ttlSeconds: this.options.ttlSeconds,
    });
  }

  /** Sends one operation; returns the parsed `<Op>Result` node. */
  private async call(operation: DianOperation, params: Array<[string, string]>): Promise<Record<string, unknown>> {
    const envelope = this.envelope(operation, params);
    let status: number;
    let text: string;
    try {
      const res = await this.fetchImpl(this.url, {
        method: 'POST',
        headers: { 'content-type': `application/soap+xml; charset=utf-8; action="${DIAN_ACTION_BASE}${operation}"` },
        body: envelope,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        throw new DianCallError('timeout', `${operation}: no answer from DIAN within ${this.timeoutMs} ms`, operation);
      }
      throw new DianCallError('network', `${operation}: ${e.message}${e.cause ? ` (${(e.cause as Error).message ?? e.cause})` : ''}`, operation);
    }
    let body: Record<string, unknown>;
    try {
      body = soapBody(text);
    } catch (err) {
      throw new DianCallError('http', `${operation}: HTTP ${status}, ${(err as Error).message}`, operation, null, status);
    }
    const fault = parseFault(body);
    if (fault) {
      throw new DianCallError('fault', `${operation}: SOAP fault ${fault.subcode ?? fault.code}: ${fault.reason}`, operation, fault, status);
    }
    if (status < 200 || status >= 300) throw new DianCallError('http', `${operation}: HTTP ${status}`, operation, null, status);
    try {
      return operationResult(body, operation);
    } catch (err) {
      if (err instanceof SoapParseError) throw new DianCallError('parse', `${operation}: ${err.message}`, operation, null, status);
      throw err;
    }
  }

  /** Synchronous validation of one document (zip with one XML, base64). */
  async sendBillSync(fileName: string, contentFile: string): Promise<DianResponse> {
    return parseDianResponse(
      await this.call('SendBillSync', [
        ['fileName', fileName],
        ['contentFile', contentFile],
      ]),
    );
  }

  /** Asynchronous submission: answers a ZipKey for GetStatusZip. */
  async sendBillAsync(fileName: string, contentFile: string): Promise<UploadResponse> {
    return parseUploadResponse(
      await this.call('SendBillAsync', [
        ['fileName', fileName],
        ['contentFile', contentFile],
      ]),
    );
  }

  /** Habilitación: submission counted against the company's test set. */
  async sendTestSetAsync(fileName: string, contentFile: string, testSetId: string): Promise<UploadResponse> {
    return parseUploadResponse(
      await this.call('SendTestSetAsync', [
        ['fileName', fileName],
        ['contentFile', contentFile],
        ['testSetId', testSetId],
      ]),
    );
  }

  /** Status of a document by its CUFE/CUDE. */
  async getStatus(trackId: string): Promise<DianResponse> {
    return parseDianResponse(await this.call('GetStatus', [['trackId', trackId]]));
  }

  /** Status of an asynchronous submission by its ZipKey (one DianResponse per document). */
  async getStatusZip(trackId: string): Promise<DianResponse[]> {
    return parseDianResponseList(await this.call('GetStatusZip', [['trackId', trackId]]));
  }

  /** The company's numbering ranges for a software, with their technical keys. */
  async getNumberingRange(accountCode: string, accountCodeT: string, softwareCode: string): Promise<NumberingRangeResult> {
    return parseNumberingRanges(
      await this.call('GetNumberingRange', [
        ['accountCode', accountCode],
        ['accountCodeT', accountCodeT],
        ['softwareCode', softwareCode],
      ]),
    );
  }
}
