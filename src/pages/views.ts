import type { IntentRow, PaymentRow } from '../modules/payments/queries.ts';
import type { PaymentMethod } from '../modules/payments/tables.ts';
import { MINIMUM_MINOR } from '../platform/money.ts';
import { fromBasisPoints } from '../platform/money.ts';
import { html, icons, page, raw, type Html, type RenderedPage } from './html.ts';
import { METHOD_NAMES, STATUS_NAMES, money, pesosText, when } from './format.ts';
import { declineText, type FieldErrors } from './sandbox.ts';
import { CARD_SCRIPT_INTEGRITY, CARD_SCRIPT_PATH } from './card-script.ts';

/** What the payer page shows; built by routes.ts from the payment, its attempts and the request. */
export interface PayView {
  payment: PaymentRow;
  companyName: string;
  now: Date;
  token: string;
  /** Newest first. */
  intents: IntentRow[];
  /** The attempt whose outcome the payer just came back from (?intento=). */
  flash: IntentRow | null;
  /** What this attempt will charge (minor units); null: an open amount not chosen yet. */
  chosenAmount: bigint | null;
  /** Error of the amount step (open or partial amounts). */
  amountError: string | null;
  /** The text the payer typed in the amount step (shown back on error). */
  amountInput: string;
  /** The largest amount an open link takes (COP: the company's maximum), minor units. */
  openMax: bigint | null;
  /** Field errors of a method form the payer just sent, and the values to show back. */
  form: { method: string; errors: FieldErrors; values: Record<string, string>; general?: string } | null;
  banks: { id: string; name: string }[];
  /** The banklink rail needs the payer's identity (PSE through a connector): its form asks for it. */
  banklinkIdentity: boolean;
  /** The link's methods this environment can take (live: those a connector serves). */
  available: PaymentMethod[];
  /**
   * How the card form works: `browser`, the payer's browser sends the card straight to the
   * provider's tokenization (`url`, the company's `publicKey`) and the form posts only its token
   * (a connector's card rail); `server`, the sandbox's form (test payments). Null: no card here.
   */
  card: CardMode | null;
  /** The provider's contracts the payer accepts before paying by a method of `consentMethods`; null when they could not be read now. */
  contracts: ShownContracts | null;
  /** The methods that go through a provider, whose forms ask for that consent. */
  consentMethods: PaymentMethod[];
  /** PSE through a connector needs the payer's mobile and the payment has none: the bank form asks for it. */
  askPhone: boolean;
}

export type CardMode = { mode: 'browser'; url: string; publicKey: string; origin: string } | { mode: 'server' };

/** A provider's two contracts as the page links them: the end-user terms and the personal-data authorization. */
export interface ShownContracts {
  /** The provider's name as the payer knows it (Wompi). */
  provider: string;
  permalink: string;
  personalDataPermalink: string;
}

export const ALL_METHODS = ['card', 'banklink', 'rtkey', 'walleta', 'walletb'] as const;
const WAITING_METHODS = ['banklink', 'rtkey'];

/** An attempt the pages started and that waits for the payer (bank page, QR): the payer may abandon it. */
export function isAbandonable(intent: IntentRow): boolean {
  return intent.status === 'in_progress' && WAITING_METHODS.includes(intent.method) && (intent.network_id ?? '').startsWith('sbx_');
}

export function isExpired(payment: PaymentRow, now: Date): boolean {
  if (payment.status === 'expired') return true;
  const payable = payment.status === 'pending' || payment.status === 'declined' || payment.status === 'partially_paid';
  return payable && payment.expires_at !== null && new Date(payment.expires_at).getTime() <= now.getTime();
}

export function due(payment: PaymentRow): bigint | null {
  return payment.amount === null ? null : payment.amount > payment.amount_paid ? payment.amount - payment.amount_paid : 0n;
}

/** The smallest amount one attempt may take (partial and open links). */
export function attemptMinimum(payment: PaymentRow): bigint {
  const d = due(payment);
  if (d === null) return MINIMUM_MINOR[payment.currency];
  if (!payment.partial_enabled) return d;
  const floor = payment.partial_minimum ?? MINIMUM_MINOR[payment.currency];
  return floor < d ? floor : d;
}

/** Ends a sentence with one period (`p. m.` already has one). */
function sentence(text: string): string {
  return text.endsWith('.') ? text : `${text}.`;
}

export function testBanner(payment: PaymentRow, withData = true): Html | '' {
  if (payment.environment !== 'test') return '';
  const allows = payment.allows;
  if (!withData) return html`<div class="banner" role="note"><strong>Modo de prueba.</strong> No se mueve dinero real.</div>`;
  return html`<div class="banner" role="note">
<strong>Modo de prueba.</strong> No se mueve dinero real.
<details><summary>Datos de prueba</summary><ul>
${allows.includes('card') ? html`<li>Tarjeta aprobada: 4242 4242 4242 4242</li><li>Tarjeta rechazada: 4000 0000 0000 0002</li><li>Tarjeta vencida (rechazo): 4000 0000 0000 0069</li><li>Cualquier fecha futura y cualquier CVV de 3 dígitos</li>` : ''}
${allows.includes('walleta') || allows.includes('walletb') ? html`<li>Billeteras: +57 399 111 1111 aprueba, +57 399 222 2222 rechaza</li>` : ''}
${allows.includes('banklink') ? html`<li>Transferencia: en el banco de pruebas eliges aprobar o rechazar</li>` : ''}
${allows.includes('rtkey') ? html`<li>Código QR: el botón «Simular pago» hace de la app del banco</li>` : ''}
</ul></details>
</div>`;
}

