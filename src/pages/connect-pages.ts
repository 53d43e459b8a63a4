import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppDeps } from '../platform/context.ts';
import { ApiError } from '../platform/errors/api-error.ts';
import { listBanks } from '../modules/banks/service.ts';
import type { ConnectLinkRow } from '../modules/connect-links/service.ts';
import {
  completionRedirect,
  codeStepLocked,
  confirmEnrolledAccount,
  enrolledResource,
  enrollmentOfAccount,
  WALLET_CODE_ATTEMPTS,
  enrollThroughLink,
  findConnectLinkForPage,
  latestEnrollment,
  linkCardMode,
  offeredByLink,
  type LinkCardMode,
  type EnrollmentRow,
  type EnrollOutcome,
  type EnrollRequest,
} from '../modules/connect-links/page.ts';
import type { FormTokens } from './csrf.ts';
import { sendPage } from './html.ts';
import { normalisePhone, type FieldErrors } from './sandbox.ts';
import { messagePage, type ShownContracts } from './views.ts';
import {
  CONNECT_CONSENT_ERROR,
  CONNECT_CONSENT_FIELD,
  codePage,
  connectPage,
  enrolledPage,
  linkGonePage,
  linkNotFoundPage,
  type ConnectCardMode,
  type ConnectMethod,
  type ConnectView,
} from './connect-pages-views.ts';

type Found = { link: ConnectLinkRow; companyName: string };
type Body = Record<string, unknown>;

const fieldOf = (body: unknown, name: string, max = 100): string => {
  const v = (body as Body | undefined)?.[name];
  return typeof v === 'string' ? v.trim().slice(0, max) : '';
};

const BRANDS: Record<string, string> = {
  visa: 'Visa',
  mastercard: 'Mastercard',
  amex: 'American Express',
  diners: 'Diners Club',
  discover: 'Discover',
  jcb: 'JCB',
  unionpay: 'UnionPay',
};

/** The payer pages' names of providers (a rail's `name`). */
const PROVIDER_NAMES: Record<string, string> = { wompi: 'Wompi' };

/** How long the page shows the provider's contracts it read before reading them again (a POST always reads them fresh). */
const CONTRACTS_TTL_MS = 60_000;

