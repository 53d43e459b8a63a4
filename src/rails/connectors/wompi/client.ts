import { amountInCents, integritySignature, type WompiAcceptance, type WompiErrorBody, type WompiTransaction } from './contract.ts';

/** The provider refused the request (a 4xx other than 408/429): a definitive answer. */
export class WompiRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: WompiErrorBody | null,
  ) {
    super(`wompi refused (${status} ${body?.error?.type ?? 'unknown'}): ${describeRefusal(body)}`);
    this.name = 'WompiRefused';
  }
  get type(): string {
    return this.body?.error?.type ?? 'UNKNOWN';
  }
}

/** No usable answer (network, timeout, 5xx, 408, 429): the outcome of the request is unknown. */
export class WompiUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WompiUnavailable';
  }
}

function describeRefusal(body: WompiErrorBody | null): string {
  const e = body?.error;
  if (!e) return 'no details';
  if (e.reason) return e.reason;
  if (e.messages) {
    return Object.entries(e.messages)
      .map(([field, list]) => `${field}: ${Array.isArray(list) ? list.join(', ') : String(list)}`)
      .join('; ');
  }
  return e.type;
}

export interface WompiCredentials {
  baseUrl: string;
  publicKey: string;
  privateKey: string;
  integritySecret: string;
}

/**
 * One bounded HTTP exchange with the provider (JSON in, JSON out). No answer (network, timeout, a
 * 5xx, 408, 429) is WompiUnavailable: the outcome is unknown. Any other status is returned with
 * its parsed body (null when not JSON) for the caller to accept or refuse; `observe` hears the
 * outcome of every call (a 4xx is `refused`).
 */
