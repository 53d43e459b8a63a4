import { systemClock, type Clock } from '../../platform/clock.ts';
import type { FiscalEnvironment, SigningCertificate } from '../../documents/dian/model.ts';
import { fetchNumberingRanges } from './import-ranges.ts';
import type { AuthorityOutcome, NumberingRangesAnswer, NumberingRangesQuery, SubmitInput, TaxAuthority } from './port.ts';
import { DianCallError, DianSoapClient } from './soap-client.ts';
import { isAlreadyProcessed, rejectionReason, type DianResponse } from './soap-response.ts';
import { CredentialsCache } from './ws-security.ts';
import { dianFileNames, unzipTexts, zipSingleBase64 } from '../../documents/dian/zip.ts';

/**
 * The real DIAN tax authority (docs/dian-webservice.md). Configured per company and environment
 * through `resolveConfig`. Submission:
 *   - `sync`: SendBillSync, the answer is final (00 accepted / 99 rejected) or 98 → pending;
 *   - `async`: SendBillAsync → ZipKey, then a few GetStatusZip polls; still in process → pending
 *     with the ZipKey as track id;
 *   - `test-set` (habilitación): SendTestSetAsync with the company's test set id, then as async.
 * A call that times out or loses its connection gives `unknown` (track id = CUFE/CUDE); `status`
 * settles it with GetStatus. The only resubmission is when GetStatus answers 66 (DIAN has no
 * record of the document): the earlier attempt never arrived, so sending it is not a duplicate —
 * and should it have arrived meanwhile, DIAN answers rule 90 (already processed), which maps back
 * to the accepted outcome through GetStatus.
 */

export type DianMode = 'sync' | 'async' | 'test-set';

export interface DianCompanyConfig {
  /** `test` (habilitación), `production`, or an explicit URL. */
  endpoint: 'test' | 'production' | (string & {});
  certificate: SigningCertificate;
  softwareId: string;
  pin: string;
  /** Required in `test-set` mode. */
  testSetId?: string | null;
  mode: DianMode;
  /** Per web-service call. */
  timeoutMs: number;
  /** Software provider code for file names (`000` own software). Optional, additive. */
  providerCode?: string;
  /** The issuer's NIT (digits): GetNumberingRange's default account codes. */
  nit?: string;
}

export interface DianTaxAuthorityOptions {
  resolveConfig(companyId: string, environment: FiscalEnvironment): Promise<DianCompanyConfig>;
  clock?: Clock;
  fetch?: typeof fetch;
  /** GetStatusZip polls right after an async submission before answering `pending` (default 3). */
  pollAttempts?: number;
  /** Pause between those polls (default 2000 ms). */
  pollIntervalMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

type ZipPoll = { kind: 'settled'; outcome: AuthorityOutcome } | { kind: 'in-process' } | { kind: 'zip-unknown' } | { kind: 'error'; reason: string };

const CUFE_PATTERN = /^[0-9a-f]{96}$/i;

/** XmlBase64Bytes → the ApplicationResponse XML (tolerates a zipped payload: first entry). */
export function decodeApplicationResponse(b64: string | null): string | null {
  if (!b64) return null;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length > 4 && bytes.readUInt32LE(0) === 0x04034b50) return unzipTexts(bytes)[0]?.text ?? null;
  return bytes.toString('utf8');
}

/** A web-service client for a company configuration (also what `fiscal import-ranges` uses). */
export function dianClientFor(
  config: Pick<DianCompanyConfig, 'endpoint' | 'certificate' | 'timeoutMs'>,
  options: { clock?: Clock; fetch?: typeof fetch; credentials?: CredentialsCache } = {},
): DianSoapClient {
  return new DianSoapClient({
    endpoint: config.endpoint,
    credentials: (options.credentials ?? new CredentialsCache()).get(config.certificate),
    timeoutMs: config.timeoutMs,
    clock: options.clock,
    fetch: options.fetch,
  });
}

