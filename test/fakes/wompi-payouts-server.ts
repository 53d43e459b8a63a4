import type http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventChecksum, type WompiEvent } from '../../src/rails/connectors/wompi/contract.ts';
import { FakeHttpService } from './fake-http.ts';

/**
 * A local fake of Wompi's Third-Party Payments API (docs/connectors.md "Payouts") enforcing the
 * documented contract the payout adapter relies on: the `x-api-key` + `user-principal-id` pair on
 * every call; `POST /payouts` with an `idempotency-key` of 1–64 letters, digits and hyphens (a
 * reused key is 409 EXC_022), an origin account of the merchant, a bank id of `GET /banks`, the
 * documented account and document types, amounts as positive integer cents, and the origin
 * account's balance (short: 400 EXC_008); batches searchable by reference; transactions PENDING
 * until `finalize` (APPROVED, or FAILED with a reason), then a `transaction.updated` event signed
 * with the payouts events secret (properties, timestamp in milliseconds, secret; also sent in
 * X-Event-Checksum). Faults as the payments fake: `failNext(operation, fault)`.
 */

interface StoredTransaction {
  id: string;
  payoutId: string;
  reference: string;
  status: 'PENDING' | 'APPROVED' | 'FAILED' | 'CANCELLED';
  amountInCents: number;
  failureReason: { code: string; message: string } | null;
  accountNumber: string;
  bankId: string;
  legalIdType: string;
  legalId: string;
  personType: string;
  createdAt: string;
}

interface StoredBatch {
  id: string;
  reference: string;
  status: 'PENDING' | 'TOTAL_PAYMENT' | 'REJECTED';
  amountInCents: number;
  paymentType: string;
  totalTransactions: number;
  createdAt: string;
}

const LEGAL_ID_TYPES = ['CC', 'NIT', 'CE', 'PP', 'TI', 'DNI'];
const ACCOUNT_TYPES = ['AHORROS', 'CORRIENTE', 'DEPOSITO_ELECTRONICO'];
const PAYMENT_TYPES = ['PAYROLL', 'PROVIDERS', 'OTHER'];

export class FakeWompiPayouts extends FakeHttpService {
  readonly apiKey = `payouts_key_${randomBytes(8).toString('hex')}`;
  readonly principalId = randomUUID();
  readonly eventsSecret = `prod_events_${randomBytes(8).toString('hex')}`;
  readonly originAccountId = randomUUID();
  /** The origin account's balance, in cents. */
  balanceInCents = 10_000_000_00;
  /** Posts events to a function (an in-process app). */
  deliver: ((event: WompiEvent, checksumHeader: string) => Promise<number>) | null = null;
  readonly batches = new Map<string, StoredBatch>();
  readonly transactions = new Map<string, StoredTransaction>();
  readonly calls: { operation: string; status: number; idempotencyKey: string | null }[] = [];
  readonly banks = [
    { id: randomUUID(), name: 'BANCOLOMBIA', code: 'BANCOLOMBIA', achCode: '1007' },
    { id: randomUUID(), name: 'BANCO DE BOGOTA', code: 'BANCO_BOGOTA', achCode: '1001' },
    { id: randomUUID(), name: 'BANCO DAVIVIENDA', code: 'DAVIVIENDA', achCode: '1051' },
    { id: randomUUID(), name: 'NEQUI', code: 'NEQUI', achCode: '1507' },
  ];
  private readonly usedKeys = new Set<string>();

  count(operation: string): number {
    return this.calls.filter((c) => c.operation === operation && c.status < 400).length;
  }

  /** The transactions sent for a reference (a cash-out id). */
  byReference(reference: string): StoredTransaction[] {
    return [...this.transactions.values()].filter((t) => t.reference === reference);
  }

