import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { FakeHttpService } from './fake-http.ts';
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
 * Faults: `failNext(operation, fault)`: `timeout` (never answers, does nothing), `5xx`,
 * `lose_answer` (does it, then drops the connection), `hold` (does it, then keeps the caller
 * waiting until the fake closes: a process killed mid-call), `slow` (does it, answers after
 * `slowMs`).
 */

export type { FakeFault } from './fake-http.ts';

export interface FakeWompiOptions {
  publicKey?: string;
  privateKey?: string;
  eventsSecret?: string;
  integritySecret?: string;
  /** When a PENDING transaction becomes final by itself (ms after its creation); null: only `finalize`. */
  autoFinalizeMs?: number | null;
  /** A merchant still on the older acceptance path: `GET /merchants/{public_key}` answers, `/merchants/info` is 404. */
  legacyMerchantsPath?: boolean;
}

/** A way the fake answers a void (`voidBehaviour`): as documented, refused (422), or a 201 with an empty body. */
export type VoidBehaviour = 'void' | 'refuse' | 'empty_201';

interface StoredTx extends WompiTransaction {
  finalStatus: WompiStatus;
  finalMessage: string | null;
  redirect_url?: string | null;
  /** Reads so far: a PSE bank URL appears from the first read after creation (the provider processes it asynchronously). */
  reads: number;
}

const PSE_ID_TYPES = ['CC', 'CE', 'NIT', 'PP', 'TI', 'DNI', 'RG', 'OTHER'];