function summary(v: PayView): Html {
  const p = v.payment;
  const d = due(p);
  const facts: Html[] = [];
  if (p.amount !== null && p.amount_paid > 0n) {
    facts.push(html`<div><dt>Valor total</dt><dd>${money(p.amount, p.currency)}</dd></div>`);
    facts.push(html`<div><dt>Ya pagado</dt><dd>${money(p.amount_paid, p.currency)}</dd></div>`);
  }
  if (p.reference) facts.push(html`<div><dt>Referencia</dt><dd>${p.reference}</dd></div>`);
  if (p.tax_amount !== null && p.tax_amount > 0n) {
    const rate = p.tax_rate_bp !== null ? ` (${fromBasisPoints(p.tax_rate_bp).toLocaleString('es-CO')} %)` : '';
    facts.push(html`<div><dt>IVA incluido${rate}</dt><dd>${money(p.tax_amount, p.currency)}</dd></div>`);
  }
  if (p.expires_at) facts.push(html`<div><dt>Paga antes de</dt><dd>${when(p.expires_at)}</dd></div>`);
  const amountLine =
    d === null
      ? html`<p class="lead"><strong>Monto abierto:</strong> tú eliges cuánto pagar (mínimo ${money(MINIMUM_MINOR[p.currency], p.currency)}).</p>`
      : html`<p class="muted small">${p.amount_paid > 0n ? 'Falta por pagar' : 'Total a pagar'}</p><p class="amount" id="monto-total">${money(d, p.currency)}</p>${
          p.partial_enabled && d > attemptMinimum(p)
            ? html`<p class="muted small">Puedes pagarlo por partes, desde ${money(attemptMinimum(p), p.currency)}.</p>`
            : ''
        }`;
  return html`<section class="card" aria-labelledby="titulo">
<h1 id="titulo">${p.title}</h1>
${p.description ? html`<p class="desc">${p.description}</p>` : ''}
${amountLine}
${facts.length ? html`<dl class="facts">${facts}</dl>` : ''}
${p.document_url ? html`<p class="small"><a href="${p.document_url}" rel="noopener noreferrer">Ver el documento del cobro</a></p>` : ''}
</section>`;
}

function flashNotice(v: PayView): Html | '' {
  const f = v.flash;
  const p = v.payment;
  if (f && f.status === 'declined') {
    return html`<div class="notice error" role="alert" id="resultado-rechazo">
<h2>Tu pago no fue aprobado</h2>
<p>${declineText(f.remarks)}</p>
<p>No se hizo ningún cobro. Puedes intentarlo de nuevo con el mismo u otro medio de pago.</p>
</div>`;
  }
  if (f && f.status === 'approved' && p.status === 'partially_paid') {
    return html`<div class="notice ok" role="status">
<h2>Recibimos tu pago de ${money(f.amount, f.currency)}</h2>
<p>Falta por pagar ${money(due(p) ?? 0n, p.currency)}. Puedes pagar el resto ahora o más tarde con este mismo enlace.</p>
</div>`;
  }
  if (!f && p.status === 'declined') {
    const last = v.intents.find((i) => i.status === 'declined');
    return html`<div class="notice info" role="status"><p><strong>El último intento de pago fue rechazado.</strong> ${last ? declineText(last.remarks) : ''} Puedes intentarlo de nuevo.</p></div>`;
  }
  return '';
}

export function fieldError(id: string, errors: FieldErrors): Html {
  return html`<p class="field-error" id="${id}-error">${errors[id] ?? ''}</p>`;
}

export function describedBy(id: string, hint: boolean): string {
  return hint ? `${id}-hint ${id}-error` : `${id}-error`;
}

export function invalid(id: string, errors: FieldErrors): Html | '' {
  return errors[id] ? raw(' aria-invalid="true"') : '';
}

export function errorSummary(errors: FieldErrors, labels: Record<string, string>, general?: string): Html | '' {
  const entries = Object.entries(errors);
  if (!entries.length && !general) return '';
  return html`<div class="notice error" role="alert" tabindex="-1" data-error-summary>
<h2>${general ? general : 'Revisa los datos'}</h2>
${entries.length ? html`<ul class="summary-list">${entries.map(([field, message]) => html`<li><a href="#${field}">${labels[field] ?? field}: ${message}</a></li>`)}</ul>` : ''}
</div>`;
}

function hidden(v: PayView): Html {
  return html`<input type="hidden" name="token" value="${v.token}">${v.chosenAmount !== null ? html`<input type="hidden" name="amount" value="${pesosText(v.chosenAmount)}">` : ''}`;
}

const CARD_LABELS: Record<string, string> = {
  card_number: 'Número de la tarjeta',
  exp_month: 'Mes de vencimiento',
  exp_year: 'Año de vencimiento',
  cvv: 'Código de seguridad',
  holder_name: 'Nombre del titular',
  'consent-card': 'Autorización',
};

/** The field of a method form's consent checkbox (its id and its key in the form's errors). */
export const consentField = (method: string): string => `consent-${method}`;

const NEW_TAB = html`<span class="visually-hidden"> (se abre en otra pestaña)</span>`;

/**
 * The provider's contracts, linked, and the checkbox the payer ticks to accept them (docs/pages.md
 * "Consent"): only on the forms of methods that go through a provider. The permalinks shown go
 * back with the form, so the server records the documents the payer saw (and asks again when the
 * provider changed them meanwhile).
 */
function consentBlock(v: PayView, method: string, errors: FieldErrors): Html | '' {
  const c = v.contracts;
  if (!c || !v.consentMethods.includes(method as PaymentMethod)) return '';
  return providerConsentBlock(c, consentField(method), errors);
}

/**
 * The provider's two contracts, linked, their permalinks as hidden fields and the required box the
 * payer ticks (Ley 1581 de 2012), with the checkbox `id`; `words` says what the provider does (a
 * payment by default; a card saved on the connect-link page).
 */
export function providerConsentBlock(
  c: ShownContracts,
  id: string,
  errors: FieldErrors,
  words: { intro: string; purpose: string } = {
    intro: `Este pago lo procesa ${c.provider}. Antes de pagar, lee sus`,
    purpose: 'para procesar este pago',
  },
): Html {
  return html`<div class="field consent">
<input type="hidden" name="terms_permalink" value="${c.permalink}">
<input type="hidden" name="personal_data_permalink" value="${c.personalDataPermalink}">
<p class="small">${words.intro} <a href="${c.permalink}" target="_blank" rel="noopener noreferrer">términos y condiciones${NEW_TAB}</a> y su <a href="${c.personalDataPermalink}" target="_blank" rel="noopener noreferrer">autorización para el tratamiento de datos personales${NEW_TAB}</a>.</p>
<label class="check" for="${id}"><input type="checkbox" id="${id}" name="consent" value="1" required aria-describedby="${id}-error"${invalid(id, errors)}><span>Acepto los términos y condiciones de ${c.provider} y autorizo el tratamiento de mis datos personales ${words.purpose}, conforme a la Ley 1581 de 2012.</span></label>
${fieldError(id, errors)}
</div>`;
}

/** A method through a provider whose contracts could not be read just now: no form (the payer could not accept them). */
function contractsMissing(v: PayView, method: string): Html | '' {
  if (v.contracts || !v.consentMethods.includes(method as PaymentMethod)) return '';
  return html`<p class="notice info" role="status">No pudimos cargar los términos del medio de pago, que debes aceptar antes de pagar. Actualiza la página en unos minutos o elige otro medio. No se hizo ningún cobro.</p>`;
}

