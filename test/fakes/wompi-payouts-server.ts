import type http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventChecksum, type WompiEvent } from '../../src/rails/connectors/wompi/contract.ts';
import { FakeHttpService } from './fake-http.ts';

/**
 * A local fake of Wompi's Third-Party Payments API ("Pagos a terceros"), written from the
 * provider's public contract (docs.wompi.co: crea tu primer lote, consultas y operaciones,
 * eventos, sandbox; its Postman collection and OpenAPI document as independent clients read them),
 * not from Recaudo's client:
 *
 * - every call needs the `x-api-key` + `user-principal-id` pair (401 otherwise);
 * - `POST /payouts` needs an `idempotency-key` of 1–64 letters, digits or hyphens (400), kept 24
 *   hours (a reuse is 409 EXC_022); the batch `reference` and each transaction's `reference` use
 *   only letters, digits and hyphens (422 otherwise); an origin account of the merchant, a bank id
 *   of `GET /banks`, the documented account, document and person types, amounts as positive integer
 *   cents and the origin account's balance (short: 400 EXC_008);
 * - the answer is asynchronous: the batch and its transactions are `PENDING` until the test moves
 *   them (`finalize` for a transaction, `setBatchStatus` for a batch: the approval flow
 *   PENDING_APPROVAL/NOT_APPROVED, the anti-fraud review AFE_ON_HOLD/AFE_REJECTED, REJECTED);
 *   money that will not leave goes back to the origin account;
 * - reads: `GET /payouts` (filters `reference`, `id`, `status`), `GET /payouts/{id}`,
 *   `GET /payouts/{id}/transactions` (filters `reference`, `status`),
 *   `GET /payouts/{id}/transactions/{transactionId}`, `GET /transactions/{batch reference}`,
 *   `GET /banks` (a bare array, as the provider answers it), `GET /accounts`;
 * - events `transaction.updated` and `payout.updated`, signed with the payouts events secret
 *   (the values of `signature.properties`, the `timestamp` in milliseconds, the secret; SHA-256),
 *   the checksum also in the `X-Event-Checksum` header; `sentAt` camelCased; the timestamp from
 *   `now` (a test with a test clock sets it).
 *
 * Faults as the payments fake: `failNext(operation, fault)`.
 */

/** Documented transaction statuses. */
export type FakePayoutTransactionStatus =
  'PENDING' | 'PROCESSING' | 'READY_TO_FILE' | 'ADDED_TO_FILE' | 'APPROVED' | 'FAILED' | 'REJECTED' | 'CANCELLED';

/** Documented batch statuses. */
export type FakePayoutBatchStatus =
  'PENDING_APPROVAL' | 'PENDING' | 'NOT_APPROVED' | 'REJECTED' | 'PARTIAL_PAYMENT' | 'TOTAL_PAYMENT' | 'AFE_ON_HOLD' | 'AFE_REJECTED';

export interface StoredPayoutTransaction {
  id: string;
  payoutId: string;
  reference: string | null;
  status: FakePayoutTransactionStatus;
  amountInCents: number;
  failureReason: { code: string; message: string } | null;
  name: string;
  email: string | null;
  accountNumber: string;
  accountType: string;
  bankId: string;
  legalIdType: string;
  legalId: string;
  personType: string;
  createdAt: string;
  appliedAt: string | null;
}

export interface StoredPayoutBatch {
  id: string;
  reference: string;
  status: FakePayoutBatchStatus;
  statusMessage: string | null;
  amountInCents: number;
  paymentType: string;
  totalTransactions: number;
  /** Sandbox: the final status every transaction of the batch takes (`transactionStatus`). */
  forcedStatus: 'APPROVED' | 'FAILED' | null;
  createdAt: string;
}