/** Contract permalinks a page may link: absolute https URLs (they come from the provider). */
const linkable = (url: string) => /^https:\/\/[^\s"'<>]+$/i.test(url);

const CONSENT_CHANGED = 'Los documentos del medio de pago cambiaron. Léelos de nuevo y acéptalos para guardar la tarjeta.';

/** Why a link's page shows no card form (LinkCardMode `unavailable`). */
const CARD_UNAVAILABLE: Record<Extract<LinkCardMode, { mode: 'unavailable' }>['reason'], (company: string) => string> = {
  no_browser_tokenization: (company) =>
    `La inscripción de tarjetas aún no está disponible aquí. Comunícate con ${company} o inscribe otro medio de pago.`,
  customer_email: (company) =>
    `Para inscribir una tarjeta, el medio de pago necesita tu correo electrónico y ${company} aún no lo tiene. Pide a la empresa que lo agregue y vuelve a abrir este enlace.`,
};

/** The API's card errors (10104, 10102, 10122 and the schema's) as the card form's fields. */
function cardErrors(error: ApiError): FieldErrors | null {
  const fields = error.errors ?? {};
  switch (error.def.codeName) {
    case 'card_number':
      return { card_number: 'El número de la tarjeta no es válido. Revísalo.' };
    case 'card_cvv':
      return { cvv: 'El código de seguridad debe tener 3 dígitos (4 en American Express).' };
    case 'card_expired':
      return fields.expiration_month
        ? { exp_month: 'Escribe el mes de vencimiento, de 01 a 12.' }
        : { exp_year: 'La tarjeta está vencida o el año no es válido. Revisa la fecha de vencimiento.' };
    case 'validation_error':
      if (fields.holder_name) return { holder_name: 'Escribe el nombre como aparece en la tarjeta.' };
      if (fields.card_number) return { card_number: 'El número de la tarjeta no es válido. Revísalo.' };
      return null;
    default:
      return null;
  }
}

/** The cards module's refusals of a provider-tokenized card (cards/service.ts createCardFromProviderToken) as the form's. */
function providerCardErrors(error: ApiError): FieldErrors | null {
  const fields = error.errors ?? {};
  if (error.def.codeName === 'card_expired') return { exp_year: 'La tarjeta está vencida. Revisa la fecha de vencimiento o usa otra tarjeta.' };
  if (error.def.codeName !== 'validation_error') return null;
  if (fields.holder_name) return { holder_name: 'Escribe el nombre como aparece en la tarjeta.' };
  // The provider refused its token or the card (spent, expired, declined): the card is entered again.
  if (fields.card_number) return { card_number: 'El medio de pago no aceptó la tarjeta. Escríbela de nuevo o usa otra tarjeta. No se guardó nada.' };
  return null;
}

/** The API's account validation errors as the account or wallet form's fields. */
function accountErrors(error: ApiError, method: 'cuenta' | 'billetera'): FieldErrors | null {
  if (error.def.codeName !== 'validation_error') return null;
  const fields = error.errors ?? {};
  const out: FieldErrors = {};
  if (fields.bank_id) {
    if (method === 'cuenta') out.bank = 'Tu banco no ofrece ese tipo de cuenta para débito automático. Elige otro tipo de cuenta o revisa el banco.';
    else out.wallet_bank = 'Esta billetera no está disponible para débito automático. Elige otra.';
  }
  if (fields.account_number) {
    if (method === 'cuenta') out.account_number = 'El número de cuenta debe tener de 4 a 20 dígitos.';
    else out.wallet_phone = 'Escribe un celular de Colombia de 10 dígitos, por ejemplo 300 123 4567.';
  }
  return Object.keys(out).length ? out : null;
}

/**
 * The connect link's page at its `url` (/connect/{token}, docs/pages.md "Connect-link page"):
 * the link's customer enrolls a bank account, a card or a wallet account (with its code) through
 * the connect-links module. Registered inside the payer pages' scope (form parser, error pages,
 * rate limit); forms carry the pages' signed form tokens, signed for the link's id.
 */
export function connectPages(scope: FastifyInstance, deps: AppDeps, tokens: FormTokens): void {
  const now = () => deps.clock.now();
  const db = () => deps.database.db;
  const tenant = (link: ConnectLinkRow) => ({ companyId: link.company_id, environment: link.environment });
  const formOrigins = (link: ConnectLinkRow): string[] => {
    try {
      return link.redirect_url ? [new URL(link.redirect_url).origin] : [];
    } catch {
      return [];
    }
  };

  /** The banks and wallets of the forms; with a link, only those its `allows` offers. */
  async function catalogue(link?: ConnectLinkRow) {
    const banks = await listBanks(db(), { order: 'name' }, deps.config.baseUrl);
    const offer = link ? offeredByLink(link) : null;
    return {
      banks: banks
        .filter((b) => b.available && b.connection_type === 'DATA' && b.supported_types.some((t) => t === 'savings' || t === 'checking'))
        .filter(() => !offer || offer.bankAccount)
        .map((b) => ({ id: b.id, name: b.name })),
      wallets: banks
        .filter((b) => b.available && b.connection_type === 'CONFIRMATION' && b.supported_types.includes('electronic_deposit'))
        .filter((b) => !offer || offer.walletBankCodes.includes(b.code))
        .map((b) => ({ id: b.id, name: b.name })),
    };
  }

  const contractsKept = new Map<string, { at: number; contracts: ShownContracts }>();

  /** The provider's contracts read now (a POST: what the payer accepts must be what the provider has). Throws when unreadable. */
  async function freshContracts(link: ConnectLinkRow, mode: Extract<LinkCardMode, { mode: 'browser' }>): Promise<ShownContracts> {
    const read = await mode.contracts!();
    if (!linkable(read.permalink) || !linkable(read.personalDataPermalink))
      throw new Error(`${mode.provider}: contract permalinks are not https URLs`);
    const contracts = {
      provider: PROVIDER_NAMES[mode.provider] ?? mode.provider,
      permalink: read.permalink,
      personalDataPermalink: read.personalDataPermalink,
    };
    contractsKept.set(`${link.company_id}:${link.environment}:${mode.provider}`, { at: Date.now(), contracts });
    if (contractsKept.size > 10_000) contractsKept.delete(contractsKept.keys().next().value!);
    return contracts;
  }

  /** The contracts the page shows: read at most once a minute per company; null when none are needed or they cannot be read now. */
  async function shownContracts(link: ConnectLinkRow, mode: LinkCardMode): Promise<ShownContracts | null> {
    if (mode.mode !== 'browser' || !mode.contracts) return null;
    const kept = contractsKept.get(`${link.company_id}:${link.environment}:${mode.provider}`);
    if (kept && Date.now() - kept.at < CONTRACTS_TTL_MS) return kept.contracts;
    try {
      return await freshContracts(link, mode);
    } catch (error) {
      deps.logger.warn({ err: error, company_id: link.company_id }, 'connect page: the provider contracts could not be read');
      return null;
    }
  }

  function cardModeView(mode: LinkCardMode, companyName: string): ConnectCardMode {
    if (mode.mode === 'browser')
      return { mode: 'browser', url: mode.url, publicKey: mode.publicKey, origin: mode.origin, consent: Boolean(mode.contracts) };
    if (mode.mode === 'unavailable') return { mode: 'unavailable', text: CARD_UNAVAILABLE[mode.reason](companyName) };
    return mode;
  }

  async function show(reply: FastifyReply, found: Found, status: number, form: ConnectView['form'] = null) {
    const { link, companyName } = found;
    const cardOffered = offeredByLink(link).card;
    const mode: LinkCardMode = cardOffered ? await linkCardMode(deps, link) : { mode: 'server' };
    const view: ConnectView = {
      linkToken: link.token,
      formToken: tokens.issue(link.id, now()),
      companyName,
      test: link.environment === 'test',
      ...(await catalogue(link)),
      cardOffered,
      cardMode: cardModeView(mode, companyName),
      contracts: await shownContracts(link, mode),
      accountsOffered: await deps.rails.serves(tenant(link), 'enrollment'),
      form,
    };
    return sendPage(reply, status, connectPage(view), { formOrigins: formOrigins(link) });
  }

  const gone = (reply: FastifyReply, found: Found, link: ConnectLinkRow = found.link) =>
    sendPage(reply, 410, linkGonePage(link.status === 'deleted' ? 'deleted' : 'used', found.companyName));

  const refused = (reply: FastifyReply, found: Found) =>
    sendPage(
      reply,
      403,
      messagePage({
        title: 'Formulario vencido',
        heading: 'El formulario venció',
        text: 'Por seguridad, vuelve a abrir el enlace y envía tus datos de nuevo. No se inscribió nada.',
        link: { href: `/connect/${found.link.token}`, label: 'Volver a abrir el enlace' },
      }),
    );

  const unavailable = (reply: FastifyReply, found: Found) =>
    sendPage(
      reply,
      422,
      messagePage({
        title: 'Inscripción no disponible',
        heading: 'Esta inscripción no está disponible',
        text: `${found.companyName} aún no puede inscribir cuentas bancarias ni billeteras en línea. No se guardó nada. Puedes inscribir una tarjeta o comunicarte con la empresa.`,
        link: { href: `/connect/${found.link.token}`, label: 'Volver al enlace' },
      }),
    );

  /** The link's page found by the token in the path, or the 404/410 page already sent. */
  async function findLink(reply: FastifyReply, token: string): Promise<Found | null> {
    const found = await findConnectLinkForPage(deps, token);
    if (!found) {
      sendPage(reply, 404, linkNotFoundPage());
      return null;
    }
    return found;
  }

  const codeUrl = (link: ConnectLinkRow, accountId: string) => `/connect/${link.token}/codigo/${accountId}`;

  /** Enrolled: back to the company (redirect_url with the ids), or the success page. */
  async function finish(reply: FastifyReply, found: Found, enrollment: EnrollmentRow) {
    deps.jobs.wake();
    const target = completionRedirect(found.link, enrollment);
    if (target) return reply.redirect(target, 303);
    const { account, card } = await enrolledResource(deps, found.link, enrollment);
    const test = found.link.environment === 'test';
    const what = account
      ? `tu cuenta ${account.title}`
      : card
        ? `tu tarjeta ${BRANDS[card.brand] ?? ''} terminada en ${card.last4}`.replace('  ', ' ')
        : 'tu medio de pago';
    const note = card
      ? 'Ya puede usarse para tus pagos.'
      : account?.status === 'ACTIVE'
        ? 'Quedó activa y ya puede usarse para tus pagos.'
        : `Tu banco confirmará la inscripción${test ? ' (en pruebas, en unos segundos)' : ''}. ${found.companyName} recibirá el aviso.`;
    return sendPage(
      reply,
      200,
      enrolledPage({
        companyName: found.companyName,
        what,
        note,
        again: found.link.single_use || found.link.status !== 'active' ? null : `/connect/${found.link.token}`,
        test,
      }),
    );
  }

  /** After a form: a wallet account goes on to its code while it waits for it; the rest finish. */
  async function afterEnroll(reply: FastifyReply, found: Found, outcome: EnrollOutcome) {
    if (outcome.status === 'gone') return gone(reply, found, outcome.link);
    const { enrollment } = outcome;
    if (enrollment.account_id && (await waitsForCode(found, enrollment))) return reply.redirect(codeUrl(found.link, enrollment.account_id), 303);
    const fresh = await findConnectLinkForPage(deps, found.link.token);
    return finish(reply, fresh ?? found, enrollment);
  }

  const walletIds = async () => new Set((await catalogue()).wallets.map((w) => w.id));

  /** A wallet account still PENDING: its holder's code is what is missing. */
  async function waitsForCode(found: Found, enrollment: EnrollmentRow): Promise<boolean> {
    const { account } = await enrolledResource(deps, found.link, enrollment);
    return Boolean(account && account.status === 'PENDING' && account.bank_id && (await walletIds()).has(account.bank_id));
  }

  /** Runs one enrollment form: the token first, then the link, then the module; API errors as the form's. */
  async function enroll(
    reply: FastifyReply,
    found: Found,
    method: ConnectMethod,
    values: Record<string, string>,
    errors: FieldErrors,
    request: EnrollRequest,
    token: string,
    mapError: (error: ApiError) => FieldErrors | null,
  ) {
    if (Object.keys(errors).length) return show(reply, found, 422, { method, errors, values });
    try {
      return await afterEnroll(reply, found, await enrollThroughLink(deps, found.link, token, request));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.def.codeName === 'rail_not_configured') return unavailable(reply, found);
      const fields = mapError(error);
      if (fields) return show(reply, found, 422, { method, errors: fields, values });
      if (error.status === 422) {
        // A rule the form cannot fix (the link's customer was deleted...): nothing was enrolled.
        return show(reply, found, 422, {
          method,
          errors: {},
          values,
          general: `No pudimos inscribir este medio de pago. Inténtalo de nuevo o comunícate con ${found.companyName}.`,
        });
      }
      throw error;
    }
  }

  /** The form's token, verified for the link: a POST without it is refused before anything else. */
  async function begin(req: { params: unknown; body: unknown }, reply: FastifyReply): Promise<{ found: Found; token: string } | null> {
    const found = await findLink(reply, (req.params as { token: string }).token);
    if (!found) return null;
    const token = fieldOf(req.body, 'token', 200);
    if (!tokens.verify(found.link.id, token, now())) {
      refused(reply, found);
      return null;
    }
    return { found, token };
  }

  scope.get('/:token', { schema: { hide: true } }, async (req, reply) => {
    const found = await findLink(reply, (req.params as { token: string }).token);
    if (!found) return reply;
    if (found.link.status === 'active') return show(reply, found, 200);
    if (found.link.status === 'used') {
      // The payer left a wallet account waiting for its code: the link takes them back to it.
      const last = await latestEnrollment(deps, found.link);
      if (last?.account_id && (await waitsForCode(found, last))) return reply.redirect(codeUrl(found.link, last.account_id), 303);
    }
    return gone(reply, found);
  });

  scope.post('/:token/cuenta', { schema: { hide: true } }, async (req, reply) => {
    const begun = await begin(req, reply);
    if (!begun) return reply;
    const { found, token } = begun;
    const values = {
      bank: fieldOf(req.body, 'bank', 40),
      account_type: fieldOf(req.body, 'account_type', 20),
      account_number: fieldOf(req.body, 'account_number', 30),
      acepto_cuenta: fieldOf(req.body, 'acepto_cuenta', 5),
    };
    const errors: FieldErrors = {};
    const { banks } = await catalogue(found.link);
    if (!banks.some((b) => b.id === values.bank)) errors.bank = 'Elige tu banco de la lista.';
    if (values.account_type !== 'SAVINGS' && values.account_type !== 'CHECKING')
      errors.account_type = 'Elige si la cuenta es de ahorros o corriente.';
    if (!values.account_number) errors.account_number = 'Escribe el número de la cuenta.';
    if (values.acepto_cuenta !== 'si') errors.acepto_cuenta = 'Marca la casilla para autorizar los débitos a esta cuenta.';
    const request: EnrollRequest = {
      kind: 'account',
      account: { subtype: values.account_type as 'SAVINGS' | 'CHECKING', bank_id: values.bank, account_number: values.account_number },
    };
    return enroll(reply, found, 'cuenta', values, errors, request, token, (e) => accountErrors(e, 'cuenta'));
  });

  scope.post('/:token/billetera', { schema: { hide: true } }, async (req, reply) => {
    const begun = await begin(req, reply);
    if (!begun) return reply;
    const { found, token } = begun;
    const values = {
      wallet_bank: fieldOf(req.body, 'wallet_bank', 40),
      wallet_phone: fieldOf(req.body, 'wallet_phone', 20),
      acepto_billetera: fieldOf(req.body, 'acepto_billetera', 5),
    };
    const errors: FieldErrors = {};
    const { wallets } = await catalogue(found.link);
    if (!wallets.some((w) => w.id === values.wallet_bank)) errors.wallet_bank = 'Elige Nequi o Daviplata.';
    const phone = normalisePhone(values.wallet_phone);
    if (!phone) errors.wallet_phone = 'Escribe un celular de Colombia de 10 dígitos, por ejemplo 300 123 4567.';
    if (values.acepto_billetera !== 'si') errors.acepto_billetera = 'Marca la casilla para autorizar los débitos a esta billetera.';
    const request: EnrollRequest = {
      kind: 'account',
      account: { subtype: 'ELECTRONIC_DEPOSIT', bank_id: values.wallet_bank, account_number: phone ?? '' },
    };
    return enroll(reply, found, 'billetera', values, errors, request, token, (e) => accountErrors(e, 'billetera'));
  });

  /**
   * The card the payer's browser tokenized at the provider (a connector's card form): only the
   * provider's token comes here, never the number or the code (a body that carries them is refused
   * unread); the payer's acceptance of the provider's contracts first (docs/pages.md "Consent").
   */
  async function enrollProviderCard(
    req: { body: unknown },
    reply: FastifyReply,
    found: Found,
    token: string,
    mode: Extract<LinkCardMode, { mode: 'browser' }>,
  ) {
    const values = {
      holder_name: fieldOf(req.body, 'holder_name', 100),
      acepto_tarjeta: fieldOf(req.body, 'acepto_tarjeta', 5),
    };
    const formError = (errors: FieldErrors, general?: string) => show(reply, found, 422, { method: 'tarjeta', errors, values, general });
    const body = req.body;
    if (body && typeof body === 'object' && ('card_number' in body || 'cvv' in body)) {
      return formError(
        {},
        'Por seguridad, este formulario no recibe el número de la tarjeta: tu navegador lo envía directamente al medio de pago. Vuelve a intentarlo desde esta página. No se guardó nada.',
      );
    }
    const card = {
      provider_token: fieldOf(req.body, 'card_token', 200),
      brand: fieldOf(req.body, 'card_brand', 30),
      last4: fieldOf(req.body, 'card_last4', 4),
      exp_month: fieldOf(req.body, 'card_exp_month', 2),
      exp_year: fieldOf(req.body, 'card_exp_year', 4),
      holder_name: values.holder_name,
    };
    const errors: FieldErrors = {};
    if (values.holder_name.length < 2) errors.holder_name = 'Escribe el nombre como aparece en la tarjeta.';
    if (values.acepto_tarjeta !== 'si') errors.acepto_tarjeta = 'Marca la casilla para autorizar los cobros a esta tarjeta.';
    if (mode.contracts && fieldOf(req.body, 'consent', 5) !== '1') errors[CONNECT_CONSENT_FIELD] = CONNECT_CONSENT_ERROR;
    if (card.provider_token === '') {
      // No token: the page's script did not run (JavaScript off) or failed before the provider answered.
      return formError(
        errors,
        'Para inscribir una tarjeta, tu navegador debe tener JavaScript activado: así los datos de la tarjeta van directo al medio de pago. Actívalo e intenta de nuevo. No se guardó nada.',
      );
    }
    if (
      !/^[A-Za-z0-9_.-]{6,128}$/.test(card.provider_token) ||
      !/^\d{4}$/.test(card.last4) ||
      !/^\d{1,2}$/.test(card.exp_month) ||
      !/^\d{4}$/.test(card.exp_year)
    ) {
      return formError(errors, 'No recibimos bien la tarjeta del medio de pago. Escríbela de nuevo. No se guardó nada.');
    }
    if (Object.keys(errors).length) return formError(errors);
    if (mode.contracts) {
      // What the payer accepted must be what the provider has now; unreadable: nothing is saved.
      let current: ShownContracts;
      try {
        current = await freshContracts(found.link, mode);
      } catch (error) {
        deps.logger.warn({ err: error, company_id: found.link.company_id }, 'connect page: the provider contracts could not be read');
        throw new ApiError('service_unavailable', { message: 'The provider’s contracts could not be read; nothing was saved.' });
      }
      if (
        fieldOf(req.body, 'terms_permalink', 500) !== current.permalink ||
        fieldOf(req.body, 'personal_data_permalink', 500) !== current.personalDataPermalink
      ) {
        return formError({ [CONNECT_CONSENT_FIELD]: CONSENT_CHANGED });
      }
    }
    const request: EnrollRequest = { kind: 'providerCard', card, acceptTerms: Boolean(mode.contracts) };
    return enroll(reply, found, 'tarjeta', values, {}, request, token, providerCardErrors);
  }

  scope.post('/:token/tarjeta', { schema: { hide: true } }, async (req, reply) => {
    const begun = await begin(req, reply);
    if (!begun) return reply;
    const { found, token } = begun;
    if (offeredByLink(found.link).card) {
      const mode = await linkCardMode(deps, found.link);
      if (mode.mode === 'browser') return enrollProviderCard(req, reply, found, token, mode);
      if (mode.mode === 'unavailable')
        return show(reply, found, 422, { method: 'tarjeta', errors: {}, values: {}, general: CARD_UNAVAILABLE[mode.reason](found.companyName) });
    }
    // The number and the code stay in this request: never shown back, stored or logged.
    const cardNumber = fieldOf(req.body, 'card_number', 40);
    const cvv = fieldOf(req.body, 'cvv', 8);
    const values = {
      exp_month: fieldOf(req.body, 'exp_month', 4),
      exp_year: fieldOf(req.body, 'exp_year', 4),
      holder_name: fieldOf(req.body, 'holder_name', 100),
      acepto_tarjeta: fieldOf(req.body, 'acepto_tarjeta', 5),
    };
    const errors: FieldErrors = {};
    if (!cardNumber) errors.card_number = 'Escribe el número de la tarjeta.';
    if (!values.exp_month) errors.exp_month = 'Escribe el mes de vencimiento.';
    if (!values.exp_year) errors.exp_year = 'Escribe el año de vencimiento.';
    if (!cvv) errors.cvv = 'Escribe el código de seguridad.';
    if (values.holder_name.length < 2) errors.holder_name = 'Escribe el nombre como aparece en la tarjeta.';
    if (values.acepto_tarjeta !== 'si') errors.acepto_tarjeta = 'Marca la casilla para autorizar los cobros a esta tarjeta.';
    const request: EnrollRequest = {
      kind: 'card',
      card: {
        card_number: cardNumber,
        expiration_month: values.exp_month,
        expiration_year: values.exp_year,
        cvv,
        holder_name: values.holder_name,
      },
    };
    return enroll(reply, found, 'tarjeta', values, errors, request, token, cardErrors);
  });

  /** The wallet account's code step: its page, while the account waits for the holder. */
  async function codeStep(reply: FastifyReply, found: Found, accountId: string, status: number, errors: FieldErrors = {}) {
    const enrollment = await enrollmentOfAccount(deps, found.link, accountId);
    if (!enrollment) return sendPage(reply, 404, linkNotFoundPage());
    const { account } = await enrolledResource(deps, found.link, enrollment);
    if (!account || found.link.status === 'deleted') return gone(reply, found);
    if (account.status === 'ACTIVE') return finish(reply, found, enrollment);
    if (account.status === 'PENDING' && codeStepLocked(enrollment)) {
      return sendPage(
        reply,
        status === 200 ? 200 : 429,
        messagePage({
          title: 'Demasiados intentos',
          heading: 'Bloqueamos el código de esta inscripción',
          text: `Por tu seguridad, después de ${WALLET_CODE_ATTEMPTS} códigos incorrectos no aceptamos más en este enlace. Pide a ${found.companyName} un enlace nuevo para inscribir tu billetera.`,
        }),
      );
    }
    if (account.status !== 'PENDING') {
      return sendPage(
        reply,
        200,
        messagePage({
          title: 'Inscripción rechazada',
          heading: 'No pudimos inscribir tu billetera',
          text: `La entidad rechazó la inscripción. Comunícate con ${found.companyName} para inscribir otro medio de pago.`,
        }),
      );
    }
    return sendPage(
      reply,
      status,
      codePage({
        action: codeUrl(found.link, accountId),
        formToken: tokens.issue(found.link.id, now()),
        companyName: found.companyName,
        test: found.link.environment === 'test',
        walletName: account.bank?.name ?? 'billetera',
        maskedNumber: account.account_number,
        errors,
      }),
      { formOrigins: formOrigins(found.link) },
    );
  }

  scope.get('/:token/codigo/:accountId', { schema: { hide: true } }, async (req, reply) => {
    const found = await findLink(reply, (req.params as { token: string }).token);
    if (!found) return reply;
    return codeStep(reply, found, (req.params as { accountId: string }).accountId, 200);
  });

  scope.post('/:token/codigo/:accountId', { schema: { hide: true } }, async (req, reply) => {
    const begun = await begin(req, reply);
    if (!begun) return reply;
    const { found } = begun;
    const accountId = (req.params as { accountId: string }).accountId;
    const enrollment = await enrollmentOfAccount(deps, found.link, accountId);
    if (!enrollment) return sendPage(reply, 404, linkNotFoundPage());
    const otp = fieldOf(req.body, 'otp', 12).replace(/\s/g, '');
    if (!/^\d{6}$/.test(otp)) return codeStep(reply, found, accountId, 422, { otp: 'Escribe los 6 dígitos del código.' });
    try {
      const outcome = await confirmEnrolledAccount(deps, found.link, enrollment, otp);
      if (outcome.status === 'locked') return codeStep(reply, found, accountId, 429);
      if (outcome.status === 'wrong') {
        const left = outcome.remaining === 1 ? 'Te queda 1 intento.' : `Te quedan ${outcome.remaining} intentos.`;
        return codeStep(reply, found, accountId, 422, { otp: `El código no es correcto. Revísalo en la app e inténtalo de nuevo. ${left}` });
      }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.def.codeName === 'rail_not_configured') return unavailable(reply, found);
      if (error.def.codeName !== 'validation_error') throw error;
      // Not waiting any more (validated meanwhile, rejected...): the step shows where it stands.
    }
    return codeStep(reply, found, accountId, 200);
  });
}