/** Why a card form through a provider cannot be used on this payment (it files the payment under the payer's e-mail). */
export const CARD_NEEDS_EMAIL =
  'Este medio de pago necesita el correo del pagador y este cobro no lo tiene. Usa otro medio o pide a la empresa un enlace con tu correo.';

/** Whether the page shows the card form that tokenizes in the browser (and so loads its script). */
function tokenizes(v: PayView): boolean {
  return (
    v.card?.mode === 'browser' &&
    v.payment.status !== 'in_progress' &&
    v.chosenAmount !== null &&
    v.available.includes('card') &&
    v.payment.email !== null &&
    !contractsMissing(v, 'card')
  );
}

/**
 * The card form of a provider that tokenizes in the browser (docs/pages.md "Live card payments:
 * tokenized in the browser"): the card inputs have no `name`, so no form post can carry them;
 * card-script.ts sends them to the provider and fills `card_token`, `card_brand`, `card_last4`.
 * Without JavaScript the form explains that it needs it.
 */
function tokenizedCardForm(v: PayView, payLabel: string, t: { url: string; publicKey: string }): Html {
  const mine = v.form?.method === 'card' ? v.form : null;
  const errors = mine?.errors ?? {};
  const values = mine?.values ?? {};
  if (!v.payment.email) return html`<p class="notice info" role="status">${CARD_NEEDS_EMAIL}</p>`;
  const missing = contractsMissing(v, 'card');
  if (missing) return missing;
  return html`<form method="post" action="/pay/${v.payment.id}/card" id="form-card" novalidate data-tokenize data-token-url="${t.url}" data-public-key="${t.publicKey}">
${hidden(v)}
<input type="hidden" name="card_token" value="">
<input type="hidden" name="card_brand" value="">
<input type="hidden" name="card_last4" value="">
${errorSummary(errors, CARD_LABELS, mine?.general)}
<noscript><p class="notice info">Para pagar con tarjeta necesitas activar JavaScript en tu navegador: así los datos de tu tarjeta van directo al medio de pago, sin pasar por nuestro servidor. También puedes elegir otro medio de pago.</p></noscript>
<p class="small muted">Los datos de tu tarjeta van directo al medio de pago que procesa el cobro; ${v.companyName} y Recaudo no los reciben.</p>
<p class="field-error" id="card-status" role="alert"></p>
<div class="field">
<label for="card_number">Número de la tarjeta</label>
<span class="hint" id="card_number-hint">El número largo del frente de la tarjeta.</span>
<input id="card_number" inputmode="numeric" autocomplete="cc-number" maxlength="23" required aria-describedby="${describedBy('card_number', true)}"${invalid('card_number', errors)}>
<p class="field-error" id="card_number-error" aria-live="polite">${errors.card_number ?? ''}</p>
</div>
<fieldset aria-describedby="exp-hint">
<legend>Fecha de vencimiento</legend>
<span class="hint" id="exp-hint">Como aparece en la tarjeta: mes y año (MM / AA).</span>
<div class="row">
<div><label for="exp_month">Mes</label><input id="exp_month" inputmode="numeric" autocomplete="cc-exp-month" maxlength="2" required aria-describedby="exp_month-error"><p class="field-error" id="exp_month-error" aria-live="polite"></p></div>
<div><label for="exp_year">Año</label><input id="exp_year" inputmode="numeric" autocomplete="cc-exp-year" maxlength="4" required aria-describedby="exp_year-error"><p class="field-error" id="exp_year-error" aria-live="polite"></p></div>
</div>
</fieldset>
<div class="field">
<label for="cvv">Código de seguridad (CVV)</label>
<span class="hint" id="cvv-hint">3 dígitos al respaldo de la tarjeta (4 al frente en American Express).</span>
<input id="cvv" inputmode="numeric" autocomplete="cc-csc" maxlength="4" required aria-describedby="${describedBy('cvv', true)}">
<p class="field-error" id="cvv-error" aria-live="polite"></p>
</div>
<div class="field">
<label for="holder_name">Nombre del titular</label>
<input id="holder_name" name="holder_name" autocomplete="cc-name" autocapitalize="characters" maxlength="100" required value="${values.holder_name ?? ''}" aria-describedby="holder_name-error"${invalid('holder_name', errors)}>
<p class="field-error" id="holder_name-error" aria-live="polite">${errors.holder_name ?? ''}</p>
</div>
${consentBlock(v, 'card', errors)}
<button type="submit" data-busy="Procesando pago…">${payLabel}</button>
</form>`;
}

function cardForm(v: PayView, payLabel: string): Html {
  const mine = v.form?.method === 'card' ? v.form : null;
  const errors = mine?.errors ?? {};
  const values = mine?.values ?? {};
  const missing = contractsMissing(v, 'card');
  if (missing) return missing;
  return html`<form method="post" action="/pay/${v.payment.id}/card" id="form-card" novalidate data-card-form>
${hidden(v)}
${errorSummary(errors, CARD_LABELS, mine?.general)}
<div class="field">
<label for="card_number">Número de la tarjeta</label>
<span class="hint" id="card_number-hint">El número largo del frente de la tarjeta.</span>
<input id="card_number" name="card_number" inputmode="numeric" autocomplete="cc-number" maxlength="23" required aria-describedby="${describedBy('card_number', true)}"${invalid('card_number', errors)}>
${fieldError('card_number', errors)}
</div>
<fieldset aria-describedby="exp-hint">
<legend>Fecha de vencimiento</legend>
<span class="hint" id="exp-hint">Como aparece en la tarjeta: mes y año (MM / AA).</span>
<div class="row">
<div><label for="exp_month">Mes</label><input id="exp_month" name="exp_month" inputmode="numeric" autocomplete="cc-exp-month" maxlength="2" required value="${values.exp_month ?? ''}" aria-describedby="exp_month-error"${invalid('exp_month', errors)}>${fieldError('exp_month', errors)}</div>
<div><label for="exp_year">Año</label><input id="exp_year" name="exp_year" inputmode="numeric" autocomplete="cc-exp-year" maxlength="4" required value="${values.exp_year ?? ''}" aria-describedby="exp_year-error"${invalid('exp_year', errors)}>${fieldError('exp_year', errors)}</div>
</div>
</fieldset>
<div class="field">
<label for="cvv">Código de seguridad (CVV)</label>
<span class="hint" id="cvv-hint">3 dígitos al respaldo de la tarjeta (4 al frente en American Express).</span>
<input id="cvv" name="cvv" inputmode="numeric" autocomplete="cc-csc" maxlength="4" required aria-describedby="${describedBy('cvv', true)}"${invalid('cvv', errors)}>
${fieldError('cvv', errors)}
</div>
<div class="field">
<label for="holder_name">Nombre del titular</label>
<input id="holder_name" name="holder_name" autocomplete="cc-name" autocapitalize="characters" maxlength="100" required value="${values.holder_name ?? ''}" aria-describedby="holder_name-error"${invalid('holder_name', errors)}>
${fieldError('holder_name', errors)}
</div>
${consentBlock(v, 'card', errors)}
<button type="submit" data-busy="Procesando pago…">${payLabel}</button>
</form>`;
}

