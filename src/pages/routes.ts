import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../platform/context.ts';
import { ApiError } from '../platform/errors/api-error.ts';
import { toApiError } from '../platform/http/errors.ts';
import { clientBucket, MemoryRateLimiter, PostgresRateLimiter, type RateLimiter } from '../platform/rate-limit/rate-limit.ts';
import { randomToken } from '../platform/ids.ts';
import { listBanks, findBank, findBanklinkBank } from '../modules/banks/service.ts';
import { settleIntent, startIntent } from '../modules/payments/intents.ts';
import { maxTransactionCop, type IntentRow, type PaymentRow } from '../modules/payments/queries.ts';
import type { PaymentMethod } from '../modules/payments/tables.ts';
import { FormTokens } from './csrf.ts';
import { money, STATUS_NAMES, when } from './format.ts';
import { sendPage } from './html.ts';
import { declinedSince, findByReference, findIntent, findPaymentForPayer, recentIntents, type PayerView } from '../modules/payments/payer-reads.ts';
import { scopeOf } from './lookup.ts';
import { emvcoPayload, qrSvg } from './qr.ts';
import { checkCard, holderNameError, normalisePhone, parsePesosInput, type AttemptOutcome, type FieldErrors } from './sandbox.ts';
import { applyTestScenario, sandboxCardOutcome } from '../rails/sandbox-table.ts';
import { CardRefused, QrRegistrationFailed, type DebitRequest, type MoneyRail, type RailPayer, type RailScope } from '../rails/index.ts';
import type { DebitPort, ProviderConsent } from '../rails/debit.ts';
import { CARD_SCRIPT, CARD_SCRIPT_PATH } from './card-script.ts';
import { runPageAttempt } from '../modules/payments/provider-attempts.ts';
import {
  attemptMinimum,
  bankPage,
  due,
  finalPage,
  isAbandonable,
  isExpired,
  messagePage,
  notFoundPage,
  payPage,
  portalPage,
  qrPage,
  testBanner,
  CARD_NEEDS_EMAIL,
  consentField,
  type CardMode,
  type PayView,
  type ShownContracts,
} from './views.ts';
import { chargePages } from './charge-pages.ts';
import { planPages } from './plan-pages.ts';
import { connectPages } from './connect-pages.ts';
import { CHARGE_ID } from '../modules/charges/queries.ts';

/**
 * The payer pages (docs/pages.md): the hosted payment page at `payment_link` (/pay/{id}), its
 * sandbox bank and QR pages, and the payment portal (/portal). Server-rendered Spanish HTML, no
 * API key: the payment found by its id is the scope. Every POST is form-encoded and carries a
 * signed form token; attempts go through the payments module's startIntent/settleIntent.
 */

const PAYABLE: readonly PaymentRow['status'][] = ['pending', 'declined', 'partially_paid', 'in_progress'];
/** Brake on card testing: declined attempts of one payment per hour before the page refuses more. */
export const DECLINES_PER_HOUR = 10;

type Body = Record<string, unknown>;
const field = (body: unknown, name: string): string => {
  const v = (body as Body | undefined)?.[name];
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
};

/** Form bodies (application/x-www-form-urlencoded), only in the pages' scope; first value wins. */
function addFormParser(scope: FastifyInstance): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16_384 }, (_req, body, done) => {
    const out: Record<string, string> = {};
    for (const [k, v] of new URLSearchParams(body as string)) if (!(k in out)) out[k] = v;
    done(null, out);
  });
}

function pageErrors(scope: FastifyInstance): void {
  scope.setErrorHandler((error: Error & { statusCode?: number; code?: string }, req, reply) => {
    // A coded error keeps its status (a JSON body the platform parser refused is a 400, not a
    // 500); a client error Fastify raised keeps its own; the rest as the API maps it (503, 500).
    const coded = error instanceof ApiError ? error : null;
    const clientStatus = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : null;
    const mapped = coded ?? (clientStatus === null ? toApiError(error) : null);
    const status = coded?.status ?? clientStatus ?? mapped!.status;
    if (status >= 500) req.log.error({ err: error }, 'payer page failed');
    if (mapped?.headers) reply.headers(mapped.headers);
    else if (status === 503) reply.header('retry-after', '1');
    const text =
      status === 413
        ? 'El formulario es demasiado grande.'
        : status === 415
          ? 'El formulario llegó en un formato que no reconocemos. Vuelve a la página de pago e inténtalo de nuevo.'
          : status === 429
            ? 'Recibimos demasiadas solicitudes seguidas desde tu conexión. Espera un momento e inténtalo de nuevo. No se hizo ningún cobro nuevo.'
            : status === 503
              ? 'El servicio no está disponible en este momento. No se hizo ningún cobro nuevo; intenta de nuevo en unos minutos.'
              : status < 500
                ? 'La solicitud no es válida.'
                : 'Algo salió mal de nuestro lado. No se hizo ningún cobro nuevo; intenta de nuevo en unos minutos.';
    const heading =
      status === 429
        ? 'Demasiadas solicitudes'
        : status === 503
          ? 'Servicio no disponible'
          : status >= 500
            ? 'Algo salió mal'
            : 'No pudimos procesar la solicitud';
    return sendPage(reply, status, messagePage({ title: 'Error', heading, text }));
  });
  scope.setNotFoundHandler((_req, reply) => sendPage(reply, 404, notFoundPage()));
}

/** The payer pages' rate limit counts requests per client address in one-minute windows. */
export const PAGES_RATE_WINDOW_MS = 60_000;

/** The bucket of a client address (platform/rate-limit): shared with the API's failed-key limit. */
export { clientBucket };

/**
 * Every payer page request counts against its client address (PAGES_RATE_LIMIT per minute,
 * docs/pages.md): the pages need no key, so the address is what there is to limit.
 */
function pageRateLimit(scope: FastifyInstance, deps: AppDeps, limiter: RateLimiter): void {
  scope.addHook('onRequest', async (req) => {
    const decision = await limiter.hit(`page:${clientBucket(req.ip)}`, deps.config.pagesRateLimit, PAGES_RATE_WINDOW_MS, Date.now());
    if (!decision.allowed) throw new ApiError('rate_limited', { headers: { 'retry-after': String(decision.retryAfterSeconds) } });
  });
}