export class DianTaxAuthority implements TaxAuthority {
  private readonly credentials = new CredentialsCache();
  private readonly clock: Clock;
  private readonly pollAttempts: number;
  private readonly pollIntervalMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: DianTaxAuthorityOptions) {
    this.clock = options.clock ?? systemClock;
    this.pollAttempts = options.pollAttempts ?? 3;
    this.pollIntervalMs = options.pollIntervalMs ?? 2000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  private async clientFor(input: {
    companyId: string;
    environment: FiscalEnvironment;
  }): Promise<{ client: DianSoapClient; config: DianCompanyConfig }> {
    const config = await this.options.resolveConfig(input.companyId, input.environment);
    const client = dianClientFor(config, { clock: this.clock, fetch: this.options.fetch, credentials: this.credentials });
    return { client, config };
  }

  async numberingRanges(query: NumberingRangesQuery): Promise<NumberingRangesAnswer> {
    const { client, config } = await this.clientFor(query);
    const accountCode = query.accountCode ?? config.nit ?? '';
    const params = {
      accountCode,
      accountCodeT: query.accountCodeT ?? query.accountCode ?? config.nit ?? '',
      softwareCode: query.softwareCode ?? config.softwareId,
    };
    return { endpoint: config.endpoint, params, ranges: await fetchNumberingRanges(client, params) };
  }

  async submit(input: SubmitInput): Promise<AuthorityOutcome> {
    const { client, config } = await this.clientFor(input);
    const cufe = input.built.identityCode;
    const names = dianFileNames({
      kind: input.document.kind,
      nit: input.document.issuer.nit,
      year: input.document.issueDate,
      sequence: input.document.folio,
      providerCode: config.providerCode,
    });
    const content = zipSingleBase64(names.xml, input.built.xml);

    if (config.mode === 'sync') {
      let response: DianResponse;
      try {
        response = await client.sendBillSync(names.zip, content);
      } catch (err) {
        return unknownOutcome(err, cufe);
      }
      return this.fromResponse(client, response, cufe);
    }

    let zipKey: string | null;
    try {
      if (config.mode === 'test-set') {
        if (!config.testSetId) throw new Error('test-set mode needs the company testSetId');
        const upload = await client.sendTestSetAsync(names.zip, content, config.testSetId);
        zipKey = upload.zipKey;
        if (!zipKey)
          return {
            status: 'rejected',
            trackId: cufe,
            reason: upload.errorMessages.join('; ') || 'DIAN did not accept the test-set submission',
            messages: upload.errorMessages,
          };
      } else {
        const upload = await client.sendBillAsync(names.zip, content);
        zipKey = upload.zipKey;
        if (!zipKey)
          return {
            status: 'rejected',
            trackId: cufe,
            reason: upload.errorMessages.join('; ') || 'DIAN did not accept the submission',
            messages: upload.errorMessages,
          };
      }
    } catch (err) {
      if (err instanceof DianCallError) return unknownOutcome(err, cufe);
      throw err;
    }
    for (let attempt = 0; attempt < this.pollAttempts; attempt++) {
      await this.sleep(this.pollIntervalMs);
      const poll = await this.pollZip(client, zipKey, cufe);
      if (poll.kind === 'settled') return poll.outcome;
    }
    return { status: 'pending', trackId: zipKey };
  }

  async status(input: SubmitInput & { trackId: string }): Promise<AuthorityOutcome> {
    const { client } = await this.clientFor(input);
    const cufe = input.built.identityCode;
    const isZipKey = input.trackId !== cufe && !CUFE_PATTERN.test(input.trackId);
    if (isZipKey) {
      const poll = await this.pollZip(client, input.trackId, cufe);
      if (poll.kind === 'settled') return poll.outcome;
      if (poll.kind === 'in-process') return { status: 'pending', trackId: input.trackId };
      if (poll.kind === 'error') return { status: 'unknown', trackId: input.trackId, reason: poll.reason };
      // zip-unknown: DIAN does not know the ZipKey; ask by CUFE below.
    }
    let response: DianResponse;
    try {
      response = await client.getStatus(cufe);
    } catch (err) {
      return unknownOutcome(err, input.trackId);
    }
    if (response.statusCode === '66') {
      // DIAN has no record of the document: the earlier attempt never reached it. Send once more.
      return this.submit(input);
    }
    return this.fromResponse(client, response, cufe);
  }

  /** One GetStatusZip, classified. */
  private async pollZip(client: DianSoapClient, zipKey: string, cufe: string): Promise<ZipPoll> {
    let responses: DianResponse[];
    try {
      responses = await client.getStatusZip(zipKey);
    } catch (err) {
      if (err instanceof DianCallError) return { kind: 'error', reason: err.message };
      throw err;
    }
    const mine = responses.find((r) => r.xmlDocumentKey === cufe) ?? (responses.length === 1 ? responses[0] : undefined);
    if (!mine || mine.statusCode === '98' || mine.statusCode === '') return { kind: 'in-process' };
    if (mine.statusCode === '66') return { kind: 'zip-unknown' };
    const outcome = await this.fromResponse(client, mine, cufe);
    return outcome.status === 'pending' ? { kind: 'in-process' } : { kind: 'settled', outcome };
  }

  /** DianResponse → outcome; rule 90 (already processed) is settled through GetStatus. */
  private async fromResponse(client: DianSoapClient, response: DianResponse, cufe: string, settlingRule90 = false): Promise<AuthorityOutcome> {
    const code = response.statusCode;
    if (code === '00' || (response.isValid && code !== '98' && code !== '99')) {
      return {
        status: 'accepted',
        trackId: cufe,
        applicationResponse: decodeApplicationResponse(response.xmlBase64Bytes),
        messages: response.errorMessages,
      };
    }
    if (code === '98') return { status: 'pending', trackId: cufe };
    if (code === '66') return { status: 'unknown', trackId: cufe, reason: 'DIAN has no record of the document (66)' };
    if (isAlreadyProcessed(response) && !settlingRule90) {
      let status: DianResponse;
      try {
        status = await client.getStatus(cufe);
      } catch (err) {
        return unknownOutcome(err, cufe);
      }
      return this.fromResponse(client, status, cufe, true);
    }
    if (code === '99' || response.errorMessages.length > 0) {
      return { status: 'rejected', trackId: cufe, reason: rejectionReason(response), messages: response.errorMessages };
    }
    return { status: 'unknown', trackId: cufe, reason: `unexpected DIAN status ${code || '(none)'}: ${response.statusDescription}` };
  }
}

function unknownOutcome(err: unknown, trackId: string): AuthorityOutcome {
  if (err instanceof DianCallError) return { status: 'unknown', trackId, reason: err.message };
  throw err;
}