function walletForm(v: PayView, method: 'walleta' | 'walletb', payLabel: string): Html {
  const mine = v.form?.method === method ? v.form : null;
  const errors = mine?.errors ?? {};
  const id = `${method}-phone`;
  const consent = consentField(method);
  const fieldErrors: FieldErrors = { ...(errors.phone ? { [id]: errors.phone } : {}), ...(errors[consent] ? { [consent]: errors[consent] } : {}) };
  const missing = contractsMissing(v, method);
  if (missing) return missing;
  return html`<form method="post" action="/pay/${v.payment.id}/${method}" id="form-${method}">
${hidden(v)}
${errorSummary(fieldErrors, { [id]: 'Celular', [consent]: 'Autorización' }, mine?.general)}
<p class="small">Te enviaremos una solicitud de pago a la app de ${METHOD_NAMES[method]}. Apruébala allí.</p>
<div class="field">
<label for="${id}">Número de celular registrado en ${METHOD_NAMES[method]}</label>
<span class="hint" id="${id}-hint">Ejemplo: 300 123 4567${v.payment.environment === 'test' ? ' · Pruebas: 399 111 1111 aprueba, 399 222 2222 rechaza' : ''}</span>
<input id="${id}" name="phone" type="tel" inputmode="tel" autocomplete="tel" maxlength="20" required value="${mine?.values.phone ?? ''}" aria-describedby="${describedBy(id, true)}"${invalid(id, fieldErrors)}>
${fieldError(id, fieldErrors)}
</div>
${consentBlock(v, method, fieldErrors)}
<button type="submit" data-busy="Enviando solicitud…">${payLabel}</button>
</form>`;
}

const IDENTITY_LABELS = {
  full_name: 'Nombre',
  person_type: 'Tipo de persona',
  document_type: 'Tipo de documento',
  document_number: 'Número de documento',
  payer_phone: 'Celular',
  'consent-banklink': 'Autorización',
};

/** The payer's mobile, which PSE through a connector needs when the payment has none. */
function phoneField(values: Record<string, string>, errors: FieldErrors): Html {
  return html`<div class="field">
<label for="payer_phone">Tu número de celular</label>
<span class="hint" id="payer_phone-hint">El medio de pago lo pide para este pago por PSE. Ejemplo: 300 123 4567</span>
<input id="payer_phone" name="payer_phone" type="tel" inputmode="tel" autocomplete="tel" maxlength="20" required value="${values.payer_phone ?? ''}" aria-describedby="${describedBy('payer_phone', true)}"${invalid('payer_phone', errors)}>
${fieldError('payer_phone', errors)}
</div>`;
}

/** The payer's identity PSE asks for (a connector's bank session): who pays, and their document. */
function identityFields(values: Record<string, string>, errors: FieldErrors): Html {
  const option = (name: string, value: string, label: string) =>
    html`<option value="${value}"${values[name] === value ? raw(' selected') : ''}>${label}</option>`;
  return html`<div class="field">
<label for="full_name">Nombre del titular de la cuenta</label>
<input id="full_name" name="full_name" autocomplete="name" maxlength="100" required value="${values.full_name ?? ''}" aria-describedby="full_name-error"${invalid('full_name', errors)}>
${fieldError('full_name', errors)}
</div>
<div class="field">
<label for="person_type">Pagas como</label>
<select id="person_type" name="person_type" required aria-describedby="person_type-error"${invalid('person_type', errors)}>
${option('person_type', 'natural', 'Persona natural')}
${option('person_type', 'company', 'Empresa')}
</select>
${fieldError('person_type', errors)}
</div>
<div class="field">
<label for="document_type">Tipo de documento</label>
<select id="document_type" name="document_type" required aria-describedby="document_type-error"${invalid('document_type', errors)}>
${option('document_type', 'CC', 'Cédula de ciudadanía')}
${option('document_type', 'CE', 'Cédula de extranjería')}
${option('document_type', 'NIT', 'NIT')}
${option('document_type', 'PASSPORT', 'Pasaporte')}
</select>
${fieldError('document_type', errors)}
</div>
<div class="field">
<label for="document_number">Número de documento</label>
<input id="document_number" name="document_number" inputmode="numeric" autocomplete="off" maxlength="20" required value="${values.document_number ?? ''}" aria-describedby="document_number-error"${invalid('document_number', errors)}>
${fieldError('document_number', errors)}
</div>`;
}

function banklinkForm(v: PayView): Html {
  const mine = v.form?.method === 'banklink' ? v.form : null;
  const errors: FieldErrors = mine?.errors ?? {};
  const values = mine?.values ?? {};
  const missing = contractsMissing(v, 'banklink');
  if (missing) return missing;
  return html`<form method="post" action="/pay/${v.payment.id}/banklink" id="form-banklink">
${hidden(v)}
${errorSummary(errors, { bank: 'Banco', ...IDENTITY_LABELS }, mine?.general)}
<p class="small">Pagas desde la cuenta de ahorros o corriente de tu banco. Te llevaremos a la página de tu banco y volverás aquí al terminar.</p>
<div class="field">
<label for="bank">Tu banco</label>
<select id="bank" name="bank" required aria-describedby="bank-error"${invalid('bank', errors)}>
<option value="">Elige tu banco</option>
${v.banks.map((b) => html`<option value="${b.id}"${values.bank === b.id ? raw(' selected') : ''}>${b.name}</option>`)}
</select>
${fieldError('bank', errors)}
</div>
${v.banklinkIdentity ? identityFields(values, errors) : ''}
${v.banklinkIdentity && v.askPhone ? phoneField(values, errors) : ''}
${consentBlock(v, 'banklink', errors)}
<button type="submit">Ir a mi banco</button>
</form>`;
}

function rtkeyForm(v: PayView): Html {
  const mine = v.form?.method === 'rtkey' ? v.form : null;
  const errors = mine?.errors ?? {};
  const missing = contractsMissing(v, 'rtkey');
  if (missing) return missing;
  return html`<form method="post" action="/pay/${v.payment.id}/rtkey" id="form-rtkey">
${hidden(v)}
${errorSummary(errors, { 'consent-rtkey': 'Autorización' }, mine?.general)}
<p class="small">Genera un código QR y escanéalo con la app de tu banco o billetera. El pago llega al instante.</p>
${consentBlock(v, 'rtkey', errors)}
<button type="submit">Generar código QR</button>
</form>`;
}