/** How long a PSE session opened from a payment page is meant to last (the provider ends it sooner). */
const PAGE_BANK_SESSION_MS = 30 * 60_000;

const PAYER_DOCUMENT_TYPES = ['CC', 'CE', 'NIT', 'PASSPORT'];

/** The payer's identity a PSE bank session needs, as the form's field errors. */
function identityErrors(values: Record<string, string>): FieldErrors {
  const errors: FieldErrors = {};
  if (values.full_name.length < 3) errors.full_name = 'Escribe tu nombre completo o el de tu empresa.';
  if (!['natural', 'company'].includes(values.person_type)) errors.person_type = 'Elige si pagas como persona o como empresa.';
  if (!PAYER_DOCUMENT_TYPES.includes(values.document_type)) errors.document_type = 'Elige el tipo de documento.';
  if (!/^[0-9A-Za-z-]{4,20}$/.test(values.document_number)) errors.document_number = 'Escribe el número de documento, sin puntos.';
  return errors;
}

/** A connector that files payments under the payer's e-mail, on a payment that has none. */
const NEEDS_EMAIL = CARD_NEEDS_EMAIL;

/** A PSE payer's mobile, as the bank form asks it when the payment has none. */
const PHONE_ERROR = 'Escribe tu número de celular colombiano de 10 dígitos, por ejemplo 300 123 4567.';

const CONSENT_ERROR = 'Para pagar debes aceptar los términos y autorizar el tratamiento de tus datos personales.';
const CONSENT_CHANGED = 'Los documentos del medio de pago cambiaron. Léelos de nuevo y acéptalos para pagar.';

/** The payer pages' names of providers (a rail's `name`). */
const PROVIDER_NAMES: Record<string, string> = { wompi: 'Wompi' };

/** How long a page shows the provider's contracts it read before reading them again (a POST always reads them fresh). */
const CONTRACTS_TTL_MS = 60_000;

type ContractsOf = () => Promise<{ permalink: string; personalDataPermalink: string }>;

/** Where a method's provider contracts come from: the provider (its rail's name) and the read. */
interface ContractsSource {
  provider: string;
  read: ContractsOf;
}

/**
 * What a payment's page may offer now (live: what connectors serve) and how: the methods, the
 * card form's mode, and the methods whose provider's contracts the payer accepts first.
 */
interface MethodPlan {
  available: PaymentMethod[];
  card: CardMode | null;
  consent: Map<PaymentMethod, ContractsSource>;
}