const luhn = (pan: string) => {
  let sum = 0;
  for (let i = 0; i < pan.length; i++) {
    let d = Number(pan[pan.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
};

export class FakeWompi extends FakeHttpService {
  readonly publicKey: string;
  readonly privateKey: string;
  readonly eventsSecret: string;
  readonly integritySecret: string;
  /** Every presigned contract token issued (single-use): its kind and whether a call has spent it. */
  readonly contractTokens = new Map<string, { kind: 'terms' | 'personal'; used: boolean }>();
  /** The permalinks of the merchant's two contracts. */
  readonly termsPermalink = 'https://wompi.example/legal/terminos-usuario.pdf';
  readonly personalDataPermalink = 'https://wompi.example/legal/autorizacion-datos-personales.pdf';
  /** The next transaction creates are refused with these field messages (a 422 the provider gives for data it will never take). */
  refuseCreates: Record<string, string[]> | null = null;
  /** Every body the provider received, by operation (what the connector sent). */
  readonly bodies: { operation: string; body: Record<string, any> }[] = [];
  /** How the next voids are answered. */
  voidBehaviour: VoidBehaviour = 'void';
  /** Card tokenizations that came from a browser (an Origin header, after a CORS preflight): their last four digits. */
  readonly browserTokenizations: { origin: string; lastFour: string }[] = [];
  /** The provider's clock (event timestamps): a test with a test clock sets it to that clock. */
  now: () => Date = () => new Date();
  /** Where events are posted (the connector's events URL); set by the test. */
  eventsUrl: string | null = null;
  /** Posts events to a function instead of a URL (an in-process app). */
  deliver: ((event: WompiEvent) => Promise<number>) | null = null;
  readonly transactions = new Map<string, StoredTx>();
  readonly calls: { operation: string; key: 'public' | 'private' | 'none' | 'bad'; status: number }[] = [];
  private readonly tokens = new Map<string, { pan: string; used: boolean }>();
  private readonly sources = new Map<number, { pan: string; email: string }>();
  private nextSource = 1000;
  /** PSE institutions: real ACH codes (the catalogue's) and the provider's sandbox pair ("1" approves, "2" declines). */
  institutions = [
    { financial_institution_code: '0', financial_institution_name: 'A continuación seleccione su banco' },
    { financial_institution_code: '1', financial_institution_name: 'Banco que aprueba' },
    { financial_institution_code: '2', financial_institution_name: 'Banco que rechaza' },
    { financial_institution_code: '1007', financial_institution_name: 'BANCOLOMBIA' },
    { financial_institution_code: '1051', financial_institution_name: 'BANCO DAVIVIENDA' },
    { financial_institution_code: '1001', financial_institution_name: 'BANCO DE BOGOTA' },
  ];

  constructor(private readonly opts: FakeWompiOptions = {}) {
    super();
    this.publicKey = opts.publicKey ?? `pub_test_${randomBytes(8).toString('hex')}`;
    this.privateKey = opts.privateKey ?? `prv_test_${randomBytes(8).toString('hex')}`;
    this.eventsSecret = opts.eventsSecret ?? `test_events_${randomBytes(8).toString('hex')}`;
    this.integritySecret = opts.integritySecret ?? `test_integrity_${randomBytes(8).toString('hex')}`;
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
      timestamp: Math.floor(this.now().getTime() / 1000),
      sent_at: this.now().toISOString(),
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

  /** Issues a fresh pair of single-use contract tokens (what GET /merchants/info answers). */
  private merchant(): [number, unknown] {
    const terms = `eyJ.terms.${randomBytes(8).toString('hex')}`;
    const personal = `eyJ.personal.${randomBytes(8).toString('hex')}`;
    this.contractTokens.set(terms, { kind: 'terms', used: false });
    this.contractTokens.set(personal, { kind: 'personal', used: false });
    return [
      200,
      {
        data: {
          id: 1,
          name: 'Comercio de prueba',
          public_key: this.publicKey,
          presigned_acceptance: { acceptance_token: terms, permalink: this.termsPermalink, type: 'END_USER_POLICY' },
          presigned_personal_data_auth: { acceptance_token: personal, permalink: this.personalDataPermalink, type: 'PERSONAL_DATA_AUTH' },
        },
      },
    ];
  }

  /** Both contract tokens, each issued, of its kind and not used yet; spent when the call is accepted (`spend`). */
  private contractErrors(b: any, errors: Record<string, string[]>): () => void {
    const terms = this.contractTokens.get(String(b.acceptance_token ?? ''));
    const personal = this.contractTokens.get(String(b.accept_personal_auth ?? ''));
    if (!terms || terms.kind !== 'terms' || terms.used) errors.acceptance_token = ['Token de aceptación inválido o ya usado'];
    if (!personal || personal.kind !== 'personal' || personal.used)
      errors.accept_personal_auth = ['Autorización de datos personales inválida o ya usada'];
    return () => {
      terms!.used = true;
      personal!.used = true;
    };
  }

  private keyKind(req: http.IncomingMessage): 'public' | 'private' | 'none' | 'bad' {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    if (!m) return 'none';
    if (m[1] === this.publicKey) return 'public';
    if (m[1] === this.privateKey) return 'private';
    return 'bad';
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url0 = new URL(req.url ?? '/', 'http://fake');
    // A browser tokenizes cards itself (the public key, cross-origin): the tokens endpoint answers CORS.
    const cors: Record<string, string> = url0.pathname === '/v1/tokens/cards' && req.headers.origin ? { 'access-control-allow-origin': '*' } : {};
    if (req.method === 'OPTIONS') {
      if (url0.pathname !== '/v1/tokens/cards') return void res.writeHead(404).end();
      return void res
        .writeHead(204, {
          ...cors,
          'access-control-allow-origin': '*',
          'access-control-allow-methods': 'POST',
          'access-control-allow-headers': 'authorization, content-type',
          'access-control-max-age': '600',
        })
        .end();
    }
    this.corsHeaders = cors;
    if (cors['access-control-allow-origin']) this.origin = String(req.headers.origin);
    else this.origin = null;
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
    const fault = this.nextFault(operation);
    if (fault === 'timeout') return; // never answers
    if (fault === '5xx') return this.reply(res, operation, key, 502, { error: { type: 'BAD_GATEWAY' } });
    this.bodies.push({ operation, body });
    const [status, answer] = run(body, url, path, req);
    if (await this.answers(fault, res)) this.reply(res, operation, key, status, answer);
    else this.calls.push({ operation, key, status });
  }

  private corsHeaders: Record<string, string> = {};
  private origin: string | null = null;

  private reply(res: http.ServerResponse, operation: string, key: FakeWompi['calls'][number]['key'], status: number, body: unknown): void {
    this.calls.push({ operation, key, status });
    if (body === undefined) return void res.writeHead(status, { ...this.corsHeaders }).end();
    res.writeHead(status, { 'content-type': 'application/json', ...this.corsHeaders }).end(JSON.stringify(body));
  }

  private invalid(messages: Record<string, string[]>): [number, unknown] {
    return [422, { error: { type: 'INPUT_VALIDATION_ERROR', messages } }];
  }

  private route(
    method: string,
    path: string,
  ): [string, 'public' | 'private', (body: any, url: URL, path: string, req: http.IncomingMessage) => [number, unknown]] | null {
    // The current form: the public key in a header. The older path form answers 404 (switched off), unless legacy.
    if (method === 'GET' && path === '/merchants/info') {
      return [
        'merchant',
        'public',
        (_b, _u, _p, req) =>
          !this.opts.legacyMerchantsPath && req.headers['x-merchant-public-key'] === this.publicKey
            ? this.merchant()
            : [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }],
      ];
    }
    if (method === 'GET' && path === `/merchants/${this.publicKey}`) {
      return [
        'merchant',
        'public',
        () =>
          this.opts.legacyMerchantsPath ? this.merchant() : [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }],
      ];
    }
    if (method === 'GET' && path === '/pse/financial_institutions') return ['pse_institutions', 'public', () => [200, { data: this.institutions }]];
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
    if (this.origin) this.browserTokenizations.push({ origin: this.origin, lastFour: pan.slice(-4) });
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
    const spend = this.contractErrors(b, errors);
    if (typeof b.customer_email !== 'string' || !b.customer_email.includes('@')) errors.customer_email = ['Correo inválido'];
    if (Object.keys(errors).length) return this.invalid(errors);
    spend();
    token!.used = true;
    const id = this.nextSource++;
    this.sources.set(id, { pan: token!.pan, email: b.customer_email });
    return [
      201,
      { data: { id, type: 'CARD', token: b.token, status: 'AVAILABLE', customer_email: b.customer_email, public_data: { type: 'CARD' } } },
    ];
  }

  private createTransaction(b: any): [number, unknown] {
    if (this.refuseCreates) return this.invalid(this.refuseCreates);
    const errors: Record<string, string[]> = {};
    if (!Number.isSafeInteger(b.amount_in_cents) || b.amount_in_cents <= 0) errors.amount_in_cents = ['Debe ser un entero positivo'];
    if (b.currency !== 'COP') errors.currency = ['Moneda no soportada'];
    if (typeof b.reference !== 'string' || !b.reference) errors.reference = ['Requerida'];
    else if ([...this.transactions.values()].some((t) => t.reference === b.reference)) errors.reference = ['La referencia ya ha sido usada'];
    if (!Object.keys(errors).length && b.signature !== integritySignature(b.reference, b.amount_in_cents, b.currency, this.integritySecret)) {
      errors.signature = ['La firma es inválida'];
    }
    if (typeof b.customer_email !== 'string' || !b.customer_email.includes('@')) errors.customer_email = ['Correo inválido'];
    const type = b.payment_source_id !== undefined ? 'CARD' : String(b.payment_method?.type ?? '');
    // A transaction on a saved source needs no contract tokens (they were given with the source); any other needs both, fresh.
    const spend = b.payment_source_id === undefined ? this.contractErrors(b, errors) : () => {};
    let final: { status: WompiStatus; message: string | null } = { status: 'APPROVED', message: null };
    let method: Record<string, unknown>;
    const bySource = b.payment_source_id !== undefined;
    if (type === 'CARD') {
      let pan: string | undefined;
      if (bySource) {
        const source = this.sources.get(Number(b.payment_source_id));
        if (!source) errors.payment_source_id = ['Fuente de pago inválida'];
        else if (source.email !== b.customer_email) errors.customer_email = ['No corresponde a la fuente de pago'];
        pan = source?.pan;
      } else {
        // A card paid once: its single-use token.
        const token = this.tokens.get(String(b.payment_method?.token));
        if (!token || token.used) errors['payment_method.token'] = ['Token inválido o ya usado'];
        else if (!Object.keys(errors).length) token.used = true;
        pan = token?.pan;
      }
      const installments = b.payment_method?.installments;
      if (!Number.isInteger(installments) || installments < 1 || installments > 36) errors['payment_method.installments'] = ['Entre 1 y 36'];
      if (pan === '4111111111111111') final = { status: 'DECLINED', message: 'Fondos insuficientes' };
      // A merchant-initiated charge on a saved card without the recurrence flag: the issuer declines it.
      if (bySource && b.recurrent !== true)
        final = { status: 'DECLINED', message: 'Transacción no autorizada por el emisor (sin indicador de recurrencia)' };
      method = { type: 'CARD', installments };
    } else if (type === 'PSE') {
      const m = b.payment_method;
      if (m.user_type !== 0 && m.user_type !== 1) errors['payment_method.user_type'] = ['Debe ser 0 o 1'];
      if (!PSE_ID_TYPES.includes(m.user_legal_id_type)) errors['payment_method.user_legal_id_type'] = ['Tipo de documento inválido'];
      if (typeof m.user_legal_id !== 'string' || !/^[0-9A-Za-z]{3,20}$/.test(m.user_legal_id))
        errors['payment_method.user_legal_id'] = ['Documento inválido'];
      if (!this.institutions.some((i) => i.financial_institution_code === m.financial_institution_code)) {
        errors['payment_method.financial_institution_code'] = ['Institución financiera inválida'];
      }
      if (typeof m.payment_description !== 'string' || !m.payment_description || m.payment_description.length > 30) {
        errors['payment_method.payment_description'] = ['Entre 1 y 30 caracteres'];
      }
      if (typeof b.redirect_url !== 'string' || !/^https?:\/\//.test(b.redirect_url)) errors.redirect_url = ['URL inválida'];
      if (typeof b.customer_data?.full_name !== 'string' || !b.customer_data.full_name) errors['customer_data.full_name'] = ['Requerido'];
      if (typeof b.customer_data?.phone_number !== 'string' || !/^57\d{10}$/.test(b.customer_data.phone_number))
        errors['customer_data.phone_number'] = ['Celular con indicativo, por ejemplo 573001234567'];
      // The provider's sandbox: institution "2" declines; the rest approve unless told otherwise.
      if (m.financial_institution_code === '2') final = { status: 'DECLINED', message: 'Transacción rechazada por el banco' };
      method = {
        type: 'PSE',
        user_type: m.user_type,
        user_legal_id_type: m.user_legal_id_type,
        user_legal_id: m.user_legal_id,
        financial_institution_code: m.financial_institution_code,
        payment_description: m.payment_description,
        extra: null,
      };
    } else if (type === 'NEQUI') {
      const phone = String(b.payment_method?.phone_number ?? '');
      if (!/^3\d{9}$/.test(phone)) errors['payment_method.phone_number'] = ['Número de celular inválido'];
      // The provider's sandbox numbers: 3991111111 approves, 3992222222 declines, any other errs.
      if (phone === '3992222222') final = { status: 'DECLINED', message: 'Transacción rechazada' };
      else if (phone !== '3991111111') final = { status: 'ERROR', message: 'Número no registrado en Nequi' };
      method = { type: 'NEQUI', phone_number: phone };
    } else {
      errors['payment_method.type'] = ['Método de pago no soportado'];
      method = {};
    }
    if (Object.keys(errors).length) return this.invalid(errors);
    spend();
    const tx: StoredTx = {
      id: `${1000 + this.transactions.size}-${Date.now()}-${randomBytes(3).toString('hex')}`,
      reference: b.reference,
      amount_in_cents: b.amount_in_cents,
      currency: b.currency,
      status: 'PENDING',
      status_message: null,
      payment_method_type: type,
      payment_method: method as WompiTransaction['payment_method'],
      payment_source_id: bySource ? Number(b.payment_source_id) : null,
      customer_email: b.customer_email,
      redirect_url: b.redirect_url ?? null,
      created_at: new Date().toISOString(),
      finalized_at: null,
      finalStatus: final.status,
      finalMessage: final.message,
      reads: 0,
    };
    this.transactions.set(tx.id, tx);
    if (this.opts.autoFinalizeMs != null) setTimeout(() => void this.finalize(tx.id).catch(() => {}), this.opts.autoFinalizeMs).unref();
    return [201, { data: this.public(tx) }];
  }

  private public(tx: StoredTx): WompiTransaction {
    const { finalStatus: _f, finalMessage: _m, reads: _r, ...rest } = tx;
    return rest;
  }

  /**
   * A transaction that appears at the provider under `reference` without our create answering (a
   * create that landed after we stopped waiting), in `status`.
   */
  plant(reference: string, amountInCents: number, type: 'PSE' | 'NEQUI' | 'CARD', status: WompiStatus): StoredTx {
    const tx: StoredTx = {
      id: `${1000 + this.transactions.size}-${Date.now()}-${randomBytes(3).toString('hex')}`,
      reference,
      amount_in_cents: amountInCents,
      currency: 'COP',
      status,
      status_message: null,
      payment_method_type: type,
      payment_method: { type },
      payment_source_id: null,
      customer_email: 'payer@example.com',
      created_at: this.now().toISOString(),
      finalized_at: status === 'PENDING' ? null : this.now().toISOString(),
      finalStatus: status,
      finalMessage: null,
      reads: 0,
    };
    this.transactions.set(tx.id, tx);
    return tx;
  }

  /** The PSE bank page of a transaction (what async_payment_url points at). */
  bankPageUrl(id: string): string {
    return `${this.url.replace(/\/v1$/, '')}/pse/bank/${encodeURIComponent(id)}`;
  }

  private search(url: URL): [number, unknown] {
    const reference = url.searchParams.get('reference');
    if (!reference) return this.invalid({ reference: ['Requerida'] });
    return [200, { data: [...this.transactions.values()].filter((t) => t.reference === reference).map((t) => this.public(t)), meta: {} }];
  }

  private read(id: string): [number, unknown] {
    const tx = this.transactions.get(id);
    if (!tx) return [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }];
    tx.reads++;
    if (tx.payment_method_type === 'PSE' && tx.status === 'PENDING' && tx.payment_method && !tx.payment_method.extra) {
      tx.payment_method = { ...tx.payment_method, extra: { async_payment_url: this.bankPageUrl(tx.id) } };
    }
    return [200, { data: this.public(tx) }];
  }

  private void(id: string): [number, unknown] {
    const tx = this.transactions.get(id);
    if (!tx) return [404, { error: { type: 'NOT_FOUND_ERROR', reason: 'La entidad solicitada no existe' } }];
    if (tx.payment_method_type !== 'CARD' || tx.status !== 'APPROVED')
      return this.invalid({ status: ['Solo se anulan transacciones con tarjeta aprobadas'] });
    if (this.voidBehaviour === 'refuse') return this.invalid({ transaction: ['La transacción ya no puede ser anulada'] });
    tx.status = 'VOIDED';
    if (this.voidBehaviour === 'empty_201') return [201, undefined];
    return [201, { data: { transaction: this.public(tx) } }];
  }
}