const LEGAL_ID_TYPES = ['CC', 'NIT', 'CE', 'PP', 'TI', 'DNI'];
const ACCOUNT_TYPES = ['AHORROS', 'CORRIENTE', 'DEPOSITO_ELECTRONICO'];
const PAYMENT_TYPES = ['PAYROLL', 'PROVIDERS', 'OTHER'];
/** The provider's key and reference charset: letters, digits and the hyphen. */
const KEY = /^[A-Za-z0-9-]{1,64}$/;
const REFERENCE = /^[A-Za-z0-9-]+$/;
/** Transaction statuses after which nothing changes. */
const FINAL_TX: FakePayoutTransactionStatus[] = ['APPROVED', 'FAILED', 'REJECTED', 'CANCELLED'];
/** Batch statuses in which no transaction of it will be paid. */
const REFUSED_BATCH: FakePayoutBatchStatus[] = ['NOT_APPROVED', 'REJECTED', 'AFE_REJECTED'];

export class FakeWompiPayouts extends FakeHttpService {
  readonly apiKey: string;
  readonly principalId = randomUUID();
  readonly eventsSecret: string;
  readonly originAccountId = randomUUID();
  /** The origin account's balance, in cents. */
  balanceInCents = 10_000_000_00;
  /** The provider's clock (event timestamps, dates): a test with a test clock sets it to that clock. */
  now: () => Date = () => new Date();
  /** Posts events to a function (an in-process app): the event and its X-Event-Checksum header. */
  deliver: ((event: WompiEvent, checksumHeader: string) => Promise<number>) | null = null;
  /** Or to a URL (the connector's payouts events URL). */
  eventsUrl: string | null = null;
  readonly batches = new Map<string, StoredPayoutBatch>();
  readonly transactions = new Map<string, StoredPayoutTransaction>();
  readonly calls: { operation: string; status: number; idempotencyKey: string | null; reference: string | null }[] = [];
  readonly banks = [
    { id: randomUUID(), name: 'BANCOLOMBIA', code: 'BANCOLOMBIA', achCode: '1007', allowedForOrigin: true, isElectronicDeposit: false },
    { id: randomUUID(), name: 'BANCO DE BOGOTA', code: 'BANCO_BOGOTA', achCode: '1001', allowedForOrigin: true, isElectronicDeposit: false },
    { id: randomUUID(), name: 'BANCO DAVIVIENDA', code: 'DAVIVIENDA', achCode: '1051', allowedForOrigin: true, isElectronicDeposit: false },
    { id: randomUUID(), name: 'NEQUI', code: 'NEQUI', achCode: '1507', allowedForOrigin: false, isElectronicDeposit: true },
  ];
  private readonly usedKeys = new Map<string, number>();

  /** `sandbox`: the provider's sandbox (its secrets' prefixes say so; `transactionStatus` is honoured). */
  constructor(readonly environment: 'sandbox' | 'production' = 'production') {
    super();
    this.apiKey = `payouts_key_${randomBytes(8).toString('hex')}`;
    this.eventsSecret = `${environment === 'sandbox' ? 'test' : 'prod'}_events_${randomBytes(8).toString('hex')}`;
  }

  count(operation: string): number {
    return this.calls.filter((c) => c.operation === operation && c.status < 400).length;
  }

  /**
   * The transactions sent under a reference. A convenience for tests: a cash-out id (`co_…`) is
   * looked up under its payout reference (its `_` as `-`); nothing with `_` is ever stored, the
   * API refuses such references.
   */
  byReference(reference: string): StoredPayoutTransaction[] {
    const ref = reference.replace(/_/g, '-');
    return [...this.transactions.values()].filter((t) => t.reference === ref);
  }

  /** The batch a transaction belongs to. */
  batchOf(tx: StoredPayoutTransaction): StoredPayoutBatch {
    return this.batches.get(tx.payoutId)!;
  }