  /** A transaction's final state, with its event posted unless `event: false`. A failed payout gives the money back to the origin account. */
  async finalize(
    id: string,
    opts: { status?: 'APPROVED' | 'FAILED'; reason?: { code: string; message: string }; event?: boolean } = {},
  ): Promise<StoredTransaction> {
    const tx = this.transactions.get(id);
    if (!tx) throw new Error(`no payout transaction ${id}`);
    if (tx.status === 'PENDING') {
      tx.status = opts.status ?? 'APPROVED';
      if (tx.status === 'FAILED') {
        tx.failureReason = opts.reason ?? { code: 'C01', message: 'La cuenta no existe o está inactiva' };
        this.balanceInCents += tx.amountInCents;
      }
      const batch = this.batches.get(tx.payoutId)!;
      if ([...this.transactions.values()].every((t) => t.payoutId !== batch.id || t.status !== 'PENDING')) batch.status = 'TOTAL_PAYMENT';
    }
    if (opts.event !== false) await this.postEvent(tx);
    return tx;
  }

  /** `transaction.updated` as the provider signs it; `tamper` changes it after signing. */
  eventOf(tx: StoredTransaction, tamper?: (e: WompiEvent) => void): WompiEvent {
    const event: WompiEvent = {
      event: 'transaction.updated',
      data: {
        transaction: {
          id: tx.id,
          payoutId: tx.payoutId,
          amountInCents: tx.amountInCents,
          status: tx.status,
          failureReason: tx.failureReason,
          currency: 'COP',
          payee: { accountNumber: tx.accountNumber, document: tx.legalId },
          createdAt: tx.createdAt,
        },
      },
      signature: { properties: ['transaction.id', 'transaction.status', 'transaction.amountInCents'], checksum: '' },
      timestamp: Date.now(),
      sent_at: new Date().toISOString(),
    };
    event.signature.checksum = eventChecksum(event, this.eventsSecret);
    tamper?.(event);
    return event;
  }

