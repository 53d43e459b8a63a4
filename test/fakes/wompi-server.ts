import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  eventChecksum,
  integritySignature,
  type WompiEvent,
  type WompiStatus,
  type WompiTransaction,
} from '../../src/rails/connectors/wompi/contract.ts';

/**
 * A local fake of Wompi's public REST API v1 that enforces the documented contract the connector
 * relies on (docs/connectors.md): key kinds (public for tokenization and reads, private for
 * payment sources, transactions on a source, searches and voids), acceptance tokens, the
 * integrity signature, unique references, PENDING first and a final state later, events posted
 * with a valid checksum, voids of approved card transactions. Test cards: 4242 4242 4242 4242
 * approves, 4111 1111 1111 1111 declines (insufficient funds); any other valid number approves.
 * Faults: `failNext(operation, 'timeout' | '5xx' | 'lose_answer')`.
 */

export type FakeFault = 'timeout' | '5xx' | 'lose_answer';

export interface FakeWompiOptions {
  publicKey?: string;
  privateKey?: string;
  eventsSecret?: string;
  integritySecret?: string;
  /** When a PENDING transaction becomes final by itself (ms after its creation); null: only `finalize`. */
  autoFinalizeMs?: number | null;
}

interface StoredTx extends WompiTransaction {
  finalStatus: WompiStatus;
  finalMessage: string | null;
}