export async function exchange(
  what: string,
  url: string,
  request: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown },
  opts: { timeoutMs: number; fetch?: typeof fetch; observe?: (o: { ms: number; outcome: 'ok' | 'refused' | 'unavailable' }) => void },
): Promise<{ status: number; parsed: unknown }> {
  const started = performance.now();
  let outcome: 'ok' | 'refused' | 'unavailable' = 'unavailable';
  try {
    let response: Response;
    try {
      response = await (opts.fetch ?? fetch)(url, {
        method: request.method,
        headers: {
          accept: 'application/json',
          ...request.headers,
          ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
    } catch (error) {
      throw new WompiUnavailable(`${what}: ${(error as Error).message}`);
    }
    const text = await response.text().catch(() => '');
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    if (response.status >= 500 || response.status === 408 || response.status === 429) throw new WompiUnavailable(`${what}: HTTP ${response.status}`);
    outcome = response.status >= 400 ? 'refused' : 'ok';
    return { status: response.status, parsed };
  } finally {
    opts.observe?.({ ms: performance.now() - started, outcome });
  }
}

/** What the client reports about each call (metrics per connector). */
export type CallObserver = (call: { operation: string; ms: number; outcome: 'ok' | 'refused' | 'unavailable' }) => void;

export interface CardData {
  number: string;
  cvc: string;
  expMonth: number;
  expYear: number;
  holderName: string;
}

export interface TransactionRequest {
  reference: string;
  amount: bigint;
  currency: string;
  customerEmail: string;
  /** A fresh pair of the merchant's contracts (every transaction not on a saved source). */
  acceptance?: WompiAcceptance;
  paymentSourceId?: number;
  /** A merchant-initiated charge on a saved source (issuers decline those without the flag). */
  recurrent?: boolean;
  paymentMethod?: Record<string, unknown>;
  redirectUrl?: string;
  /** The payer as the provider asks for it on PSE (full name, phone). */
  customerData?: { full_name: string; phone_number: string };
}

/**
 * A thin client of the provider's REST API v1. Every call is bounded by `timeoutMs`; the keys go
 * in the Authorization header (public key for tokenization and reads, private key for payment
 * sources, transactions by source, searches and voids) and are never logged.
 */
export class WompiClient {
  constructor(
    private readonly creds: WompiCredentials,
    private readonly opts: { timeoutMs: number; observe?: CallObserver; fetch?: typeof fetch } = { timeoutMs: 15_000 },
  ) {}

  private async request<T>(
    operation: string,
    method: 'GET' | 'POST',
    path: string,
    key: 'public' | 'private',
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const { status, parsed } = await exchange(
      `wompi ${operation}`,
      `${this.creds.baseUrl.replace(/\/+$/, '')}${path}`,
      { method, headers: { ...headers, authorization: `Bearer ${key === 'public' ? this.creds.publicKey : this.creds.privateKey}` }, body },
      { timeoutMs: this.opts.timeoutMs, fetch: this.opts.fetch, observe: this.opts.observe && ((o) => this.opts.observe!({ operation, ...o })) },
    );
    if (status >= 400) throw new WompiRefused(status, parsed as WompiErrorBody | null);
    if (!parsed || typeof parsed !== 'object' || !('data' in parsed)) throw new WompiUnavailable(`wompi ${operation}: an answer without data`);
    return (parsed as { data: T }).data;
  }

  /**
   * A fresh pair of the merchant's presigned contracts (single-use tokens): `GET /merchants/info`
   * with the public key in `x-merchant-public-key` (the current form); the older
   * `GET /merchants/{public_key}` only when `info` answers 404.
   */
  async acceptance(): Promise<WompiAcceptance> {
    type Merchant = {
      presigned_acceptance?: { acceptance_token?: string; permalink?: string };
      presigned_personal_data_auth?: { acceptance_token?: string; permalink?: string };
    };
    let data: Merchant;
    try {
      data = await this.request<Merchant>('merchant', 'GET', '/merchants/info', 'public', undefined, {
        'x-merchant-public-key': this.creds.publicKey,
      });
    } catch (error) {
      if (!(error instanceof WompiRefused && error.status === 404)) throw error;
      data = await this.request<Merchant>('merchant', 'GET', `/merchants/${encodeURIComponent(this.creds.publicKey)}`, 'public');
    }
    const terms = data.presigned_acceptance;
    const personal = data.presigned_personal_data_auth;
    if (!terms?.acceptance_token || !personal?.acceptance_token) throw new WompiUnavailable('wompi merchant: the acceptance tokens are missing');
    return {
      token: terms.acceptance_token,
      permalink: terms.permalink ?? '',
      personalDataToken: personal.acceptance_token,
      personalDataPermalink: personal.permalink ?? '',
    };
  }

  /** Where a payer's browser tokenizes a card itself (with the public key): the card never reaches Recaudo. */
  browserTokenization(): { url: string; publicKey: string } {
    return { url: `${this.creds.baseUrl.replace(/\/+$/, '')}/tokens/cards`, publicKey: this.creds.publicKey };
  }

  /** Tokenizes a card (public key); the token is short-lived and single-use. */
  async tokenizeCard(card: CardData): Promise<{ id: string; brand: string; lastFour: string }> {
    const data = await this.request<{ id: string; brand: string; last_four: string }>('tokenize_card', 'POST', '/tokens/cards', 'public', {
      number: card.number,
      cvc: card.cvc,
      exp_month: String(card.expMonth).padStart(2, '0'),
      exp_year: String(card.expYear % 100).padStart(2, '0'),
      card_holder: card.holderName,
    });
    return { id: data.id, brand: data.brand, lastFour: data.last_four };
  }

  /** Saves a card token as a reusable payment source of the customer (private key). */
  async createPaymentSource(input: { token: string; customerEmail: string; acceptance: WompiAcceptance }): Promise<{ id: number; status: string }> {
    const data = await this.request<{ id: number; status: string }>('payment_source', 'POST', '/payment_sources', 'private', {
      type: 'CARD',
      token: input.token,
      customer_email: input.customerEmail,
      acceptance_token: input.acceptance.token,
      accept_personal_auth: input.acceptance.personalDataToken,
    });
    return { id: data.id, status: data.status };
  }

  /** Creates a transaction with its integrity signature; the reference is Recaudo's id. */
  async createTransaction(req: TransactionRequest): Promise<WompiTransaction> {
    return this.request<WompiTransaction>('create_transaction', 'POST', '/transactions', 'private', {
      amount_in_cents: amountInCents(req.amount),
      currency: req.currency,
      reference: req.reference,
      customer_email: req.customerEmail,
      signature: integritySignature(req.reference, req.amount, req.currency, this.creds.integritySecret),
      ...(req.acceptance ? { acceptance_token: req.acceptance.token, accept_personal_auth: req.acceptance.personalDataToken } : {}),
      ...(req.paymentSourceId !== undefined ? { payment_source_id: req.paymentSourceId } : {}),
      ...(req.recurrent ? { recurrent: true } : {}),
      ...(req.paymentMethod ? { payment_method: req.paymentMethod } : {}),
      ...(req.redirectUrl ? { redirect_url: req.redirectUrl } : {}),
      ...(req.customerData ? { customer_data: req.customerData } : {}),
    });
  }

  async getTransaction(id: string): Promise<WompiTransaction> {
    return this.request<WompiTransaction>('get_transaction', 'GET', `/transactions/${encodeURIComponent(id)}`, 'public');
  }

  /**
   * The transaction created with this reference, or null (private key). ASSUMPTION: the provider
   * refuses a second transaction with a reference already used, so at most one exists.
   */
  async findByReference(reference: string): Promise<WompiTransaction | null> {
    const list = await this.request<WompiTransaction[]>(
      'find_transaction',
      'GET',
      `/transactions?reference=${encodeURIComponent(reference)}`,
      'private',
    );
    return Array.isArray(list) && list.length ? list[0] : null;
  }

  /**
   * Voids an approved card transaction (private key). The answer's transaction (under
   * `transaction` or at the top level), or null when the answer carried none (an empty 201): the
   * caller reads it back.
   */
  async voidTransaction(id: string): Promise<WompiTransaction | null> {
    const { status, parsed } = await exchange(
      'wompi void_transaction',
      `${this.creds.baseUrl.replace(/\/+$/, '')}/transactions/${encodeURIComponent(id)}/void`,
      { method: 'POST', headers: { authorization: `Bearer ${this.creds.privateKey}` }, body: {} },
      {
        timeoutMs: this.opts.timeoutMs,
        fetch: this.opts.fetch,
        observe: this.opts.observe && ((o) => this.opts.observe!({ operation: 'void_transaction', ...o })),
      },
    );
    if (status >= 400) throw new WompiRefused(status, parsed as WompiErrorBody | null);
    const data = (parsed as { data?: ({ transaction?: WompiTransaction } & Partial<WompiTransaction>) | null } | null)?.data;
    const tx = data?.transaction ?? data;
    return tx && typeof tx === 'object' && typeof tx.status === 'string' ? (tx as WompiTransaction) : null;
  }

  /** PSE's financial institutions (public key). */
  async pseInstitutions(): Promise<{ code: string; name: string }[]> {
    const list = await this.request<{ financial_institution_code: string; financial_institution_name: string }[]>(
      'pse_institutions',
      'GET',
      '/pse/financial_institutions',
      'public',
    );
    return list.map((i) => ({ code: String(i.financial_institution_code), name: i.financial_institution_name }));
  }
}