function amountStep(v: PayView): Html | '' {
  const p = v.payment;
  const d = due(p);
  const open = d === null;
  if (!open && !(p.partial_enabled && d > attemptMinimum(p))) return '';
  const min = attemptMinimum(p);
  const max = open ? v.openMax : d;
  const chosen = v.chosenAmount;
  const errors: FieldErrors = v.amountError ? { monto: v.amountError } : {};
  const hint = max !== null ? `Desde ${money(min, p.currency)} hasta ${money(max, p.currency)}.` : `Mínimo ${money(min, p.currency)}.`;
  const chosenLine = chosen !== null && !v.amountError ? html`<p>Vas a pagar <strong>${money(chosen, p.currency)}</strong>.</p>` : '';
  return html`<section class="card" aria-labelledby="monto-h">
<h2 id="monto-h">${open ? '¿Cuánto quieres pagar?' : '¿Quieres pagar otro monto?'}</h2>
${chosenLine}
${errorSummary(errors, { monto: 'Monto' })}
<form method="get" action="/pay/${p.id}" id="form-monto">
<div class="field">
<label for="monto">Monto en ${p.currency === 'COP' ? 'pesos' : p.currency}</label>
<span class="hint" id="monto-hint">${hint}</span>
<input id="monto" name="monto" inputmode="decimal" autocomplete="off" required value="${v.amountInput}" aria-describedby="${describedBy('monto', true)}"${invalid('monto', errors)}>
${fieldError('monto', errors)}
</div>
<button type="submit" class="secondary">${open ? 'Continuar' : 'Usar este monto'}</button>
</form>
</section>`;
}

function methods(v: PayView): Html {
  const p = v.payment;
  const offered = ALL_METHODS.filter((m) => p.allows.includes(m) && v.available.includes(m));
  if (offered.length === 0) {
    return html`<section class="notice info" aria-labelledby="metodos-h">
<h2 id="metodos-h">Pago en línea no disponible todavía</h2>
<p>Los medios de pago en línea de este cobro aún no están habilitados para cobros reales. Comunícate con ${v.companyName} para saber cómo pagar este cobro.</p>
</section>`;
  }
  if (v.chosenAmount === null) {
    return html`<p class="muted">Escribe el monto para ver los medios de pago.</p>`;
  }
  const payLabel = `Pagar ${money(v.chosenAmount, p.currency)}`;
  const openMethod = v.form?.method ?? offered[0];
  const body: Record<string, () => Html> = {
    card: () => (v.card?.mode === 'browser' ? tokenizedCardForm(v, payLabel, v.card) : cardForm(v, payLabel)),
    banklink: () => banklinkForm(v),
    rtkey: () => rtkeyForm(v),
    walleta: () => walletForm(v, 'walleta', `${payLabel} con ${METHOD_NAMES.walleta}`),
    walletb: () => walletForm(v, 'walletb', `${payLabel} con ${METHOD_NAMES.walletb}`),
  };
  return html`<section aria-labelledby="metodos-h">
<h2 id="metodos-h">Elige cómo pagar</h2>
${offered.map(
  (m) => html`<details class="method" id="metodo-${m}"${m === openMethod ? raw(' open') : ''}>
<summary>${METHOD_NAMES[m]}</summary>
<div>${body[m]()}</div>
</details>`,
)}
</section>`;
}

function inProgress(v: PayView): Html {
  const open = v.intents.find((i) => i.status === 'in_progress');
  if (open && isAbandonable(open)) {
    return html`<section class="card" aria-labelledby="curso-h">
<h2 id="curso-h">Tienes un pago sin terminar</h2>
<p>Empezaste a pagar ${money(open.amount, open.currency)} con ${METHOD_NAMES[open.method] ?? open.method}.</p>
<div class="actions">
<a class="button" href="/pay/${v.payment.id}/attempts/${open.id}">Continuar ese pago</a>
<form method="post" action="/pay/${v.payment.id}/attempts/${open.id}">
<input type="hidden" name="token" value="${v.token}">
<button type="submit" name="action" value="cancel" class="secondary">Cancelar y elegir otro medio</button>
</form>
</div>
</section>`;
  }
  return html`<section class="card state" aria-labelledby="curso-h" role="status">
${icons.clock}
<h2 id="curso-h">Tu pago está en proceso</h2>
<p>Estamos esperando la confirmación del medio de pago${open ? html` por ${money(open.amount, open.currency)}` : ''}. No intentes pagar de nuevo: actualiza esta página en unos minutos.</p>
<p><a href="/pay/${v.payment.id}">Actualizar</a></p>
</section>`;
}

/** Inline script: client-side card checks (the server checks again) and a busy state on submit. */
const SCRIPT = `
(function(){
  var summary=document.querySelector('[data-error-summary]');
  if(summary){summary.focus();}
  function luhn(n){var s=0,d=false;for(var i=n.length-1;i>=0;i--){var x=+n[i];if(d){x*=2;if(x>9)x-=9;}s+=x;d=!d;}return n.length>0&&s%10===0;}
  function show(form,id,msg){var input=form.querySelector('#'+id),out=form.querySelector('#'+id+'-error');if(!input||!out)return;out.textContent=msg||'';if(msg)input.setAttribute('aria-invalid','true');else input.removeAttribute('aria-invalid');}
  document.querySelectorAll('form:not([data-tokenize])').forEach(function(form){
    form.addEventListener('submit',function(ev){
      if(form.hasAttribute('data-card-form')){
        var n=form.card_number.value.replace(/[\\s-]/g,''),m=+form.exp_month.value,y=form.exp_year.value.trim(),c=form.cvv.value.trim(),h=form.holder_name.value.trim();
        if(/^\\d{2}$/.test(y))y='20'+y;
        var now=new Date(),errs={};
        if(!n)errs.card_number='Escribe el número de la tarjeta.';else if(!/^\\d{12,19}$/.test(n)||!luhn(n))errs.card_number='El número de la tarjeta no es válido. Revísalo.';
        if(!(m>=1&&m<=12))errs.exp_month='Elige el mes de vencimiento.';else if(!/^\\d{4}$/.test(y))errs.exp_year='Elige el año de vencimiento.';else if(+y*12+m-1<now.getFullYear()*12+now.getMonth())errs.exp_year='La tarjeta está vencida.';
        if(!(/^3[47]/.test(n)?/^\\d{4}$/:/^\\d{3}$/).test(c))errs.cvv='Revisa el código de seguridad.';
        if(h.length<2)errs.holder_name='Escribe el nombre como aparece en la tarjeta.';
        ['card_number','exp_month','exp_year','cvv','holder_name'].forEach(function(id){show(form,id,errs[id]);});
        var first=Object.keys(errs)[0];
        if(first){ev.preventDefault();form.querySelector('#'+first).focus();return;}
      }
      var b=form.querySelector('button[type=submit][data-busy]');
      if(b){setTimeout(function(){b.disabled=true;b.textContent=b.getAttribute('data-busy');},0);}
    });
  });
})();
`;

