import { exchange, WompiUnavailable, type CallObserver } from './client.ts';
import type { WompiPage, WompiPayoutBatch, WompiPayoutErrorBody, WompiPayoutTransaction } from './payouts-contract.ts';

/** The payouts API refused the request (a 4xx other than 408/429): a definitive answer. */
export class WompiPayoutRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: WompiPayoutErrorBody | null,
  ) {
    const message = Array.isArray(body?.message) ? body.message.join('; ') : (body?.message ?? 'no details');
    super(`wompi payouts refused (${status} ${body?.code ?? 'unknown'}): ${message}`);
    this.name = 'WompiPayoutRefused';
  }
  get code(): string {
    return this.body?.code ?? `HTTP_${this.status}`;
  }
}

export interface WompiPayoutCredentials {
  baseUrl: string;
  apiKey: string;
  principalId: string;
}

export interface PayoutBank {
  id: string;
  name: string;
  code?: string | null;
  achCode?: string | null;
}

export interface PayoutBatchRequest {
  reference: string;
  accountId: string;
  paymentType: 'PAYROLL' | 'PROVIDERS' | 'OTHER';
  transactions: {
    legalIdType: string;
    legalId: string;
    bankId: string;
    accountType: string;
    accountNumber: string;
    name: string;
    email: string;
    amount: number;
    reference: string;
    personType: 'NATURAL' | 'JURIDICA';
  }[];
}

/** ASSUMPTION: answers come in an envelope `{status, code, message, data}`; some reads answer the bare payload. */
function payloadOf(parsed: unknown): unknown {
  if (parsed && typeof parsed === 'object' && 'data' in parsed) return (parsed as { data: unknown }).data;
  return parsed;
}

/** ASSUMPTION: lists are `{records: […]}` (paginated) or a bare array. */
function recordsOf<T>(payload: unknown): T[] {
  if (Array.isArray(payload)) return payload as T[];
  const records = (payload as WompiPage<T> | null)?.records;
  return Array.isArray(records) ? records : [];
}

/**
 * A thin client of the Third-Party Payments API. Every call is bounded by `timeoutMs`; the API key
 * and the principal user id go in their headers and are never logged.
 */
export class WompiPayoutsClient {
  constructor(
    private readonly creds: WompiPayoutCredentials,
    private readonly opts: { timeoutMs: number; observe?: CallObserver } = { timeoutMs: 15_000 },
  ) {}

  private async request(operation: string, method: 'GET' | 'POST', path: string, body?: unknown, idempotencyKey?: string): Promise<unknown> {
    const { status, parsed } = await exchange(
      `wompi payouts ${operation}`,
      `${this.creds.baseUrl.replace(/\/+$/, '')}${path}`,
      {
        method,
        headers: {
          'x-api-key': this.creds.apiKey,
          'user-principal-id': this.creds.principalId,
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body,
      },
      { timeoutMs: this.opts.timeoutMs, observe: this.opts.observe && ((o) => this.opts.observe!({ operation, ...o })) },
    );
    if (status >= 400) throw new WompiPayoutRefused(status, parsed as WompiPayoutErrorBody | null);
    if (parsed === null) throw new WompiUnavailable(`wompi payouts ${operation}: an answer without a body`);
    return payloadOf(parsed);
  }

  /** The banks payouts can go to (their ids are what a transaction names). */
  async banks(): Promise<PayoutBank[]> {
    return recordsOf<PayoutBank>(await this.request('payout_banks', 'GET', '/banks'));
  }

  /** The origin accounts and their balances (health). */
  async accounts(): Promise<{ id: string; balanceInCents?: number; status?: string }[]> {
    return recordsOf(await this.request('payout_accounts', 'GET', '/accounts'));
  }

  /** The batch created with this reference, or null. */
  async findBatch(reference: string): Promise<WompiPayoutBatch | null> {
    const list = recordsOf<WompiPayoutBatch>(await this.request('find_payout', 'GET', `/payouts?reference=${encodeURIComponent(reference)}`));
    return list.find((b) => b.reference === reference) ?? null;
  }

  /** Creates a batch; the key makes a repeat within 24 hours answer 409 EXC_022 instead of paying twice. */
  async createBatch(batch: PayoutBatchRequest, idempotencyKey: string): Promise<{ payoutId: string }> {
    const data = (await this.request('create_payout', 'POST', '/payouts', batch, idempotencyKey)) as { payoutId?: string; id?: string } | null;
    const payoutId = data?.payoutId ?? data?.id;
    if (typeof payoutId !== 'string' || !payoutId) throw new WompiUnavailable('wompi payouts create_payout: no payoutId in the answer');
    return { payoutId };
  }

  /** The transactions of a batch (ASSUMPTION: the create answer has only the batch id and counts). */
  async batchTransactions(payoutId: string): Promise<WompiPayoutTransaction[]> {
    return recordsOf<WompiPayoutTransaction>(
      await this.request('payout_transactions', 'GET', `/payouts/${encodeURIComponent(payoutId)}/transactions`),
    );
  }
}