  /**
   * A transaction's final state (APPROVED by default, or the batch's sandbox `transactionStatus`),
   * with its `transaction.updated` event posted unless `event: false`. Money of a transaction that
   * is not paid goes back to the origin account; the batch is TOTAL_PAYMENT or PARTIAL_PAYMENT once
   * none of its transactions is on the way.
   */
  async finalize(
    id: string,
    opts: { status?: FakePayoutTransactionStatus; reason?: { code: string; message: string }; event?: boolean } = {},
  ): Promise<StoredPayoutTransaction> {
    const tx = this.transactions.get(id);
    if (!tx) throw new Error(`no payout transaction ${id}`);
    if (!FINAL_TX.includes(tx.status)) {
      const batch = this.batchOf(tx);
      tx.status = opts.status ?? batch.forcedStatus ?? 'APPROVED';
      if (tx.status === 'APPROVED') tx.appliedAt = this.now().toISOString();
      else if (FINAL_TX.includes(tx.status)) {
        tx.failureReason = opts.reason ?? { code: 'C01', message: 'La cuenta no existe o está inactiva' };
        this.balanceInCents += tx.amountInCents;
      }
      this.settleBatch(batch);
    }
    if (opts.event !== false) await this.postEvent(tx);
    return tx;
  }

  /**
   * Moves a batch to `status` (the approval flow, the anti-fraud review, a rejection), with its
   * `payout.updated` event posted unless `event: false`. A batch refused as a whole (NOT_APPROVED,
   * REJECTED, AFE_REJECTED) gives its money back; its transactions keep their status unless
   * `transactions` names one (e.g. CANCELLED).
   */
  async setBatchStatus(
    id: string,
    status: FakePayoutBatchStatus,
    opts: { statusMessage?: string | null; transactions?: FakePayoutTransactionStatus; event?: boolean } = {},
  ): Promise<StoredPayoutBatch> {
    const batch = this.batches.get(id);
    if (!batch) throw new Error(`no payout batch ${id}`);
    const wasRefused = REFUSED_BATCH.includes(batch.status);
    batch.status = status;
    batch.statusMessage = opts.statusMessage ?? null;
    const open = [...this.transactions.values()].filter((t) => t.payoutId === id && !FINAL_TX.includes(t.status));
    if (REFUSED_BATCH.includes(status) && !wasRefused) for (const t of open) this.balanceInCents += t.amountInCents;
    if (opts.transactions) for (const t of open) t.status = opts.transactions;
    if (opts.event !== false) await this.postBatchEvent(batch);
    return batch;
  }

  private settleBatch(batch: StoredPayoutBatch): void {
    if (REFUSED_BATCH.includes(batch.status)) return;
    const txs = [...this.transactions.values()].filter((t) => t.payoutId === batch.id);
    if (txs.some((t) => !FINAL_TX.includes(t.status))) return;
    batch.status = txs.every((t) => t.status === 'APPROVED') ? 'TOTAL_PAYMENT' : 'PARTIAL_PAYMENT';
  }

  private sign(event: WompiEvent, tamper?: (e: WompiEvent) => void): WompiEvent {
    event.signature.checksum = eventChecksum(event, this.eventsSecret);
    tamper?.(event);
    return event;
  }

  private envelope(name: string, data: Record<string, unknown>, properties: string[]): WompiEvent {
    const now = this.now();
    return {
      event: name,
      data,
      signature: { properties, checksum: '' },
      timestamp: now.getTime(),
      sentAt: now.toISOString(),
    } as WompiEvent;
  }

  /** `transaction.updated` as the provider signs it (the documented fields: no reference); `tamper` changes it after signing. */
  eventOf(tx: StoredPayoutTransaction, tamper?: (e: WompiEvent) => void): WompiEvent {
    const transaction = {
      id: tx.id,
      payoutId: tx.payoutId,
      amountInCents: tx.amountInCents,
      status: tx.status,
      failureReason: tx.failureReason,
      currency: 'COP',
      payee: { name: tx.name, accountNumber: tx.accountNumber, accountType: tx.accountType, document: tx.legalId, legalIdType: tx.legalIdType },
      createdAt: tx.createdAt,
    };
    const event = this.envelope('transaction.updated', { transaction }, ['transaction.id', 'transaction.status', 'transaction.amountInCents']);
    return this.sign(event, tamper);
  }