/** Contract permalinks a page may link: absolute https URLs (they come from the provider). */
const linkable = (url: string) => /^https:\/\/[^\s"'<>]+$/i.test(url);

export async function payerPages(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const tokens = new FormTokens(deps.config.pagesSecret);
  const limiter: RateLimiter = deps.database.engine === 'postgres' ? new PostgresRateLimiter(deps.database) : new MemoryRateLimiter();
  const charges = chargePages(deps, tokens);
  const db = () => deps.database.db;
  const now = () => deps.clock.now();
  const railScope = (payment: PaymentRow): RailScope => ({ companyId: payment.company_id, environment: payment.environment });

  /**
   * How a card rail takes cards on this page: a connector that tokenizes in the payer's browser
   * gets the browser form (the card never reaches Recaudo); the sandbox (test payments) keeps the
   * server-side form. A live card rail without browser tokenization is not offered: live card
   * data never comes here.
   */
  function cardModeOf(payment: PaymentRow, rail: DebitPort): CardMode | null {
    const tokenization = rail.browserTokenization?.();
    if (tokenization) {
      try {
        const origin = new URL(tokenization.url).origin;
        if (/^https?:\/\//.test(origin)) return { mode: 'browser', url: tokenization.url, publicKey: tokenization.publicKey, origin };
      } catch {
        /* not a URL: not offered */
      }
      return null;
    }
    return payment.environment === 'test' ? { mode: 'server' } : null;
  }

  /**
   * The contracts a payer accepts before paying through a provider's rail: the rail's own, or —
   * a provider's contracts are its merchant account's, the same for every method — its card
   * rail's. Null when the provider offers none to show (the method is then not offered).
   */
  async function contractsSourceOf(payment: PaymentRow, rail: { name: string; contracts?: ContractsOf }): Promise<ContractsSource | null> {
    const provider = PROVIDER_NAMES[rail.name] ?? rail.name;
    if (rail.contracts) return { provider, read: () => rail.contracts!() };
    const scope = railScope(payment);
    if (!(await deps.rails.serves(scope, 'card'))) return null;
    const card = await deps.rails.money(scope, 'card');
    if (card.name !== rail.name || !card.contracts) return null;
    return { provider, read: () => card.contracts!() };
  }

  /** The payment's methods this environment's rails serve (live: those with a connector), and how the page takes them. */
  async function planMethods(payment: PaymentRow): Promise<MethodPlan> {
    const scope = railScope(payment);
    const plan: MethodPlan = { available: [], card: null, consent: new Map() };
    const served = await Promise.all(payment.allows.map((m) => deps.rails.serves(scope, m)));
    for (const method of payment.allows.filter((_m, i) => served[i])) {
      const rail = (await deps.rails.money(scope, method)) as { name: string; consentRequired?: boolean; contracts?: ContractsOf };
      if (method === 'card') {
        plan.card = cardModeOf(payment, rail as DebitPort);
        if (!plan.card) continue;
      }
      // A provider that files the payer's data (a connector's rail) has its contracts accepted first.
      if (rail.consentRequired) {
        const source = await contractsSourceOf(payment, rail);
        if (!source) continue;
        plan.consent.set(method, source);
      }
      plan.available.push(method);
    }
    return plan;
  }

  const contractsKept = new Map<string, { at: number; contracts: ShownContracts }>();
  const contractsKey = (payment: PaymentRow, source: ContractsSource) => `${payment.company_id}:${payment.environment}:${source.provider}`;

  /** The provider's contracts read now (a POST: what the payer accepts must be what the provider has). Throws when unreadable. */
  async function freshContracts(payment: PaymentRow, source: ContractsSource): Promise<ShownContracts> {
    const read = await source.read();
    if (!linkable(read.permalink) || !linkable(read.personalDataPermalink))
      throw new Error(`${source.provider}: contract permalinks are not https URLs`);
    const contracts = { provider: source.provider, permalink: read.permalink, personalDataPermalink: read.personalDataPermalink };
    contractsKept.set(contractsKey(payment, source), { at: Date.now(), contracts });
    if (contractsKept.size > 10_000) contractsKept.delete(contractsKept.keys().next().value!);
    return contracts;
  }

  /** The contracts a page shows: read at most once a minute per company; null when the provider cannot be read now. */
  async function shownContracts(payment: PaymentRow, plan: MethodPlan): Promise<ShownContracts | null> {
    const source = plan.consent.values().next().value;
    if (!source) return null;
    const kept = contractsKept.get(contractsKey(payment, source));
    if (kept && Date.now() - kept.at < CONTRACTS_TTL_MS) return kept.contracts;
    try {
      return await freshContracts(payment, source);
    } catch (error) {
      deps.logger.warn({ err: error, company_id: payment.company_id }, 'payer page: the provider contracts could not be read');
      return null;
    }
  }

  /**
   * The payer's acceptance of the provider's contracts, as a method form sent it (docs/pages.md
   * "Consent"): the box ticked and the documents shown still the provider's. Returns what the
   * attempt records (null: a method without a provider), or the form error. The fresh read that
   * compares them is the provider's; when it fails the page answers 503 and nothing is attempted.
   */
  async function acceptedConsent(
    payment: PaymentRow,
    plan: MethodPlan,
    method: PaymentMethod,
    body: unknown,
  ): Promise<{ consent: ProviderConsent | null; error: string | null }> {
    const source = plan.consent.get(method);
    if (!source) return { consent: null, error: null };
    if (field(body, 'consent') !== '1') return { consent: null, error: CONSENT_ERROR };
    let current: ShownContracts;
    try {
      current = await freshContracts(payment, source);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      deps.logger.warn({ err: error, company_id: payment.company_id }, 'payer page: the provider contracts could not be read');
      throw new ApiError('service_unavailable', { message: 'The provider’s contracts could not be read; nothing was attempted.' });
    }
    if (field(body, 'terms_permalink') !== current.permalink || field(body, 'personal_data_permalink') !== current.personalDataPermalink) {
      return { consent: null, error: CONSENT_CHANGED };
    }
    return { consent: { permalink: current.permalink, personalDataPermalink: current.personalDataPermalink, acceptedAt: now() }, error: null };
  }

  /** The banks the payment's banklink rail takes now (a connector names its own: PSE institutions). */
  async function banksFor(payment: PaymentRow, available: PaymentMethod[]): Promise<{ id: string; name: string }[]> {
    if (!payment.allows.includes('banklink') || !available.includes('banklink')) return [];
    const rail = await deps.rails.money(railScope(payment), 'banklink');
    const banks = await listBanks(db(), { banklink: 'true', order: 'name' }, deps.config.baseUrl, rail);
    return banks.map((b) => ({ id: b.id, name: b.name }));
  }

  /** Whether the banklink rail needs the payer's identity (PSE through a connector): the form asks for it. */
  async function banklinkAsksIdentity(payment: PaymentRow, available: PaymentMethod[]): Promise<boolean> {
    if (!available.includes('banklink')) return false;
    return Boolean((await deps.rails.money(railScope(payment), 'banklink')).payerProblem);
  }

  async function openMax(payment: PaymentRow): Promise<bigint | null> {
    if (payment.amount !== null || payment.currency !== 'COP') return null;
    return (await maxTransactionCop(db(), payment.company_id)) * 100n;
  }

  /** The amount an attempt takes: what is due, or the payer's choice within the link's limits. */
  async function chooseAmount(payment: PaymentRow, input: string): Promise<{ amount: bigint | null; error: string | null }> {
    const d = due(payment);
    const variable = d === null || (payment.partial_enabled && d > attemptMinimum(payment));
    if (!variable) return { amount: d, error: null };
    if (input.trim() === '') return { amount: d, error: null };
    const parsed = parsePesosInput(input);
    if (parsed === null || parsed === 0n) return { amount: null, error: 'Escribe un monto válido, por ejemplo 50.000.' };
    const min = attemptMinimum(payment);
    const max = d ?? (await openMax(payment));
    if (parsed < min) return { amount: null, error: `El monto mínimo es ${money(min, payment.currency)}.` };
    if (max !== null && parsed > max) return { amount: null, error: `El monto máximo es ${money(max, payment.currency)}.` };
    return { amount: parsed, error: null };
  }

  async function buildView(found: PayerView, extra: Partial<PayView> & { amountInput?: string }): Promise<PayView> {
    const { payment, companyName } = found;
    const amountInput = extra.amountInput ?? '';
    const chosen = extra.chosenAmount !== undefined ? { amount: extra.chosenAmount, error: null } : await chooseAmount(payment, amountInput);
    const plan = await planMethods(payment);
    const available = plan.available;
    const banklinkIdentity = await banklinkAsksIdentity(payment, available);
    return {
      payment,
      companyName,
      now: now(),
      token: tokens.issue(payment.id, now()),
      intents: await recentIntents(db(), payment),
      flash: null,
      chosenAmount: chosen.amount,
      amountError: extra.amountError ?? chosen.error,
      amountInput,
      openMax: await openMax(payment),
      form: null,
      banks: await banksFor(payment, available),
      banklinkIdentity,
      available,
      card: plan.card,
      contracts: await shownContracts(payment, plan),
      consentMethods: [...plan.consent.keys()],
      askPhone: banklinkIdentity && !normalisePhone(payment.phone ?? ''),
      ...extra,
    };
  }

  const formOrigins = (payment: PaymentRow): string[] => {
    try {
      return payment.redirect_url ? [new URL(payment.redirect_url).origin] : [];
    } catch {
      return [];
    }
  };

  async function showPayment(reply: FastifyReply, found: PayerView, status: number, extra: Partial<PayView> & { amountInput?: string } = {}) {
    const { payment } = found;
    if (!PAYABLE.includes(payment.status) || isExpired(payment, now())) {
      const approved = (await recentIntents(db(), payment, 20)).find((i) => i.status === 'approved') ?? null;
      return sendPage(reply, 200, finalPage({ payment, companyName: found.companyName, now: now(), approvedIntent: approved }));
    }
    return sendPage(reply, status, payPage(await buildView(found, extra)), { formOrigins: formOrigins(payment) });
  }

  const paymentUrl = (payment: PaymentRow, query: Record<string, string> = {}) => {
    const q = new URLSearchParams(query).toString();
    return `/pay/${payment.id}${q ? `?${q}` : ''}`;
  };

  /** After an attempt: a completed payment goes back to the merchant; anything else to the page. */
  async function afterAttempt(reply: FastifyReply, paymentId: string, intent: IntentRow, amountInput: string) {
    deps.jobs.wake();
    const found = await findPaymentForPayer(db(), paymentId);
    const payment = found!.payment;
    if (payment.status === 'approved' && payment.redirect_url && /^https?:\/\//i.test(payment.redirect_url)) {
      const target = new URL(payment.redirect_url);
      target.searchParams.set('payment_id', payment.id);
      return reply.redirect(target.toString(), 303);
    }
    const query: Record<string, string> = { intento: intent.id };
    if (amountInput && payment.amount === null) query.monto = amountInput;
    return reply.redirect(paymentUrl(payment, query), 303);
  }

  const refused = (reply: FastifyReply, paymentId: string) =>
    sendPage(
      reply,
      403,
      messagePage({
        title: 'Formulario no válido',
        heading: 'Esta página de pago ya no es válida',
        text: 'Por seguridad, vuelve a abrir la página de pago y envía el formulario de nuevo. No se hizo ningún cobro.',
        link: { href: `/pay/${paymentId}`, label: 'Volver a la página de pago' },
      }),
    );

  /** A method whose rail this environment has no connector for (rail_not_configured): nothing is attempted. */
  const methodUnavailable = (reply: FastifyReply, found: PayerView) =>
    sendPage(
      reply,
      422,
      messagePage({
        title: 'Medio de pago no disponible',
        heading: 'Este medio de pago no está disponible',
        text: `El pago en línea por este medio aún no está habilitado para cobros reales. Comunícate con ${found.companyName} para saber cómo pagar. No se hizo ningún cobro.`,
        link: { href: `/pay/${found.payment.id}`, label: 'Volver a la página de pago' },
      }),
    );

  /**
   * What every attempt POST checks first. Returns the payment and the amount, or null when it
   * already answered (404, 403, a state page, a form error).
   */
  async function beginAttempt(
    req: FastifyRequest,
    reply: FastifyReply,
    method: PaymentMethod,
  ): Promise<{ found: PayerView; amount: bigint; amountInput: string; plan: MethodPlan } | null> {
    const { id } = req.params as { id: string };
    const found = await findPaymentForPayer(db(), id);
    if (!found) {
      sendPage(reply, 404, notFoundPage());
      return null;
    }
    if (!tokens.verify(found.payment.id, field(req.body, 'token'), now())) {
      refused(reply, found.payment.id);
      return null;
    }
    const { payment } = found;
    if (!PAYABLE.includes(payment.status) || isExpired(payment, now())) {
      reply.redirect(paymentUrl(payment), 303);
      return null;
    }
    if (!payment.allows.includes(method)) {
      reply.redirect(paymentUrl(payment), 303);
      return null;
    }
    // A live payment without a connector for the method's rail (or one this page cannot use): refused, never simulated.
    const plan = await planMethods(payment);
    if (!plan.available.includes(method)) {
      methodUnavailable(reply, found);
      return null;
    }
    if (payment.status === 'in_progress') {
      // One attempt at a time: an attempt the payer left waiting (bank page, QR) is abandoned;
      // anything else (a card still being confirmed, a rail) must finish first.
      const open = (await recentIntents(db(), payment)).find((i) => i.status === 'in_progress');
      if (!open || !isAbandonable(open)) {
        reply.redirect(paymentUrl(payment), 303);
        return null;
      }
      await settleQuietly(payment, open.id, { status: 'declined', remarks: 'CANCELLED_BY_PAYER' });
    }
    if ((await declinedSince(db(), payment, new Date(now().getTime() - 3_600_000))) >= DECLINES_PER_HOUR) {
      sendPage(
        reply,
        429,
        messagePage({
          title: 'Demasiados intentos',
          heading: 'Demasiados intentos rechazados',
          text: 'Por seguridad pausamos los pagos de este cobro durante una hora. Intenta más tarde o comunícate con la empresa.',
          link: { href: `/pay/${payment.id}`, label: 'Volver a la página de pago' },
        }),
      );
      return null;
    }
    const amountInput = field(req.body, 'amount');
    const chosen = await chooseAmount(payment, amountInput);
    if (chosen.error || chosen.amount === null) {
      await showPayment(reply, found, 422, { amountInput, amountError: chosen.error ?? 'Escribe el monto que vas a pagar.' });
      return null;
    }
    return { found, amount: chosen.amount, amountInput, plan };
  }

  async function settleQuietly(payment: PaymentRow, intentId: string, outcome: { status: 'approved' } | { status: 'declined'; remarks: string }) {
    try {
      await settleIntent(scopeOf(payment, deps), intentId, outcome);
    } catch (error) {
      // Someone settled it first (another tab, a rail): the page shows whatever won.
      if (!(error instanceof ApiError)) throw error;
    }
  }

  /** Sandbox attempts carry a sandbox network id (the payer may abandon them); a connector's get the provider's later. */
  const attemptNetworkId = (payment: PaymentRow, method: PaymentMethod) =>
    payment.environment === 'test' ? `sbx_${method}_${randomToken(16)}` : undefined;

  /** startIntent, mapping the module's refusals to the page (the state page explains them). */
  async function start(reply: FastifyReply, found: PayerView, method: PaymentMethod, amount: bigint): Promise<IntentRow | null> {
    try {
      return await startIntent(scopeOf(found.payment, deps), found.payment.id, {
        method,
        amount,
        network_id: attemptNetworkId(found.payment, method),
      });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      reply.redirect(paymentUrl(found.payment), 303);
      return null;
    }
  }

  /**
   * An attempt at a rail, through the payments module's protocol (runPageAttempt): recorded with
   * its poll (a connector's), the rail asked with a deadline, the answer saved; an answer that
   * never comes leaves the attempt in progress. The module's refusals send the payer back to the
   * payment page, which explains them.
   */
  async function attempt(
    reply: FastifyReply,
    found: PayerView,
    method: PaymentMethod,
    amount: bigint,
    rail: { poll?: unknown },
    call: (intent: IntentRow) => Promise<AttemptOutcome>,
    consent: ProviderConsent | null = null,
  ): Promise<{ intent: IntentRow; outcome: AttemptOutcome } | null> {
    const payment = found.payment;
    try {
      return await runPageAttempt(
        deps,
        railScope(payment),
        {
          paymentId: payment.id,
          method,
          amount,
          networkId: attemptNetworkId(payment, method),
          rail: method as MoneyRail,
          pollable: Boolean(rail.poll),
          consent,
        },
        call,
      );
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      reply.redirect(paymentUrl(payment), 303);
      return null;
    }
  }

  await app.register(
    async (scope) => {
      addFormParser(scope);
      pageErrors(scope);
      pageRateLimit(scope, deps, limiter);

      // The card tokenizer (card-script.ts): first-party, same origin, immutable under its versioned URL.
      const scriptVersion = new URL(CARD_SCRIPT_PATH, 'http://x').searchParams.get('v');
      scope.get('/assets/tarjeta.js', { schema: { hide: true } }, async (req, reply) =>
        reply
          .header('content-type', 'text/javascript; charset=utf-8')
          .header('x-content-type-options', 'nosniff')
          .header('cross-origin-resource-policy', 'same-origin')
          .header('cache-control', (req.query as Body).v === scriptVersion ? 'public, max-age=31536000, immutable' : 'no-cache')
          .send(CARD_SCRIPT),
      );

      scope.get('/:id', { schema: { hide: true } }, async (req, reply) => {
        const { id } = req.params as { id: string };
        // A banklink or rtkey charge's url (docs/pages.md "Charges").
        if (CHARGE_ID.test(id)) return charges.show(reply, id);
        const query = req.query as Record<string, unknown>;
        const found = await findPaymentForPayer(db(), id);
        if (!found) return sendPage(reply, 404, notFoundPage());
        const intentId = typeof query.intento === 'string' ? query.intento : '';
        const flash = intentId ? await findIntent(db(), found.payment, intentId) : null;
        const amountInput = typeof query.monto === 'string' ? query.monto.slice(0, 40) : '';
        return showPayment(reply, found, 200, { flash, amountInput });
      });

      // The sandbox bank's or the QR's answer for a banklink or rtkey charge.
      scope.post('/:id', { schema: { hide: true } }, async (req, reply) => {
        const { id } = req.params as { id: string };
        if (!CHARGE_ID.test(id)) return sendPage(reply, 404, notFoundPage());
        return charges.act(req, reply, id);
      });

      /** The card the payer's browser tokenized at the provider: only its token comes here (docs/pages.md). */
      async function payByToken(req: FastifyRequest, reply: FastifyReply, begun: NonNullable<Awaited<ReturnType<typeof beginAttempt>>>) {
        const { found, amount, amountInput, plan } = begun;
        const payment = found.payment;
        const values = { holder_name: field(req.body, 'holder_name').trim().slice(0, 100) };
        const formError = (errors: FieldErrors, general?: string) =>
          showPayment(reply, found, 422, { chosenAmount: amount, amountInput, form: { method: 'card', errors, values, general } });
        // Card data never comes here on this form: a body that carries it (a scripted post, an old
        // page) is refused without being read, and nothing is attempted.
        const body = req.body;
        if (body && typeof body === 'object' && ('card_number' in body || 'cvv' in body)) {
          return formError(
            {},
            'Por seguridad, este formulario no recibe el número de la tarjeta: tu navegador lo envía directamente al medio de pago. Vuelve a intentarlo desde esta página. No se hizo ningún cobro.',
          );
        }
        const cardToken = field(req.body, 'card_token').trim();
        const errors: FieldErrors = {};
        const holder = holderNameError(values.holder_name);
        if (holder) errors.holder_name = holder;
        if (plan.consent.has('card') && field(req.body, 'consent') !== '1') errors[consentField('card')] = CONSENT_ERROR;
        if (cardToken === '') {
          // No token: the page's script did not run (JavaScript off) or failed before the provider answered.
          return formError(
            errors,
            'Para pagar con tarjeta, tu navegador debe tener JavaScript activado: así los datos de la tarjeta van directo al medio de pago. Actívalo e intenta de nuevo, o elige otro medio de pago. No se hizo ningún cobro.',
          );
        }
        if (!/^[A-Za-z0-9_.-]{6,128}$/.test(cardToken))
          return formError(errors, 'No recibimos bien la tarjeta del medio de pago. Escríbela de nuevo. No se hizo ningún cobro.');
        if (Object.keys(errors).length) return formError(errors);
        if (!payment.email) return formError({}, NEEDS_EMAIL);
        const accepted = await acceptedConsent(payment, plan, 'card', req.body);
        if (accepted.error) return formError({ [consentField('card')]: accepted.error });
        const rail = await deps.rails.money(railScope(payment), 'card');
        const done = await attempt(
          reply,
          found,
          'card',
          amount,
          rail,
          async (intent) => {
            // The provider holds the card (its token); the sandbox's outcome class and expiry are not read by a connector.
            const answer = await rail.debit({
              reference: intent.id,
              method: 'card',
              amount,
              currency: payment.currency,
              card: { outcome_class: 'approved', exp_month: 0, exp_year: 0, token: cardToken },
              payerEmail: payment.email,
              test_scenario: payment.test_scenario,
              submittedAt: now(),
            });
            return answer.status === 'declined' ? { status: 'declined', remarks: answer.remarks } : { status: answer.status };
          },
          accepted.consent,
        );
        if (!done) return reply;
        return afterAttempt(reply, payment.id, done.intent, amountInput);
      }

      scope.post('/:id/card', { schema: { hide: true } }, async (req, reply) => {
        const begun = await beginAttempt(req, reply, 'card');
        if (!begun) return reply;
        if (begun.plan.card?.mode === 'browser') return payByToken(req, reply, begun);
        // The sandbox's form (test payments): the card is checked here and matched against the sandbox table.
        const { found, amount, amountInput, plan } = begun;
        const values = {
          card_number: field(req.body, 'card_number'),
          exp_month: field(req.body, 'exp_month'),
          exp_year: field(req.body, 'exp_year'),
          cvv: field(req.body, 'cvv'),
          holder_name: field(req.body, 'holder_name'),
        };
        // Shown back on an error: never the card number or the CVV.
        const echo = {
          exp_month: values.exp_month.slice(0, 2),
          exp_year: values.exp_year.slice(0, 4),
          holder_name: values.holder_name.slice(0, 100),
        };
        const { errors, card } = checkCard(values, now());
        if (plan.consent.has('card') && field(req.body, 'consent') !== '1') errors[consentField('card')] = CONSENT_ERROR;
        if (!card || Object.keys(errors).length)
          return showPayment(reply, found, 422, { chosenAmount: amount, amountInput, form: { method: 'card', errors, values: echo } });
        const scope = railScope(found.payment);
        const rail = await deps.rails.money(scope, 'card');
        const cardError = (message: string, on = 'card_number') =>
          showPayment(reply, found, 422, {
            chosenAmount: amount,
            amountInput,
            form: { method: 'card', errors: { [on]: message }, values: echo },
          });
        // Consent before anything goes to a provider.
        const accepted = await acceptedConsent(found.payment, plan, 'card', req.body);
        if (accepted.error) return cardError(accepted.error, consentField('card'));
        // A connector that keeps cards: the card becomes the provider's single-use token first.
        let token: string | undefined;
        if (rail.tokenizeCard) {
          if (!found.payment.email) return cardError(NEEDS_EMAIL);
          try {
            token = (
              await rail.tokenizeCard({
                number: card.pan,
                cvc: values.cvv,
                expMonth: card.expMonth,
                expYear: card.expYear,
                holderName: values.holder_name,
              })
            ).token;
          } catch (error) {
            if (error instanceof CardRefused) return cardError('El medio de pago rechazó los datos de la tarjeta. Revísalos e intenta de nuevo.');
            return cardError('El medio de pago no respondió. Intenta de nuevo en unos minutos; no se hizo ningún cobro.');
          }
        }
        // The card rail decides, as it does for POST /v1/charges (the sandbox table for test keys).
        const done = await attempt(
          reply,
          found,
          'card',
          amount,
          rail,
          async (intent) => {
            const request: DebitRequest = {
              reference: intent.id,
              method: 'card',
              amount,
              currency: found.payment.currency,
              card: { outcome_class: sandboxCardOutcome(card.pan), exp_month: card.expMonth, exp_year: card.expYear, token },
              payerEmail: found.payment.email,
              test_scenario: found.payment.test_scenario,
              submittedAt: now(),
            };
            const answer = await rail.debit(request);
            return answer.status === 'declined' ? { status: 'declined', remarks: answer.remarks } : { status: answer.status };
          },
          accepted.consent,
        );
        if (!done) return reply;
        return afterAttempt(reply, found.payment.id, done.intent, amountInput);
      });

      for (const method of ['walleta', 'walletb'] as const) {
        scope.post(`/:id/${method}`, { schema: { hide: true } }, async (req, reply) => {
          const begun = await beginAttempt(req, reply, method);
          if (!begun) return reply;
          const { found, amount, amountInput, plan } = begun;
          const typed = field(req.body, 'phone').slice(0, 20);
          const phone = normalisePhone(typed);
          const formError = (errors: FieldErrors) =>
            showPayment(reply, found, 422, { chosenAmount: amount, amountInput, form: { method, errors, values: { phone: typed } } });
          const errors: FieldErrors = {};
          if (!phone) errors.phone = 'Escribe un número de celular colombiano de 10 dígitos, por ejemplo 300 123 4567.';
          if (plan.consent.has(method) && field(req.body, 'consent') !== '1') errors[consentField(method)] = CONSENT_ERROR;
          if (!phone || Object.keys(errors).length) return formError(errors);
          const scope = railScope(found.payment);
          const rail = await deps.rails.money(scope, method);
          const payer = { kind: 'natural' as const, documentType: null, documentNumber: null, fullName: '', email: found.payment.email, phone };
          if (rail.payerProblem?.(payer)) return formError({ phone: NEEDS_EMAIL });
          const accepted = await acceptedConsent(found.payment, plan, method, req.body);
          if (accepted.error) return formError({ [consentField(method)]: accepted.error });
          // The wallet rail decides, as it does for the API's request-to-pay (the payer confirms in the app).
          const done = await attempt(
            reply,
            found,
            method,
            amount,
            rail,
            async (intent) => {
              const request = { reference: intent.id, amount, phone, payer };
              await rail.requestToPay(request);
              const answer = await rail.outcome(request);
              if (answer.status === 'pending') return { status: 'pending' };
              return answer.status === 'approved'
                ? applyTestScenario(answer, found.payment.test_scenario)
                : { status: 'declined', remarks: answer.status === 'declined' ? answer.remarks : 'TRANSACTION_REJECTED' };
            },
            accepted.consent,
          );
          if (!done) return reply;
          return afterAttempt(reply, found.payment.id, done.intent, amountInput);
        });
      }

      scope.post('/:id/banklink', { schema: { hide: true } }, async (req, reply) => {
        const begun = await beginAttempt(req, reply, 'banklink');
        if (!begun) return reply;
        const { found, amount, amountInput, plan } = begun;
        const payment = found.payment;
        const available = plan.available;
        const asksIdentity = await banklinkAsksIdentity(payment, available);
        const values = {
          bank: field(req.body, 'bank').slice(0, 40),
          full_name: field(req.body, 'full_name').trim().slice(0, 100),
          person_type: field(req.body, 'person_type'),
          document_type: field(req.body, 'document_type'),
          document_number: field(req.body, 'document_number').replace(/[\s.]/g, '').slice(0, 20),
          payer_phone: field(req.body, 'payer_phone').slice(0, 20),
        };
        const errors: FieldErrors = {};
        const banks = await banksFor(payment, available);
        if (!banks.some((b) => b.id === values.bank)) errors.bank = 'Elige tu banco de la lista.';
        if (asksIdentity) Object.assign(errors, identityErrors(values));
        // PSE through a connector needs the payer's mobile: the payment's, else the one the form asked for.
        const phone = asksIdentity ? (normalisePhone(payment.phone ?? '') ?? normalisePhone(values.payer_phone)) : null;
        if (asksIdentity && !phone) errors.payer_phone = PHONE_ERROR;
        if (plan.consent.has('banklink') && field(req.body, 'consent') !== '1') errors[consentField('banklink')] = CONSENT_ERROR;
        const formError = (fieldErrors: FieldErrors, general?: string) =>
          showPayment(reply, found, 422, { chosenAmount: amount, amountInput, form: { method: 'banklink', errors: fieldErrors, values, general } });
        if (Object.keys(errors).length > 0) return formError(errors);
        if (!asksIdentity) {
          const intent = await start(reply, found, 'banklink', amount);
          if (!intent) return reply;
          return reply.redirect(`/pay/${payment.id}/attempts/${intent.id}?banco=${encodeURIComponent(values.bank)}`, 303);
        }
        // A connector (PSE): the payer's bank session is opened at the provider and the payer sent there.
        const scope = railScope(payment);
        const rail = await deps.rails.money(scope, 'banklink');
        const payer: RailPayer = {
          kind: values.person_type === 'company' ? 'company' : 'natural',
          documentType: values.document_type,
          documentNumber: values.document_number,
          fullName: values.full_name,
          email: payment.email,
          phone,
        };
        const problem = rail.payerProblem?.(payer);
        if (problem) return formError({}, payment.email ? problem : NEEDS_EMAIL);
        const accepted = await acceptedConsent(payment, plan, 'banklink', req.body);
        if (accepted.error) return formError({ [consentField('banklink')]: accepted.error });
        const bank = await findBanklinkBank(db(), values.bank, rail);
        let bankUrl: string | undefined;
        const done = await attempt(
          reply,
          found,
          'banklink',
          amount,
          rail,
          async (intent) => {
            const opened = await rail.open({
              reference: intent.id,
              amount,
              currency: payment.currency,
              bankId: values.bank,
              bankCode: bank?.code ?? '',
              description: payment.title,
              redirectUrl: new URL(paymentUrl(payment, { intento: intent.id }), deps.config.baseUrl).toString(),
              expiresAt: new Date(now().getTime() + PAGE_BANK_SESSION_MS),
              payer,
            });
            bankUrl = opened.redirectUrl;
            return { status: 'pending' };
          },
          accepted.consent,
        );
        if (!done) return reply;
        if (done.outcome.status === 'pending' && bankUrl) return reply.redirect(bankUrl, 303);
        return afterAttempt(reply, found.payment.id, done.intent, amountInput);
      });

      const qrExpiry = (payment: PaymentRow, intent: IntentRow) =>
        new Date(new Date(intent.created_at).getTime() + (payment.rtkey_expires_in ?? 30) * 60_000);

      scope.post('/:id/rtkey', { schema: { hide: true } }, async (req, reply) => {
        const begun = await beginAttempt(req, reply, 'rtkey');
        if (!begun) return reply;
        const { found, amount, amountInput, plan } = begun;
        const accepted =
          plan.consent.has('rtkey') && field(req.body, 'consent') !== '1'
            ? { consent: null, error: CONSENT_ERROR }
            : await acceptedConsent(found.payment, plan, 'rtkey', req.body);
        if (accepted.error)
          return showPayment(reply, found, 422, {
            chosenAmount: amount,
            amountInput,
            form: { method: 'rtkey', errors: { [consentField('rtkey')]: accepted.error }, values: {} },
          });
        // The scheme registers the QR, as it does for POST /v1/charges/rtkey (the sandbox table's refusals too).
        const rail = await deps.rails.money(railScope(found.payment), 'rtkey');
        const done = await attempt(
          reply,
          found,
          'rtkey',
          amount,
          rail,
          async (intent) => {
            try {
              await rail.registerQr({
                reference: intent.id,
                amount: intent.amount,
                currency: intent.currency,
                merchant: found.companyName,
                label: intent.id,
                expiresAt: qrExpiry(found.payment, intent),
                test_scenario: null,
              });
            } catch (error) {
              if (error instanceof QrRegistrationFailed) return { status: 'declined', remarks: 'TRANSACTION_REJECTED' };
              throw error;
            }
            return { status: 'pending' };
          },
          accepted.consent,
        );
        if (!done) return reply;
        if (done.outcome.status === 'pending') return reply.redirect(`/pay/${found.payment.id}/attempts/${done.intent.id}`, 303);
        return afterAttempt(reply, found.payment.id, done.intent, amountInput);
      });

      /** A waiting attempt's own page: the sandbox bank or the QR. */
      scope.get('/:id/attempts/:intentId', { schema: { hide: true } }, async (req, reply) => {
        const { id, intentId } = req.params as { id: string; intentId: string };
        const found = await findPaymentForPayer(db(), id);
        if (!found) return sendPage(reply, 404, notFoundPage());
        const intent = await findIntent(db(), found.payment, intentId);
        if (!intent) return sendPage(reply, 404, notFoundPage());
        if (!isAbandonable(intent)) return reply.redirect(paymentUrl(found.payment, { intento: intent.id }), 303);
        const { payment, companyName } = found;
        const token = tokens.issue(payment.id, now());
        const action = `/pay/${payment.id}/attempts/${intent.id}`;
        const waiting = {
          companyName,
          title: payment.title,
          amount: intent.amount,
          currency: intent.currency,
          operation: intent.id,
          action,
          token,
          environment: payment.environment,
        };
        if (intent.method === 'rtkey') {
          const expiresAt = qrExpiry(payment, intent);
          if (expiresAt.getTime() <= now().getTime()) {
            await settleQuietly(payment, intent.id, { status: 'declined', remarks: 'TIMEOUT' });
            deps.jobs.wake();
            return reply.redirect(paymentUrl(payment, { intento: intent.id }), 303);
          }
          const payload = emvcoPayload({
            key: intent.network_id ?? intent.id,
            merchant: companyName,
            amountMinor: intent.amount,
            currency: intent.currency,
            reference: intent.id,
          });
          const svg = qrSvg(payload, `Código QR para pagar ${money(intent.amount, intent.currency)} a ${companyName}`);
          return sendPage(
            reply,
            200,
            qrPage({ ...waiting, banner: testBanner(payment), payload, svg, expiresAt, checkUrl: action, cancellable: true }),
          );
        }
        const bankId = typeof (req.query as Body).banco === 'string' ? String((req.query as Body).banco) : '';
        const bank = bankId ? await findBank(db(), bankId) : undefined;
        return sendPage(
          reply,
          200,
          bankPage({
            ...waiting,
            bankName: bank && bank.banklink ? bank.name : null,
            returnsTo: `Al terminar volverás a la página de pago de ${companyName}.`,
          }),
        );
      });

      scope.post('/:id/attempts/:intentId', { schema: { hide: true } }, async (req, reply) => {
        const { id, intentId } = req.params as { id: string; intentId: string };
        const found = await findPaymentForPayer(db(), id);
        if (!found) return sendPage(reply, 404, notFoundPage());
        if (!tokens.verify(found.payment.id, field(req.body, 'token'), now())) return refused(reply, found.payment.id);
        const intent = await findIntent(db(), found.payment, intentId);
        if (!intent) return sendPage(reply, 404, notFoundPage());
        const { payment } = found;
        const back = () => reply.redirect(paymentUrl(payment, { intento: intent.id }), 303);
        if (!isAbandonable(intent)) return back();
        const action = field(req.body, 'action');
        if (action === 'cancel') {
          await settleQuietly(payment, intent.id, { status: 'declined', remarks: 'CANCELLED_BY_PAYER' });
          deps.jobs.wake();
          return back();
        }
        // The sandbox bank's and QR's buttons act in the test environment only.
        if (payment.environment !== 'test') return methodUnavailable(reply, found);
        if (intent.method === 'rtkey' && qrExpiry(payment, intent).getTime() <= now().getTime()) {
          await settleQuietly(payment, intent.id, { status: 'declined', remarks: 'TIMEOUT' });
          deps.jobs.wake();
          return back();
        }
        let outcome: AttemptOutcome;
        if (action === 'approve') outcome = applyTestScenario({ status: 'approved' as const }, payment.test_scenario);
        else if (action === 'reject' && intent.method === 'banklink') outcome = { status: 'declined', remarks: 'TRANSACTION_REJECTED' };
        else return back();
        if (outcome.status === 'pending') return reply.redirect(paymentUrl(payment), 303);
        await settleQuietly(payment, intent.id, outcome);
        return afterAttempt(reply, payment.id, intent, '');
      });
    },
    { prefix: '/pay' },
  );

  await app.register(
    async (scope) => {
      pageErrors(scope);
      pageRateLimit(scope, deps, limiter);
      scope.get('/', { schema: { hide: true } }, async (req, reply) => {
        const query = req.query as Body;
        const reference = typeof query.referencia === 'string' ? query.referencia.trim().slice(0, 60) : '';
        const company = typeof query.empresa === 'string' && /^[A-Za-z0-9_-]{1,100}$/.test(query.empresa) ? query.empresa : null;
        const searched = typeof query.referencia === 'string';
        let error: string | null = null;
        if (searched && (reference.length < 6 || reference.length > 30)) error = 'La referencia tiene entre 6 y 30 caracteres.';
        const rows = searched && !error ? await findByReference(db(), reference, company) : [];
        const hits = rows.map((r) => {
          const d = r.amount === null ? null : r.amount > r.amount_paid ? r.amount - r.amount_paid : 0n;
          const expired =
            r.expires_at !== null &&
            new Date(r.expires_at).getTime() <= now().getTime() &&
            ['pending', 'declined', 'partially_paid'].includes(r.status);
          return {
            id: r.id,
            title: r.title,
            status: expired ? STATUS_NAMES.expired : STATUS_NAMES[r.status],
            amountText: d === null ? 'Monto abierto' : r.status === 'partially_paid' ? `Falta ${money(d, r.currency)}` : money(r.amount!, r.currency),
            companyName: r.company_name,
            expires: r.expires_at && !expired && PAYABLE.includes(r.status) ? when(r.expires_at) : null,
            test: r.environment === 'test',
          };
        });
        return sendPage(
          reply,
          searched && !error ? 200 : error ? 422 : 200,
          portalPage({ reference, company, error, searched: searched && !error, hits }),
        );
      });
    },
    { prefix: '/portal' },
  );

  await app.register(
    async (scope) => {
      addFormParser(scope);
      pageErrors(scope);
      pageRateLimit(scope, deps, limiter);
      planPages(scope, deps, tokens);
    },
    { prefix: '/plan' },
  );

  await app.register(
    async (scope) => {
      addFormParser(scope);
      pageErrors(scope);
      pageRateLimit(scope, deps, limiter);
      connectPages(scope, deps, tokens);
    },
    { prefix: '/connect' },
  );
}