  async postEvent(tx: StoredTransaction, tamper?: (e: WompiEvent) => void): Promise<number> {
    const event = this.eventOf(tx, tamper);
    return this.deliver ? this.deliver(event, event.signature.checksum) : 0;
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, any> = {};
    const idempotencyKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    } catch {
      return this.reply(res, 'bad_json', idempotencyKey, 400, { code: 'EXC_002', message: ['invalid JSON'] });
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname.replace(/^\/v1/, '');
    const route = this.route(req.method ?? 'GET', path);
    if (!route) return this.reply(res, 'unknown', idempotencyKey, 404, { code: 'NOT_FOUND', message: 'no such route' });
    const [operation, run] = route;
    if (req.headers['x-api-key'] !== this.apiKey || req.headers['user-principal-id'] !== this.principalId) {
      return this.reply(res, operation, idempotencyKey, 401, { code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
    }
    const fault = this.nextFault(operation);
    if (fault === 'timeout') return;
    if (fault === '5xx') return this.reply(res, operation, idempotencyKey, 500, { code: 'EXC_001', message: 'Se presentó error interno' });
    const [status, answer] = run(body, url, idempotencyKey);
    if (await this.answers(fault, res)) this.reply(res, operation, idempotencyKey, status, answer);
    else this.calls.push({ operation, status, idempotencyKey });
  }

  private reply(res: http.ServerResponse, operation: string, idempotencyKey: string | null, status: number, body: unknown): void {
    this.calls.push({ operation, status, idempotencyKey });
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private page<T>(records: T[]): [number, unknown] {
    return [200, { status: 200, code: 'OK', data: { page: 1, limit: 100, total: records.length, pages: 1, records } }];
  }

  private route(method: string, path: string): [string, (body: any, url: URL, key: string | null) => [number, unknown]] | null {
    if (method === 'GET' && path === '/banks') return ['payout_banks', () => this.page(this.banks)];
    if (method === 'GET' && path === '/accounts')
      return ['payout_accounts', () => this.page([{ id: this.originAccountId, balanceInCents: this.balanceInCents, status: 'ACTIVE' }])];
    if (method === 'POST' && path === '/payouts') return ['create_payout', (b, _u, key) => this.create(b, key)];
    if (method === 'GET' && path === '/payouts')
      return ['find_payout', (_b, url) => this.page([...this.batches.values()].filter((b) => b.reference === url.searchParams.get('reference')))];
    const m = /^\/payouts\/([^/]+)\/transactions$/.exec(path);
    if (method === 'GET' && m) {
      return [
        'payout_transactions',
        () => {
          const batch = this.batches.get(decodeURIComponent(m[1]));
          if (!batch) return [404, { code: 'NOT_FOUND', message: 'Lote no encontrado' }];
          return this.page(
            [...this.transactions.values()]
              .filter((t) => t.payoutId === batch.id)
              .map((t) => ({
                id: t.id,
                status: t.status,
                amountInCents: t.amountInCents,
                reference: t.reference,
                failureReason: t.failureReason ? `${t.failureReason.code} ${t.failureReason.message}` : null,
                payoutId: t.payoutId,
                createdAt: t.createdAt,
              })),
          );
        },
      ];
    }
    return null;
  }

  private create(b: any, key: string | null): [number, unknown] {
    if (key === null || !/^[A-Za-z0-9-]{1,64}$/.test(key))
      return [400, { code: 'EXC_002', message: ['idempotency-key must be 1-64 letters, digits or hyphens'] }];
    if (this.usedKeys.has(key)) return [409, { code: 'EXC_022', message: 'Idempotency key ya fue procesada' }];
    const problems: string[] = [];
    if (typeof b.reference !== 'string' || !b.reference) problems.push('reference is required');
    if (b.accountId !== this.originAccountId) problems.push('accountId is not an origin account of the merchant');
    if (!PAYMENT_TYPES.includes(b.paymentType)) problems.push('paymentType must be PAYROLL, PROVIDERS or OTHER');
    if (!Array.isArray(b.transactions) || b.transactions.length === 0) problems.push('transactions must not be empty');
    const txs: any[] = Array.isArray(b.transactions) ? b.transactions : [];
    txs.forEach((t, i) => {
      if (!LEGAL_ID_TYPES.includes(t.legalIdType)) problems.push(`transactions[${i}].legalIdType is invalid`);
      if (typeof t.legalId !== 'string' || !/^[0-9A-Za-z]{3,20}$/.test(t.legalId)) problems.push(`transactions[${i}].legalId is invalid`);
      if (!this.banks.some((bank) => bank.id === t.bankId)) problems.push(`transactions[${i}].bankId is not a bank of GET /banks`);
      if (!ACCOUNT_TYPES.includes(t.accountType)) problems.push(`transactions[${i}].accountType is invalid`);
      if (typeof t.accountNumber !== 'string' || !/^\d{6,20}$/.test(t.accountNumber) || /^0+$/.test(t.accountNumber))
        problems.push(`transactions[${i}].accountNumber must be 6-20 digits`);
      if (typeof t.name !== 'string' || !t.name.trim()) problems.push(`transactions[${i}].name is required`);
      if (typeof t.email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(t.email)) problems.push(`transactions[${i}].email is invalid`);
      if (!Number.isSafeInteger(t.amount) || t.amount <= 0) problems.push(`transactions[${i}].amount must be a positive integer in cents`);
      if (typeof t.reference !== 'string' || !t.reference) problems.push(`transactions[${i}].reference is required`);
      if (t.personType !== 'NATURAL' && t.personType !== 'JURIDICA') problems.push(`transactions[${i}].personType is invalid`);
    });
    if (problems.length) return [400, { code: 'EXC_002', message: problems }];
    const total = txs.reduce((sum, t) => sum + t.amount, 0);
    if (total > this.balanceInCents) return [400, { code: 'EXC_008', message: 'Saldo insuficiente para procesar el lote' }];
    this.usedKeys.add(key);
    this.balanceInCents -= total;
    const now = new Date().toISOString();
    const batch: StoredBatch = {
      id: randomUUID(),
      reference: b.reference,
      status: 'PENDING',
      amountInCents: total,
      paymentType: b.paymentType,
      totalTransactions: txs.length,
      createdAt: now,
    };
    this.batches.set(batch.id, batch);
    for (const t of txs) {
      const tx: StoredTransaction = {
        id: randomUUID(),
        payoutId: batch.id,
        reference: t.reference,
        status: 'PENDING',
        amountInCents: t.amount,
        failureReason: null,
        accountNumber: t.accountNumber,
        bankId: t.bankId,
        legalIdType: t.legalIdType,
        legalId: t.legalId,
        personType: t.personType,
        createdAt: now,
      };
      this.transactions.set(tx.id, tx);
    }
    return [
      201,
      {
        status: 201,
        code: 'OK',
        message: 'Solicitud ejecutada correctamente.',
        data: { payoutId: batch.id, transactions: txs.length, success: txs.length, failed: 0 },
      },
    ];
  }
}