const luhn = (pan: string) => {
  let sum = 0;
  for (let i = 0; i < pan.length; i++) {
    let d = Number(pan[pan.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
};

export class FakeWompi {
  readonly publicKey: string;
  readonly privateKey: string;
  readonly eventsSecret: string;
  readonly integritySecret: string;
  readonly acceptanceToken = `eyJ.fake.${randomBytes(6).toString('hex')}`;
  /** Where events are posted (the connector's events URL); set by the test. */
  eventsUrl: string | null = null;
  /** Posts events to a function instead of a URL (an in-process app). */
  deliver: ((event: WompiEvent) => Promise<number>) | null = null;
  readonly transactions = new Map<string, StoredTx>();
  readonly calls: { operation: string; key: 'public' | 'private' | 'none' | 'bad'; status: number }[] = [];
  private readonly tokens = new Map<string, { pan: string; used: boolean }>();
  private readonly sources = new Map<number, { pan: string; email: string }>();
  private readonly faults = new Map<string, FakeFault[]>();
  private server: http.Server | null = null;
  private nextSource = 1000;
  url = '';

  constructor(private readonly opts: FakeWompiOptions = {}) {
    this.publicKey = opts.publicKey ?? `pub_test_${randomBytes(8).toString('hex')}`;
    this.privateKey = opts.privateKey ?? `prv_test_${randomBytes(8).toString('hex')}`;
    this.eventsSecret = opts.eventsSecret ?? `test_events_${randomBytes(8).toString('hex')}`;
    this.integritySecret = opts.integritySecret ?? `test_integrity_${randomBytes(8).toString('hex')}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  failNext(operation: string, fault: FakeFault): void {
    this.faults.set(operation, [...(this.faults.get(operation) ?? []), fault]);
  }

  count(operation: string): number {
    return this.calls.filter((c) => c.operation === operation && c.status < 400).length;
  }

  /** The transaction's final state (or `status`), with its event posted unless `event: false`. */
  async finalize(id: string, opts: { status?: WompiStatus; message?: string; event?: boolean } = {}): Promise<StoredTx> {
    const tx = this.transactions.get(id);
    if (!tx) throw new Error(`no transaction ${id}`);
    if (tx.status === 'PENDING') {
      tx.status = opts.status ?? tx.finalStatus;
      tx.status_message = opts.message ?? (tx.status === 'APPROVED' ? null : tx.finalMessage);
      tx.finalized_at = new Date().toISOString();
    }
    if (opts.event !== false) await this.postEvent(tx);
    return tx;
  }

  /** The event of a transaction as the provider signs it; `tamper` changes it after signing. */
  eventOf(tx: WompiTransaction, tamper?: (e: WompiEvent) => void): WompiEvent {
    const transaction = { ...tx } as Record<string, unknown>;
    delete transaction.finalStatus;
    delete transaction.finalMessage;
    const event: WompiEvent = {
      event: 'transaction.updated',
      data: { transaction },
      environment: 'test',
      signature: { properties: ['transaction.id', 'transaction.status', 'transaction.amount_in_cents'], checksum: '' },
      timestamp: Math.floor(Date.now() / 1000),
      sent_at: new Date().toISOString(),
    };
    event.signature.checksum = eventChecksum(event, this.eventsSecret).toUpperCase();
    tamper?.(event);
    return event;
  }

  async postEvent(tx: WompiTransaction, tamper?: (e: WompiEvent) => void): Promise<number> {
    const event = this.eventOf(tx, tamper);
    if (this.deliver) return this.deliver(event);
    if (!this.eventsUrl) return 0;
    const res = await fetch(this.eventsUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) });
    return res.status;
  }

  private keyKind(req: http.IncomingMessage): 'public' | 'private' | 'none' | 'bad' {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    if (!m) return 'none';
    if (m[1] === this.publicKey) return 'public';
    if (m[1] === this.privateKey) return 'private';
    return 'bad';
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, any> = {};
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    } catch {
      return this.reply(res, 'bad_json', 'none', 400, { error: { type: 'INPUT_VALIDATION_ERROR', messages: { body: ['invalid JSON'] } } });
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname.replace(/^\/v1/, '');
    const key = this.keyKind(req);
    const route = this.route(req.method ?? 'GET', path);
    if (!route) return this.reply(res, 'unknown', key, 404, { error: { type: 'NOT_FOUND_ERROR', reason: 'no such route' } });
    const [operation, needs, run] = route;
    if (key === 'none' || key === 'bad' || (needs === 'private' && key !== 'private')) {
      return this.reply(res, operation, key, 401, {
        error: { type: 'INVALID_ACCESS_TOKEN', reason: needs === 'private' ? 'Se esperaba una llave privada' : 'Llave inválida' },
      });
    }
    const fault = this.faults.get(operation)?.shift();
    if (fault === 'timeout') return; // never answers
    if (fault === '5xx') return this.reply(res, operation, key, 502, { error: { type: 'BAD_GATEWAY' } });
    const [status, answer] = run(body, url, path);
    if (fault === 'lose_answer') {
      this.calls.push({ operation, key, status });
      res.destroy();
      return;
    }
    this.reply(res, operation, key, status, answer);
  }

  private reply(res: http.ServerResponse, operation: string, key: FakeWompi['calls'][number]['key'], status: number, body: unknown): void {
    this.calls.push({ operation, key, status });
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private invalid(messages: Record<string, string[]>): [number, unknown] {
    return [422, { error: { type: 'INPUT_VALIDATION_ERROR', messages } }];
  }

  private route(method: string, path: string): [string, 'public' | 'private', (body: any, url: URL, path: string) => [number, unknown]] | null {
    if (method === 'GET' && path === `/merchants/${this.publicKey}`) {
      return [
        'merchant',
        'public',
        () => [
          200,
          {
            data: {
              id: 1,
              name: 'Comercio de prueba',
              presigned_acceptance: {
                acceptance_token: this.acceptanceToken,
                permalink: 'https://wompi.example/terminos.pdf',
                type: 'END_USER_POLICY',
              },
            },
          },
        ],
      ];
    }
    if (method === 'POST' && path === '/tokens/cards') return ['tokenize_card', 'public', (b) => this.tokenize(b)];
    if (method === 'POST' && path === '/payment_sources') return ['payment_source', 'private', (b) => this.paymentSource(b)];
    if (method === 'POST' && path === '/transactions') return ['create_transaction', 'private', (b) => this.createTransaction(b)];
    if (method === 'GET' && path === '/transactions') return ['find_transaction', 'private', (_b, url) => this.search(url)];
    const tx = /^\/transactions\/([^/]+)(\/void)?$/.exec(path);
    if (tx && method === 'GET' && !tx[2]) return ['get_transaction', 'public', () => this.read(decodeURIComponent(tx[1]))];
    if (tx && method === 'POST' && tx[2]) return ['void_transaction', 'private', () => this.void(decodeURIComponent(tx[1]))];
    return null;
  }

  private tokenize(b: any): [number, unknown] {
    const pan = String(b.number ?? '');
    const errors: Record<string, string[]> = {};
    if (!/^\d{12,19}$/.test(pan) || !luhn(pan)) errors.number = ['Número de tarjeta inválido'];
    if (!/^\d{3,4}$/.test(String(b.cvc ?? ''))) errors.cvc = ['CVC inválido'];
    if (!/^(0[1-9]|1[0-2])$/.test(String(b.exp_month ?? ''))) errors.exp_month = ['Mes inválido'];
    if (!/^\d{2}$/.test(String(b.exp_year ?? ''))) errors.exp_year = ['Año inválido'];
    if (typeof b.card_holder !== 'string' || b.card_holder.length < 5) errors.card_holder = ['Debe tener al menos 5 caracteres'];
    if (Object.keys(errors).length) return this.invalid(errors);
    const id = `tok_test_${randomBytes(5).toString('hex')}_${randomBytes(8).toString('hex')}`;
    this.tokens.set(id, { pan, used: false });
    return [
      201,
      { status: 'CREATED', data: { id, brand: pan.startsWith('4') ? 'VISA' : 'MASTERCARD', last_four: pan.slice(-4), card_holder: b.card_holder } },
    ];
  }

  private paymentSource(b: any): [number, unknown] {
    const token = this.tokens.get(String(b.token));
    const errors: Record<string, string[]> = {};
    if (b.type !== 'CARD') errors.type = ['Tipo inválido'];
    if (!token || token.used) errors.token = ['Token inválido o ya usado'];
    if (b.acceptance_token !== this.acceptanceToken) errors.acceptance_token = ['Token de aceptación inválido'];
    if (typeof b.customer_email !== 'string' || !b.customer_email.includes('@')) errors.customer_email = ['Correo inválido'];
    if (Object.keys(errors).length) return this.invalid(errors);
    token!.used = true;
    const id = this.nextSource++;
    this.sources.set(id, { pan: token!.pan, email: b.customer_email });
    return [
      201,
      { data: { id, type: 'CARD', token: b.token, status: 'AVAILABLE', customer_email: b.customer_email, public_data: { type: 'CARD' } } },
    ];
  }

  private createTransaction(b: any): [number, unknown] {
    const errors: Record<string, string[]> = {};
    if (!Number.isSafeInteger(b.amount_in_cents) || b.amount_in_cents <= 0) errors.amount_in_cents = ['Debe ser un entero positivo'];
    if (b.currency !== 'COP') errors.currency = ['Moneda no soportada'];
    if (typeof b.reference !== 'string' || !b.reference) errors.reference = ['Requerida'];
    else if ([...this.transactions.values()].some((t) => t.reference === b.reference)) errors.reference = ['La referencia ya ha sido usada'];
    if (!Object.keys(errors).length && b.signature !== integritySignature(b.reference, b.amount_in_cents, b.currency, this.integritySecret)) {
      errors.signature = ['La firma es inválida'];
    }
    const source = this.sources.get(Number(b.payment_source_id));
    if (!source) errors.payment_source_id = ['Fuente de pago inválida'];
    else if (source.email !== b.customer_email) errors.customer_email = ['No corresponde a la fuente de pago'];
    const installments = b.payment_method?.installments;
    if (!Number.isInteger(installments) || installments < 1 || installments > 36) errors['payment_method.installments'] = ['Entre 1 y 36'];
    if (Object.keys(errors).length) return this.invalid(errors);
    const declines = source!.pan === '4111111111111111';
    const tx: StoredTx = {
      id: `${1000 + this.transactions.size}-${Date.now()}-${randomBytes(3).toString('hex')}`,
      reference: b.reference,
      amount_in_cents: b.amount_in_cents,
      currency: b.currency,
      status: 'PENDING',
      status_message: null,
      payment_method_type: 'CARD',
      payment_method: { type: 'CARD', installments },
      payment_source_id: Number(b.payment_source_id),
      customer_email: b.customer_email,
      created_at: new Date().toISOString(),
      finalized_at: null,
      finalStatus: declines ? 'DECLINED' : 'APPROVED',
      finalMessage: declines ? 'Fondos insuficientes' : null,
    };
    this.transactions.set(tx.id, tx);
    if (this.opts.autoFinalizeMs != null) setTimeout(() => void this.finalize(tx.id).catch(() => {}), this.opts.autoFinalizeMs).unref();
    return [201, { data: this.public(tx) }];
  }

  private public(tx: StoredTx): WompiTransaction {
    const { finalStatus: _f, finalMessage: _m, ...rest } = tx;
    return rest;
  }

  private search(url: URL): [number, unknown] {
    const reference = url.searchParams.get('reference');
    if (!reference) return this.invalid({ reference: ['Requerida'] });
    return [200, { data: [...this.transactions.values()].filter((t) => t.reference === reference).map((t) => this.public(t)), meta: {} }];
  }

  private read(id: string): [number, unknown] {
    const tx = this.transactions.get(id);
    return tx ? [200, { data: this.public(tx) }] : [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }];
  }

  private void(id: string): [number, unknown] {
    const tx = this.transactions.get(id);
    if (!tx) return [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }];
    if (tx.payment_method_type !== 'CARD' || tx.status !== 'APPROVED')
      return this.invalid({ status: ['Solo se anulan transacciones con tarjeta aprobadas'] });
    tx.status = 'VOIDED';
    return [201, { data: { transaction: this.public(tx) } }];
  }
}