export function payPage(v: PayView): RenderedPage {
  const p = v.payment;
  const body = html`${testBanner(p)}
${summary(v)}
<div id="resultado" aria-live="polite">${flashNotice(v)}</div>
${p.status === 'in_progress' ? inProgress(v) : html`${amountStep(v)}${methods(v)}`}`;
  // A card form that tokenizes in the browser loads the tokenizer, which may call only the provider.
  const tokenizing = tokenizes(v) && v.card?.mode === 'browser' ? v.card : null;
  return page({
    title: `${p.title} · ${v.companyName}`,
    company: v.companyName,
    body,
    script: SCRIPT,
    scripts: tokenizing ? [{ src: CARD_SCRIPT_PATH, integrity: CARD_SCRIPT_INTEGRITY }] : [],
    connectOrigins: tokenizing ? [tokenizing.origin] : [],
  });
}

/** Final states: paid, expired, cancelled, refunded, disputed. */
export function finalPage(v: { payment: PaymentRow; companyName: string; now: Date; approvedIntent: IntentRow | null }): RenderedPage {
  const p = v.payment;
  let body: Html;
  const paidFacts = () => {
    const i = v.approvedIntent;
    const facts: Html[] = [html`<div><dt>Concepto</dt><dd>${p.title}</dd></div>`];
    if (p.amount !== null) facts.push(html`<div><dt>Valor</dt><dd>${money(p.amount, p.currency)}</dd></div>`);
    else if (p.amount_paid > 0n) facts.push(html`<div><dt>Valor</dt><dd>${money(p.amount_paid, p.currency)}</dd></div>`);
    if (p.reference) facts.push(html`<div><dt>Referencia</dt><dd>${p.reference}</dd></div>`);
    if (p.paid_at) facts.push(html`<div><dt>Fecha</dt><dd>${when(p.paid_at)}</dd></div>`);
    if (i)
      facts.push(
        html`<div><dt>Medio de pago</dt><dd>${METHOD_NAMES[i.method] ?? i.method}</dd></div>`,
        html`<div><dt>Número de operación</dt><dd>${i.id}</dd></div>`,
      );
    return html`<dl class="facts">${facts}</dl>`;
  };
  const back =
    p.redirect_url && /^https?:\/\//i.test(p.redirect_url) ? html`<p><a class="button" href="${p.redirect_url}">Volver al comercio</a></p>` : '';
  switch (p.status) {
    case 'approved':
    case 'paid_externally':
      body = html`<section class="card state ok" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">Pago recibido</h1>
<p>${p.status === 'paid_externally' ? `${v.companyName} registró este cobro como pagado.` : `Tu pago a ${v.companyName} fue aprobado. ¡Gracias!`}</p>
${paidFacts()}
${back}
</section>`;
      break;
    case 'refunded':
      body = html`<section class="card state" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">Pago reembolsado</h1>
<p>Este cobro se pagó y luego ${v.companyName} devolvió el dinero. No tienes que pagar nada por este enlace.</p>
${paidFacts()}
</section>`;
      break;
    case 'disputed':
      body = html`<section class="card state" role="status" aria-labelledby="estado-h">${icons.clock}
<h1 id="estado-h">Pago en revisión</h1>
<p>Este cobro ya fue pagado y el pago está en revisión por una disputa. No tienes que pagar de nuevo.</p>
${paidFacts()}
</section>`;
      break;
    case 'cancelled':
      body = html`<section class="card state error" role="status" aria-labelledby="estado-h">${icons.error}
<h1 id="estado-h">Este cobro fue cancelado</h1>
<p>${v.companyName} canceló este cobro. No tienes que pagar nada por este enlace.</p>
${p.amount_paid > 0n ? html`<p>Antes de la cancelación pagaste ${money(p.amount_paid, p.currency)}.</p>` : ''}
<p class="small muted">${p.title}</p>
</section>`;
      break;
    default: // expired (or past its expiry before the job ran)
      body = html`<section class="card state error" role="status" aria-labelledby="estado-h">${icons.clock}
<h1 id="estado-h">Este enlace de pago venció</h1>
<p>${sentence(p.expires_at ? `El plazo para pagar terminó el ${when(p.expires_at)}` : 'El plazo para pagar terminó')} Si todavía necesitas pagar, pide a ${v.companyName} un enlace nuevo.</p>
${p.amount_paid > 0n ? html`<p>Alcanzaste a pagar ${money(p.amount_paid, p.currency)}.</p>` : ''}
<p class="small muted">${p.title}</p>
</section>`;
  }
  return page({ title: `${p.title} · ${v.companyName}`, company: v.companyName, body: html`${testBanner(p, false)}${body}` });
}

/**
 * What the sandbox bank and QR pages show, for a payment's attempt or a banklink / rtkey charge
 * (routes.ts builds it from either): who collects, what for, how much, the operation number, and
 * where the form posts.
 */
export interface WaitingView {
  companyName: string;
  title: string;
  amount: bigint;
  currency: string;
  /** The operation number shown to the payer (the attempt or the charge). */
  operation: string;
  /** Where the form posts (with the form token). */
  action: string;
  token: string;
  environment: 'test' | 'live';
}

/** The sandbox bank (banklink): the payer approves or rejects the debit, then returns. */
export function bankPage(v: WaitingView & { bankName: string | null; returnsTo: string }): RenderedPage {
  const body = html`<div class="banner" role="note"><strong>Banco de pruebas.</strong> Esta página simula la de tu banco; no se mueve dinero real.</div>
<section class="card bank" aria-labelledby="banco-h">
<p class="muted small">${v.bankName ?? 'Banco de pruebas'} · Pagos en línea</p>
<h1 id="banco-h">Autoriza el pago</h1>
<dl class="facts">
<div><dt>Comercio</dt><dd>${v.companyName}</dd></div>
<div><dt>Concepto</dt><dd>${v.title}</dd></div>
<div><dt>Valor</dt><dd>${money(v.amount, v.currency)}</dd></div>
<div><dt>Número de operación</dt><dd>${v.operation}</dd></div>
</dl>
<form method="post" action="${v.action}">
<input type="hidden" name="token" value="${v.token}">
<div class="actions two">
<button type="submit" name="action" value="approve">Aprobar</button>
<button type="submit" name="action" value="reject" class="danger">Rechazar</button>
</div>
</form>
<p class="small muted">${v.returnsTo}</p>
</section>`;
  return page({ title: `Banco de pruebas · ${v.title}`, body });
}