  /** `payout.updated` (a batch's status changed) as the provider signs it; `tamper` changes it after signing. */
  batchEventOf(batch: StoredPayoutBatch, tamper?: (e: WompiEvent) => void): WompiEvent {
    const event = this.envelope('payout.updated', { payout: this.batchView(batch) }, ['payout.id', 'payout.status', 'payout.amountInCents']);
    return this.sign(event, tamper);
  }

  /** Any other signed event (a type the connector does not use). */
  otherEventOf(name: string, data: Record<string, unknown>, properties: string[]): WompiEvent {
    return this.sign(this.envelope(name, data, properties));
  }

  async post(event: WompiEvent): Promise<number> {
    if (this.deliver) return this.deliver(event, event.signature.checksum);
    if (!this.eventsUrl) return 0;
    const res = await fetch(this.eventsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-event-checksum': event.signature.checksum },
      body: JSON.stringify(event),
    });
    return res.status;
  }

  async postEvent(tx: StoredPayoutTransaction, tamper?: (e: WompiEvent) => void): Promise<number> {
    return this.post(this.eventOf(tx, tamper));
  }

  async postBatchEvent(batch: StoredPayoutBatch, tamper?: (e: WompiEvent) => void): Promise<number> {
    return this.post(this.batchEventOf(batch, tamper));
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, any> = {};
    const idempotencyKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname.replace(/^\/v1/, '');
    const route = this.route(req.method ?? 'GET', path);
    const call = { operation: route?.[0] ?? 'unknown', idempotencyKey, reference: null as string | null };
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    } catch {
      return this.reply(res, call, 400, { code: 'EXC_002', message: ['invalid JSON'] });
    }
    call.reference = typeof body?.reference === 'string' ? body.reference : url.searchParams.get('reference');
    if (!route) return this.reply(res, call, 404, { code: 'NOT_FOUND', message: 'Recurso no encontrado' });
    const [, run] = route;
    if (req.headers['x-api-key'] !== this.apiKey || req.headers['user-principal-id'] !== this.principalId) {
      return this.reply(res, call, 401, { code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
    }
    const fault = this.nextFault(call.operation);
    if (fault === 'timeout') return;
    if (fault === '5xx') return this.reply(res, call, 500, { code: 'EXC_001', message: 'Se presentó error interno' });
    const [status, answer] = run(body, url, idempotencyKey);
    if (await this.answers(fault, res)) this.reply(res, call, status, answer);
    else this.calls.push({ ...call, status });
  }

  private reply(res: http.ServerResponse, call: Omit<FakeWompiPayouts['calls'][number], 'status'>, status: number, body: unknown): void {
    this.calls.push({ ...call, status });
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  /** The documented envelope. */
  private ok(data: unknown, status = 200): [number, unknown] {
    return [status, { status, code: 'OK', message: 'Solicitud ejecutada correctamente.', data }];
  }

  /** A paginated list: `{page, limit, total, pages, records}` in the envelope. */
  private page<T>(records: T[], url: URL): [number, unknown] {
    const limit = Math.max(1, Number(url.searchParams.get('limit') ?? 100) || 100);
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    return this.ok({
      page,
      limit,
      total: records.length,
      pages: Math.max(1, Math.ceil(records.length / limit)),
      records: records.slice((page - 1) * limit, page * limit),
    });
  }

  private batchView(b: StoredPayoutBatch) {
    return {
      id: b.id,
      reference: b.reference,
      status: b.status,
      statusMessage: b.statusMessage,
      amountInCents: b.amountInCents,
      currency: 'COP',
      paymentType: b.paymentType,
      totalTransactions: b.totalTransactions,
      createdAt: b.createdAt,
    };
  }

  /** A transaction as the REST reads answer it (`failureReason` a string there, an object in events). */
  private transactionView(t: StoredPayoutTransaction) {
    return {
      id: t.id,
      status: t.status,
      amountInCents: t.amountInCents,
      reference: t.reference,
      failureReason: t.failureReason ? `${t.failureReason.code} ${t.failureReason.message}` : null,
      payeeInfo: {
        name: t.name,
        email: t.email,
        legalId: t.legalId,
        legalIdType: t.legalIdType,
        accountNumber: t.accountNumber,
        accountType: t.accountType,
      },
      appliedAt: t.appliedAt,
      createdAt: t.createdAt,
      payout: this.batchView(this.batches.get(t.payoutId)!),
    };
  }

  private transactionsOf(batchId: string, url: URL) {
    const statuses = url.searchParams.get('status')?.split(',');
    const reference = url.searchParams.get('reference');
    return [...this.transactions.values()].filter(
      (t) => t.payoutId === batchId && (!statuses || statuses.includes(t.status)) && (reference === null || t.reference === reference),
    );
  }

  private route(method: string, path: string): [string, (body: any, url: URL, key: string | null) => [number, unknown]] | null {
    const notFound: [number, unknown] = [404, { code: 'NOT_FOUND', message: 'Recurso no encontrado' }];
    if (method === 'GET' && path === '/banks') return ['payout_banks', () => [200, this.banks]];
    if (method === 'GET' && path === '/accounts')
      return [
        'payout_accounts',
        () => this.ok([{ id: this.originAccountId, balanceInCents: this.balanceInCents, status: 'ACTIVE', accountType: 'AHORROS' }]),
      ];
    if (method === 'POST' && path === '/payouts') return ['create_payout', (b, _u, key) => this.create(b, key)];
    if (method === 'GET' && path === '/payouts')
      return [
        'find_payout',
        (_b, url) => {
          const statuses = url.searchParams.get('status')?.split(',');
          const [reference, id] = [url.searchParams.get('reference'), url.searchParams.get('id')];
          const list = [...this.batches.values()].filter(
            (b) => (reference === null || b.reference === reference) && (id === null || b.id === id) && (!statuses || statuses.includes(b.status)),
          );
          return this.page(
            list.map((b) => this.batchView(b)),
            url,
          );
        },
      ];
    let m = /^\/payouts\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const id = decodeURIComponent(m[1]);
      return ['get_payout', () => (this.batches.has(id) ? this.ok(this.batchView(this.batches.get(id)!)) : notFound)];
    }
    m = /^\/payouts\/([^/]+)\/transactions$/.exec(path);
    if (method === 'GET' && m) {
      const id = decodeURIComponent(m[1]);
      return [
        'payout_transactions',
        (_b, url) =>
          this.batches.has(id)
            ? this.page(
                this.transactionsOf(id, url).map((t) => this.transactionView(t)),
                url,
              )
            : notFound,
      ];
    }
    m = /^\/payouts\/([^/]+)\/transactions\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const [batchId, txId] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
      return [
        'payout_transaction',
        () => {
          const tx = this.transactions.get(txId);
          return tx && tx.payoutId === batchId ? this.ok(this.transactionView(tx)) : notFound;
        },
      ];
    }
    m = /^\/transactions\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const reference = decodeURIComponent(m[1]);
      return [
        'transactions_by_reference',
        (_b, url) => {
          const ids = new Set([...this.batches.values()].filter((b) => b.reference === reference).map((b) => b.id));
          return this.page(
            [...this.transactions.values()].filter((t) => ids.has(t.payoutId)).map((t) => this.transactionView(t)),
            url,
          );
        },
      ];
    }
    return null;
  }

  private create(b: any, key: string | null): [number, unknown] {
    if (key === null || !KEY.test(key)) return [400, { code: 'EXC_002', message: ['idempotency-key must be 1-64 letters, digits or hyphens'] }];
    const nowMs = this.now().getTime();
    const used = this.usedKeys.get(key);
    if (used !== undefined && nowMs - used < 86_400_000) return [409, { code: 'EXC_022', message: 'Idempotency key ya fue procesada' }];
    // References: letters, digits and hyphens only (the batch's and each transaction's).
    const badReferences: string[] = [];
    if (typeof b.reference !== 'string' || !REFERENCE.test(b.reference))
      badReferences.push('reference must contain only letters, digits and hyphens');
    const txs: any[] = Array.isArray(b.transactions) ? b.transactions : [];
    txs.forEach((t, i) => {
      if (t?.reference !== undefined && (typeof t.reference !== 'string' || !REFERENCE.test(t.reference)))
        badReferences.push(`transactions[${i}].reference must contain only letters, digits and hyphens`);
    });
    if (badReferences.length) return [422, { code: 'EXC_002', message: badReferences }];
    const problems: string[] = [];
    if (b.accountId !== this.originAccountId) problems.push('accountId is not an origin account of the merchant');
    if (!PAYMENT_TYPES.includes(b.paymentType)) problems.push('paymentType must be PAYROLL, PROVIDERS or OTHER');
    if (txs.length === 0) problems.push('transactions must not be empty');
    if (b.transactionStatus !== undefined && (this.environment !== 'sandbox' || !['APPROVED', 'FAILED'].includes(b.transactionStatus)))
      problems.push('transactionStatus is a sandbox field: APPROVED or FAILED');
    txs.forEach((t, i) => {
      if (!LEGAL_ID_TYPES.includes(t.legalIdType)) problems.push(`transactions[${i}].legalIdType is invalid`);
      if (typeof t.legalId !== 'string' || !/^[0-9A-Za-z]{3,20}$/.test(t.legalId)) problems.push(`transactions[${i}].legalId is invalid`);
      if (!this.banks.some((bank) => bank.id === t.bankId)) problems.push(`transactions[${i}].bankId is not a bank of GET /banks`);
      if (!ACCOUNT_TYPES.includes(t.accountType)) problems.push(`transactions[${i}].accountType is invalid`);
      if (typeof t.accountNumber !== 'string' || !/^(?=.*[1-9])\d{6,20}$/.test(t.accountNumber))
        problems.push(`transactions[${i}].accountNumber must be 6-20 digits and different from zero`);
      if (typeof t.name !== 'string' || !t.name.trim()) problems.push(`transactions[${i}].name is required`);
      if (t.email !== undefined && (typeof t.email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(t.email)))
        problems.push(`transactions[${i}].email is invalid`);
      if (!Number.isSafeInteger(t.amount) || t.amount <= 0) problems.push(`transactions[${i}].amount must be a positive integer in cents`);
      if (t.personType !== 'NATURAL' && t.personType !== 'JURIDICA') problems.push(`transactions[${i}].personType is invalid`);
    });
    if (problems.length) return [400, { code: 'EXC_002', message: problems }];
    const total = txs.reduce((sum, t) => sum + t.amount, 0);
    if (total > this.balanceInCents) return [400, { code: 'EXC_008', message: 'Saldo insuficiente para procesar el lote' }];
    this.usedKeys.set(key, nowMs);
    this.balanceInCents -= total;
    const createdAt = this.now().toISOString();
    const batch: StoredPayoutBatch = {
      id: randomUUID(),
      reference: b.reference,
      status: 'PENDING',
      statusMessage: null,
      amountInCents: total,
      paymentType: b.paymentType,
      totalTransactions: txs.length,
      forcedStatus: b.transactionStatus ?? null,
      createdAt,
    };
    this.batches.set(batch.id, batch);
    for (const t of txs) {
      const tx: StoredPayoutTransaction = {
        id: randomUUID(),
        payoutId: batch.id,
        reference: t.reference ?? null,
        status: 'PENDING',
        amountInCents: t.amount,
        failureReason: null,
        name: t.name,
        email: t.email ?? null,
        accountNumber: t.accountNumber,
        accountType: t.accountType,
        bankId: t.bankId,
        legalIdType: t.legalIdType,
        legalId: t.legalId,
        personType: t.personType,
        createdAt,
        appliedAt: null,
      };
      this.transactions.set(tx.id, tx);
    }
    return this.ok({ payoutId: batch.id, transactions: txs.length, success: txs.length, failed: 0 }, 201);
  }
}