/**
 * The instant-key QR with its EMVCo payload and the sandbox's "Simular pago". `checkUrl`: the
 * "Ya pagué" link; `cancellable`: a payment's attempt can be abandoned for another method.
 */
export function qrPage(
  v: WaitingView & { banner: Html | ''; payload: string; svg: string; expiresAt: Date; checkUrl: string; cancellable: boolean },
): RenderedPage {
  const body = html`${v.banner}
<section class="card" aria-labelledby="qr-h">
<h1 id="qr-h">Escanea para pagar ${money(v.amount, v.currency)}</h1>
<p>Abre la app de tu banco o billetera, elige pagar con QR o llave y escanea este código.</p>
${raw(v.svg)}
<p class="small">${sentence(`El código vence el ${when(v.expiresAt)}`)}</p>
<div class="field">
<label for="payload">Código para copiar (si no puedes escanear)</label>
<textarea id="payload" class="payload" readonly rows="4">${v.payload}</textarea>
</div>
<form method="post" action="${v.action}">
<input type="hidden" name="token" value="${v.token}">
<div class="actions">
${v.environment === 'test' ? html`<button type="submit" name="action" value="approve">Simular pago (pruebas)</button>` : ''}
<a class="button secondary" href="${v.checkUrl}">Ya pagué: revisar el estado</a>
${v.cancellable ? html`<button type="submit" name="action" value="cancel" class="danger">Cancelar y elegir otro medio</button>` : ''}
</div>
</form>
</section>`;
  return page({ title: `Pagar con QR · ${v.title}`, company: v.companyName, body });
}

/** The test banner of a QR charge (a payment's page lists its own methods' test data instead). */
export function chargeTestBanner(environment: 'test' | 'live'): Html | '' {
  if (environment !== 'test') return '';
  return html`<div class="banner" role="note"><strong>Modo de prueba.</strong> No se mueve dinero real. El botón «Simular pago» hace de la app del banco.</div>`;
}

/**
 * A banklink or rtkey charge that no longer waits for the payer: paid, failed (declined, expired,
 * cancelled) or refunded, with a way back to the merchant when there is one.
 */
export function chargeFinalPage(v: {
  companyName: string;
  title: string;
  amount: bigint;
  currency: string;
  operation: string;
  status: 'paid' | 'failed' | 'refunded' | 'processing' | 'created';
  remarks: string | null;
  method: string;
  paidAt: Date | null;
  backUrl: string | null;
  environment: 'test' | 'live';
}): RenderedPage {
  const facts = html`<dl class="facts">
<div><dt>Concepto</dt><dd>${v.title}</dd></div>
<div><dt>Valor</dt><dd>${money(v.amount, v.currency)}</dd></div>
${v.paidAt ? html`<div><dt>Fecha</dt><dd>${when(v.paidAt)}</dd></div>` : ''}
<div><dt>Medio de pago</dt><dd>${METHOD_NAMES[v.method] ?? v.method}</dd></div>
<div><dt>Número de operación</dt><dd>${v.operation}</dd></div>
</dl>`;
  const back = v.backUrl ? html`<p><a class="button" href="${v.backUrl}">Volver al comercio</a></p>` : '';
  let body: Html;
  if (v.status === 'paid') {
    body = html`<section class="card state ok" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">Pago recibido</h1>
<p>Tu pago a ${v.companyName} fue aprobado. ¡Gracias!</p>
${facts}${back}
</section>`;
  } else if (v.status === 'refunded') {
    body = html`<section class="card state" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">Pago reembolsado</h1>
<p>Este pago se recibió y luego ${v.companyName} devolvió el dinero.</p>
${facts}${back}
</section>`;
  } else if (v.status === 'failed') {
    const [heading, text] =
      v.remarks === 'EXPIRED'
        ? [
            'Este pago venció',
            `El plazo para pagar terminó sin que se completara el pago. Si todavía necesitas pagar, pide a ${v.companyName} un enlace nuevo.`,
          ]
        : v.remarks === 'CANCELLED'
          ? ['Este cobro fue cancelado', `${v.companyName} canceló este cobro. No tienes que pagar nada por este enlace.`]
          : ['Tu pago no fue aprobado', `${declineText(v.remarks)} No se hizo ningún cobro.`];
    body = html`<section class="card state error" role="alert" aria-labelledby="estado-h">${icons.error}
<h1 id="estado-h">${heading}</h1>
<p>${text}</p>
${facts}${back}
</section>`;
  } else {
    // Open, but not for the payer here (a live charge with no online rail yet).
    body = html`<section class="card state" role="status" aria-labelledby="estado-h">${icons.clock}
<h1 id="estado-h">Pago en línea no disponible todavía</h1>
<p>El pago por este medio aún no está habilitado para cobros reales. Comunícate con ${v.companyName} para saber cómo pagar. No se hizo ningún cobro.</p>
${facts}${back}
</section>`;
  }
  const banner =
    v.environment === 'test' ? html`<div class="banner" role="note"><strong>Modo de prueba.</strong> No se mueve dinero real.</div>` : '';
  return page({ title: `${v.title} · ${v.companyName}`, company: v.companyName, body: html`${banner}${body}` });
}

/** Spanish pages for errors: unknown payment (404), refused form (403), anything else. */
export function messagePage(opts: { title: string; heading: string; text: string; link?: { href: string; label: string } }): RenderedPage {
  const body = html`<section class="card state error" aria-labelledby="msg-h">${icons.error}
<h1 id="msg-h">${opts.heading}</h1>
<p>${opts.text}</p>
${opts.link ? html`<p><a href="${opts.link.href}">${opts.link.label}</a></p>` : ''}
</section>`;
  return page({ title: opts.title, body });
}

export function notFoundPage(): RenderedPage {
  return messagePage({
    title: 'Cobro no encontrado',
    heading: 'No encontramos este cobro',
    text: 'El enlace puede estar incompleto o mal copiado. Revisa el mensaje en el que te llegó o pide a la empresa un enlace nuevo.',
    link: { href: '/portal', label: 'Buscar un cobro por su referencia' },
  });
}

export interface PortalView {
  reference: string;
  company: string | null;
  error: string | null;
  searched: boolean;
  hits: { id: string; title: string; status: string; amountText: string; companyName: string; expires: string | null; test: boolean }[];
}

export function portalPage(v: PortalView): RenderedPage {
  const errors: FieldErrors = v.error ? { referencia: v.error } : {};
  const results = !v.searched
    ? ''
    : v.hits.length === 0
      ? html`<div class="notice info" role="status"><p>No encontramos cobros con la referencia <strong>${v.reference}</strong>. Revisa que esté bien escrita, tal como aparece en tu factura o mensaje.</p></div>`
      : html`<section class="card" aria-labelledby="res-h" role="status">
<h2 id="res-h">${v.hits.length === 1 ? 'Encontramos 1 cobro' : `Encontramos ${v.hits.length} cobros`}</h2>
<ul class="results">
${v.hits.map(
  (h) => html`<li>
<p class="muted small">${h.companyName}${h.test ? ' · prueba' : ''}</p>
<p><strong>${h.title}</strong></p>
<p>${h.amountText} · ${h.status}${h.expires ? ` · paga antes de ${h.expires}` : ''}</p>
<a href="/pay/${h.id}">Ver y pagar<span class="visually-hidden"> ${h.title}</span></a>
</li>`,
)}
</ul>
</section>`;
  const body = html`<section class="card" aria-labelledby="portal-h">
<h1 id="portal-h">Paga tu cobro</h1>
<p>Escribe la referencia de pago que te dio la empresa (aparece en tu factura o en el mensaje que recibiste).</p>
${errorSummary(errors, { referencia: 'Referencia' })}
<form method="get" action="/portal" role="search">
${v.company ? html`<input type="hidden" name="empresa" value="${v.company}">` : ''}
<div class="field">
<label for="referencia">Referencia de pago</label>
<span class="hint" id="referencia-hint">Entre 6 y 30 caracteres, por ejemplo FAC-2025-0012.</span>
<input id="referencia" name="referencia" autocomplete="off" autocapitalize="characters" maxlength="30" required value="${v.reference}" aria-describedby="${describedBy('referencia', true)}"${invalid('referencia', errors)}>
${fieldError('referencia', errors)}
</div>
<button type="submit">Buscar</button>
</form>
</section>
<div aria-live="polite">${results}</div>`;
  return page({
    title: 'Paga tu cobro · Recaudo',
    body,
    script: "(function(){var s=document.querySelector('[data-error-summary]');if(s)s.focus();})();",
  });
}

export { STATUS_NAMES };

// ---------------------------------------------------------------------------------------------
// The plan page (docs/subscriptions.md "Plan page")

const EVERY: Record<string, string> = {
  daily: 'cada día',
  weekly: 'cada semana',
  biweekly: 'cada dos semanas',
  monthly: 'cada mes',
  bimonthly: 'cada dos meses',
  quarterly: 'cada tres meses',
  semiannual: 'cada seis meses',
  annual: 'cada año',
};

export interface PlanView {
  id: string;
  name: string;
  description: string | null;
  amount: bigint;
  currency: string;
  frequency: string;
  cycles: number | null;
  trialDays: number;
  companyName: string;
  test: boolean;
  token: string;
  values: Record<string, string>;
  errors: FieldErrors;
}

const PLAN_LABELS: Record<string, string> = {
  first_name: 'Nombre',
  last_name: 'Apellido',
  phone: 'Celular',
  email: 'Correo electrónico',
  acepto: 'Autorización',
};

export function planPage(v: PlanView): RenderedPage {
  const terms = [
    `${money(v.amount, v.currency)} ${EVERY[v.frequency] ?? ''}`,
    v.cycles ? `durante ${v.cycles} ${v.cycles === 1 ? 'periodo' : 'periodos'}` : 'hasta que canceles',
    v.trialDays > 0 ? `con ${v.trialDays} días de prueba sin costo` : '',
  ].filter(Boolean);
  const input = (id: string, label: string, attrs: string, hint?: string) => html`<div class="field">
<label for="${id}">${label}</label>
${hint ? html`<span class="hint" id="${id}-hint">${hint}</span>` : ''}
<input id="${id}" name="${id}" ${raw(attrs)} value="${v.values[id] ?? ''}" aria-describedby="${describedBy(id, Boolean(hint))}"${invalid(id, v.errors)}>
${fieldError(id, v.errors)}
</div>`;
  const body = html`${v.test ? html`<div class="banner" role="note"><strong>Modo de prueba.</strong> Esta suscripción no cobra dinero real.</div>` : ''}
<section class="card" aria-labelledby="plan-h">
<h1 id="plan-h">${v.name}</h1>
${v.description ? html`<p>${v.description}</p>` : ''}
<p><strong>${terms.join(', ')}</strong></p>
<p class="muted small">Antes de cada fecha de pago te enviamos el enlace para pagar por WhatsApp o por correo.</p>
</section>
<section class="card" aria-labelledby="form-h">
<h2 id="form-h">Tus datos</h2>
${errorSummary(v.errors, PLAN_LABELS)}
<form method="post" action="/plan/${v.id}" novalidate>
<input type="hidden" name="token" value="${v.token}">
${input('first_name', 'Nombre', 'autocomplete="given-name" maxlength="100" required')}
${input('last_name', 'Apellido', 'autocomplete="family-name" maxlength="100"')}
${input('phone', 'Celular', 'type="tel" inputmode="tel" autocomplete="tel" maxlength="20"', 'Un celular de Colombia, por ejemplo 300 123 4567. Escribe tu celular, tu correo o ambos.')}
${input('email', 'Correo electrónico', 'type="email" autocomplete="email" maxlength="255"')}
<div class="field">
<label class="check"><input type="checkbox" id="acepto" name="acepto" value="si" aria-describedby="acepto-error"${invalid('acepto', v.errors)}${v.values.acepto ? raw(' checked') : ''}> Autorizo a ${v.companyName} a enviarme los cobros de esta suscripción.</label>
${fieldError('acepto', v.errors)}
</div>
<div class="actions"><button type="submit">Suscribirme</button></div>
</form>
</section>`;
  return page({ title: `${v.name} · ${v.companyName}`, company: v.companyName, body });
}

export function subscribedPage(v: { planName: string; companyName: string; subscriptionId: string; by: 'phone' | 'email' }): RenderedPage {
  const body = html`<section class="card state ok" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">¡Listo! Quedaste suscrito</h1>
<p>Te suscribiste a <strong>${v.planName}</strong> de ${v.companyName}. Te enviaremos el enlace de cada pago ${v.by === 'phone' ? 'a tu celular' : 'a tu correo'}.</p>
<p class="muted small">Número de suscripción: ${v.subscriptionId}</p>
</section>`;
  return page({ title: `Suscripción creada · ${v.companyName}`, company: v.companyName, body });
}
