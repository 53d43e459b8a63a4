import { html, icons, page, raw, type Html, type RenderedPage } from './html.ts';
import type { FieldErrors } from './sandbox.ts';
import { describedBy, errorSummary, fieldError, invalid, messagePage, providerConsentBlock, type ShownContracts } from './views.ts';
import { CARD_SCRIPT_INTEGRITY, CARD_SCRIPT_PATH } from './card-script.ts';

/** The connect-link page's views (docs/pages.md "Connect-link page"), on the payer pages' layout. */

export type ConnectMethod = 'cuenta' | 'tarjeta' | 'billetera';

export interface ConnectView {
  /** The link's token: the page's path. */
  linkToken: string;
  formToken: string;
  companyName: string;
  test: boolean;
  /** Banks for savings and checking accounts. */
  banks: { id: string; name: string }[];
  /** Wallets whose holder confirms with a code (Nequi, Daviplata). */
  wallets: { id: string; name: string }[];
  /** Accounts need the enrollment rail (live: a connector); without it only cards are offered. */
  accountsOffered: boolean;
  /** The link's `allows` has `card` (banks and wallets above are already the ones it allows). */
  cardOffered: boolean;
  /**
   * How the card form works: `server`, the sandbox's form (the number comes here); `browser`, a
   * connector's: the payer's browser sends the card straight to the provider's tokenization (`url`,
   * the company's `publicKey`) and the form posts only its token; `unavailable`, no card form (why, in Spanish).
   */
  cardMode: ConnectCardMode;
  /** The provider's contracts the payer accepts before saving the card (browser mode, when it needs consent); null: none to accept. */
  contracts: ShownContracts | null;
  /** The form the payer just sent with its errors and values (never the card number or code). */
  form: { method: ConnectMethod; errors: FieldErrors; values: Record<string, string>; general?: string } | null;
}

export type ConnectCardMode =
  { mode: 'server' } | { mode: 'browser'; url: string; publicKey: string; origin: string; consent: boolean } | { mode: 'unavailable'; text: string };

/** The consent box's id on the card form (card-script.ts knows it) and its error. */
export const CONNECT_CONSENT_FIELD = 'consent-card';
export const CONNECT_CONSENT_ERROR = 'Para guardar la tarjeta debes aceptar los términos y autorizar el tratamiento de tus datos personales.';
const AUTHORIZE_CARD = 'Marca la casilla para autorizar los cobros a esta tarjeta.';

const LABELS: Record<string, string> = {
  bank: 'Banco',
  account_type: 'Tipo de cuenta',
  account_number: 'Número de cuenta',
  acepto_cuenta: 'Autorización',
  card_number: 'Número de la tarjeta',
  exp_month: 'Mes de vencimiento',
  exp_year: 'Año de vencimiento',
  cvv: 'Código de seguridad',
  holder_name: 'Nombre del titular',
  acepto_tarjeta: 'Autorización',
  [CONNECT_CONSENT_FIELD]: 'Términos del medio de pago',
  wallet_bank: 'Billetera',
  wallet_phone: 'Celular',
  acepto_billetera: 'Autorización',
  otp: 'Código',
};

/** Focuses the error summary after a refused form; a busy label on submit. Everything works without it. */
const SCRIPT = `
(function(){
  var summary=document.querySelector('[data-error-summary]');
  if(summary){summary.focus();}
  document.querySelectorAll('form:not([data-tokenize])').forEach(function(form){
    form.addEventListener('submit',function(){
      var b=form.querySelector('button[type=submit][data-busy]');
      if(b){setTimeout(function(){b.disabled=true;b.textContent=b.getAttribute('data-busy');},0);}
    });
  });
})();
`;

function testBanner(test: boolean): Html | '' {
  if (!test) return '';
  return html`<div class="banner" role="note">
<strong>Modo de prueba.</strong> Nada de lo que inscribas aquí mueve dinero real.
<details><summary>Datos de prueba</summary><ul>
<li>Cuenta bancaria: cualquier número de 4 a 20 dígitos queda activa; uno que termina en 9999 es rechazado por el banco</li>
<li>Tarjeta: 4242 4242 4242 4242, cualquier fecha futura y CVV de 3 dígitos</li>
<li>Nequi o Daviplata: cualquier celular; el código de confirmación es 123456</li>
</ul></details>
</div>`;
}

function field(id: string, label: string, errors: FieldErrors, control: (attrs: Html) => Html, hint?: string): Html {
  const attrs = html`id="${id}" name="${id}" aria-describedby="${describedBy(id, Boolean(hint))}"${invalid(id, errors)}`;
  return html`<div class="field">
<label for="${id}">${label}</label>
${hint ? html`<span class="hint" id="${id}-hint">${hint}</span>` : ''}
${control(attrs)}
${fieldError(id, errors)}
</div>`;
}

function options(items: { id: string; name: string }[], selected: string | undefined, prompt: string): Html {
  return html`<option value="">${prompt}</option>${items.map((b) => html`<option value="${b.id}"${selected === b.id ? raw(' selected') : ''}>${b.name}</option>`)}`;
}

function authorization(id: string, errors: FieldErrors, checked: boolean, text: string, required?: string): Html {
  const req = required ? html` data-required="${required}"` : '';
  return html`<div class="field">
<label class="check"><input type="checkbox" id="${id}" name="${id}" value="si" aria-describedby="${id}-error"${invalid(id, errors)}${checked ? raw(' checked') : ''}${req}> ${text}</label>
${fieldError(id, errors)}
</div>`;
}

function mine(v: ConnectView, method: ConnectMethod) {
  const form = v.form?.method === method ? v.form : null;
  return { errors: form?.errors ?? {}, values: form?.values ?? {}, general: form?.general };
}

function accountForm(v: ConnectView): Html {
  const { errors, values, general } = mine(v, 'cuenta');
  const types = [
    ['SAVINGS', 'Ahorros'],
    ['CHECKING', 'Corriente'],
  ];
  return html`<form method="post" action="/connect/${v.linkToken}/cuenta" id="form-cuenta" novalidate>
<input type="hidden" name="token" value="${v.formToken}">
${errorSummary(errors, LABELS, general)}
${field('bank', 'Tu banco', errors, (a) => html`<select ${a} required>${options(v.banks, values.bank, 'Elige tu banco')}</select>`)}
${field(
  'account_type',
  'Tipo de cuenta',
  errors,
  (a) =>
    html`<select ${a} required><option value="">Elige el tipo</option>${types.map(([value, name]) => html`<option value="${value}"${values.account_type === value ? raw(' selected') : ''}>${name}</option>`)}</select>`,
)}
${field(
  'account_number',
  'Número de cuenta',
  errors,
  (a) => html`<input ${a} inputmode="numeric" autocomplete="off" maxlength="30" required value="${values.account_number ?? ''}">`,
  'De 4 a 20 dígitos, como aparece en tu banco (con o sin espacios).',
)}
${authorization(
  'acepto_cuenta',
  errors,
  values.acepto_cuenta === 'si',
  `Autorizo a ${v.companyName} a debitar de esta cuenta los pagos que le deba, y a mi banco a inscribirla para débito automático. Puedo retirar esta autorización cuando quiera.`,
)}
<button type="submit" data-busy="Inscribiendo…">Inscribir cuenta</button>
</form>`;
}

function cardForm(v: ConnectView): Html {
  const { errors, values, general } = mine(v, 'tarjeta');
  const year = new Date().getUTCFullYear();
  return html`<form method="post" action="/connect/${v.linkToken}/tarjeta" id="form-tarjeta" novalidate>
<input type="hidden" name="token" value="${v.formToken}">
${errorSummary(errors, LABELS, general)}
${field(
  'card_number',
  'Número de la tarjeta',
  errors,
  (a) => html`<input ${a} inputmode="numeric" autocomplete="cc-number" maxlength="23" required value="">`,
  'Los 15 o 16 dígitos del frente de la tarjeta.',
)}
<fieldset>
<legend>Vence</legend>
<div class="row">
<div>${field('exp_month', 'Mes (MM)', errors, (a) => html`<input ${a} inputmode="numeric" autocomplete="cc-exp-month" maxlength="2" placeholder="MM" required value="${values.exp_month ?? ''}">`)}</div>
<div>${field('exp_year', 'Año (AAAA)', errors, (a) => html`<input ${a} inputmode="numeric" autocomplete="cc-exp-year" maxlength="4" placeholder="${String(year + 3)}" required value="${values.exp_year ?? ''}">`)}</div>
</div>
</fieldset>
${field(
  'cvv',
  'Código de seguridad (CVV)',
  errors,
  (a) => html`<input ${a} inputmode="numeric" autocomplete="cc-csc" maxlength="4" required value="">`,
  '3 dígitos al respaldo (4 al frente en American Express).',
)}
${field('holder_name', 'Nombre del titular', errors, (a) => html`<input ${a} autocomplete="cc-name" maxlength="100" required value="${values.holder_name ?? ''}">`, 'Como aparece en la tarjeta.')}
${authorization(
  'acepto_tarjeta',
  errors,
  values.acepto_tarjeta === 'si',
  `Autorizo a ${v.companyName} a guardar esta tarjeta y a cobrar en ella los pagos que le deba. Puedo retirar esta autorización cuando quiera.`,
)}
<p class="small muted">No guardamos el número completo ni el código de seguridad: solo la marca y los últimos cuatro dígitos.</p>
<button type="submit" data-busy="Guardando…">Guardar tarjeta</button>
</form>`;
}

/**
 * The card form of a connector that tokenizes in the browser (docs/pages.md "Connect-link page"):
 * the card inputs have no `name`, so no form post can carry them; card-script.ts sends them to the
 * provider and fills `card_token`, `card_brand`, `card_last4`, `card_exp_month`, `card_exp_year`.
 * Without JavaScript the form explains that it needs it.
 */
function tokenizedCardForm(v: ConnectView, t: { url: string; publicKey: string; consent: boolean }): Html {
  const { errors, values, general } = mine(v, 'tarjeta');
  if (t.consent && !v.contracts) {
    return html`<p class="notice info" role="status">No pudimos cargar los términos del medio de pago, que debes aceptar antes de guardar la tarjeta. Actualiza la página en unos minutos. No se guardó nada.</p>`;
  }
  const year = new Date().getUTCFullYear();
  const input = (id: string, attrs: Html, hint: boolean) =>
    html`<input id="${id}" ${attrs} required aria-describedby="${describedBy(id, hint)}"${invalid(id, errors)}>`;
  const out = (id: string) => html`<p class="field-error" id="${id}-error" aria-live="polite">${errors[id] ?? ''}</p>`;
  return html`<form method="post" action="/connect/${v.linkToken}/tarjeta" id="form-tarjeta" novalidate data-tokenize data-token-url="${t.url}" data-public-key="${t.publicKey}" data-consent-error="${CONNECT_CONSENT_ERROR}">
<input type="hidden" name="token" value="${v.formToken}">
<input type="hidden" name="card_token" value="">
<input type="hidden" name="card_brand" value="">
<input type="hidden" name="card_last4" value="">
<input type="hidden" name="card_exp_month" value="">
<input type="hidden" name="card_exp_year" value="">
${errorSummary(errors, LABELS, general)}
<noscript><p class="notice info">Para inscribir una tarjeta necesitas activar JavaScript en tu navegador: así los datos de tu tarjeta van directo al medio de pago, sin pasar por nuestro servidor.</p></noscript>
<p class="small muted">Los datos de tu tarjeta van directo al medio de pago que la guarda; ${v.companyName} y Recaudo no los reciben.</p>
<p class="field-error" id="card-status" role="alert"></p>
<div class="field">
<label for="card_number">Número de la tarjeta</label>
<span class="hint" id="card_number-hint">Los 15 o 16 dígitos del frente de la tarjeta.</span>
${input('card_number', html`inputmode="numeric" autocomplete="cc-number" maxlength="23"`, true)}
${out('card_number')}
</div>
<fieldset>
<legend>Vence</legend>
<div class="row">
<div class="field"><label for="exp_month">Mes (MM)</label>${input('exp_month', html`inputmode="numeric" autocomplete="cc-exp-month" maxlength="2" placeholder="MM"`, false)}${out('exp_month')}</div>
<div class="field"><label for="exp_year">Año (AAAA)</label>${input('exp_year', html`inputmode="numeric" autocomplete="cc-exp-year" maxlength="4" placeholder="${String(year + 3)}"`, false)}${out('exp_year')}</div>
</div>
</fieldset>
<div class="field">
<label for="cvv">Código de seguridad (CVV)</label>
<span class="hint" id="cvv-hint">3 dígitos al respaldo (4 al frente en American Express).</span>
${input('cvv', html`inputmode="numeric" autocomplete="cc-csc" maxlength="4"`, true)}
${out('cvv')}
</div>
<div class="field">
<label for="holder_name">Nombre del titular</label>
<span class="hint" id="holder_name-hint">Como aparece en la tarjeta.</span>
<input id="holder_name" name="holder_name" autocomplete="cc-name" autocapitalize="characters" maxlength="100" required value="${values.holder_name ?? ''}" aria-describedby="${describedBy('holder_name', true)}"${invalid('holder_name', errors)}>
${out('holder_name')}
</div>
${authorization(
  'acepto_tarjeta',
  errors,
  values.acepto_tarjeta === 'si',
  `Autorizo a ${v.companyName} a guardar esta tarjeta y a cobrar en ella los pagos que le deba. Puedo retirar esta autorización cuando quiera.`,
  AUTHORIZE_CARD,
)}
${
  v.contracts
    ? providerConsentBlock(v.contracts, CONNECT_CONSENT_FIELD, errors, {
        intro: `${v.contracts.provider} guarda esta tarjeta y procesa los cobros. Antes de guardarla, lee sus`,
        purpose: 'para guardar esta tarjeta y procesar los cobros en ella',
      })
    : ''
}
<p class="small muted">Solo guardamos la marca, los últimos cuatro dígitos y la fecha de vencimiento.</p>
<button type="submit" data-busy="Guardando…">Guardar tarjeta</button>
</form>`;
}

function cardSection(v: ConnectView): Html {
  if (v.cardMode.mode === 'browser') return tokenizedCardForm(v, v.cardMode);
  if (v.cardMode.mode === 'unavailable') return html`<p class="notice info" role="status">${v.cardMode.text}</p>`;
  return cardForm(v);
}

/** Whether the page shows the card form that tokenizes in the browser (and so loads its script). */
function tokenizing(v: ConnectView): Extract<ConnectCardMode, { mode: 'browser' }> | null {
  if (!v.cardOffered || v.cardMode.mode !== 'browser') return null;
  return v.cardMode.consent && !v.contracts ? null : v.cardMode;
}

function walletForm(v: ConnectView): Html {
  const { errors, values, general } = mine(v, 'billetera');
  return html`<form method="post" action="/connect/${v.linkToken}/billetera" id="form-billetera" novalidate>
<input type="hidden" name="token" value="${v.formToken}">
${errorSummary(errors, LABELS, general)}
<p class="small">Después te pediremos el código que te llega a la app para confirmar la inscripción.</p>
${field('wallet_bank', 'Tu billetera', errors, (a) => html`<select ${a} required>${options(v.wallets, values.wallet_bank, 'Elige tu billetera')}</select>`)}
${field(
  'wallet_phone',
  'Celular registrado en la billetera',
  errors,
  (a) => html`<input ${a} type="tel" inputmode="tel" autocomplete="tel" maxlength="20" required value="${values.wallet_phone ?? ''}">`,
  'Un celular de Colombia, por ejemplo 300 123 4567.',
)}
${authorization(
  'acepto_billetera',
  errors,
  values.acepto_billetera === 'si',
  `Autorizo a ${v.companyName} a debitar de esta billetera los pagos que le deba. Puedo retirar esta autorización cuando quiera.`,
)}
<button type="submit" data-busy="Enviando…">Inscribir y recibir el código</button>
</form>`;
}

function section(id: ConnectMethod, title: string, open: boolean, body: Html): Html {
  return html`<details class="method" id="metodo-${id}"${open ? raw(' open') : ''}>
<summary>${title}</summary>
<div>${body}</div>
</details>`;
}

export function connectPage(v: ConnectView): RenderedPage {
  // The link's `allows` decides the sections; accounts also need the enrollment rail.
  const offered: ConnectMethod[] = [
    ...(v.accountsOffered && v.banks.length ? (['cuenta'] as const) : []),
    ...(v.cardOffered ? (['tarjeta'] as const) : []),
    ...(v.accountsOffered && v.wallets.length ? (['billetera'] as const) : []),
  ];
  const open: ConnectMethod = v.form?.method ?? offered[0] ?? 'tarjeta';
  const wantsAccounts = v.banks.length > 0 || v.wallets.length > 0;
  const body = html`${testBanner(v.test)}
<section class="card" aria-labelledby="titulo">
<h1 id="titulo">Inscribe tu medio de pago</h1>
<p>${v.companyName} te pide inscribir una cuenta bancaria, una billetera o una tarjeta para cobrarte sus pagos de forma automática.</p>
<p class="muted small">Elige una opción. Solo necesitas hacerlo una vez.</p>
</section>
${offered.includes('cuenta') ? section('cuenta', 'Cuenta bancaria (ahorros o corriente)', open === 'cuenta', accountForm(v)) : ''}
${offered.includes('tarjeta') ? section('tarjeta', 'Tarjeta de crédito o débito', open === 'tarjeta', cardSection(v)) : ''}
${offered.includes('billetera') ? section('billetera', v.wallets.length === 1 ? v.wallets[0].name : 'Nequi o Daviplata', open === 'billetera', walletForm(v)) : ''}
${v.accountsOffered || !wantsAccounts ? '' : html`<p class="muted small">La inscripción de cuentas bancarias y billeteras aún no está disponible aquí.</p>`}`;
  // A card form that tokenizes in the browser loads the tokenizer, which may call only the provider.
  const t = tokenizing(v);
  return page({
    title: `Inscribe tu medio de pago · ${v.companyName}`,
    company: v.companyName,
    body,
    script: SCRIPT,
    scripts: t ? [{ src: CARD_SCRIPT_PATH, integrity: CARD_SCRIPT_INTEGRITY }] : [],
    connectOrigins: t ? [t.origin] : [],
  });
}

export interface CodeView {
  action: string;
  formToken: string;
  companyName: string;
  test: boolean;
  walletName: string;
  maskedNumber: string;
  errors: FieldErrors;
}

/** The wallet account's second step: the code the holder received in the app. */
export function codePage(v: CodeView): RenderedPage {
  const body = html`${testBanner(v.test)}
<section class="card" aria-labelledby="titulo">
<h1 id="titulo">Confirma tu ${v.walletName}</h1>
<p>Te enviamos un código a la app de ${v.walletName} del celular ${v.maskedNumber}. Escríbelo aquí para terminar la inscripción.</p>
${errorSummary(v.errors, LABELS)}
<form method="post" action="${v.action}" novalidate>
<input type="hidden" name="token" value="${v.formToken}">
${field(
  'otp',
  'Código de confirmación',
  v.errors,
  (a) => html`<input ${a} inputmode="numeric" autocomplete="one-time-code" maxlength="6" required value="">`,
  `Los 6 dígitos que ves en la app de ${v.walletName}${v.test ? ' (pruebas: 123456)' : ''}.`,
)}
<button type="submit" data-busy="Confirmando…">Confirmar</button>
</form>
</section>`;
  return page({ title: `Confirma tu ${v.walletName} · ${v.companyName}`, company: v.companyName, body, script: SCRIPT });
}

/** After enrolling, without a redirect_url. */
export function enrolledPage(v: { companyName: string; what: string; note: string; again: string | null; test: boolean }): RenderedPage {
  const body = html`${testBanner(v.test)}
<section class="card state ok" role="status" aria-labelledby="estado-h">${icons.ok}
<h1 id="estado-h">¡Listo! Quedó inscrita</h1>
<p>Inscribiste <strong>${v.what}</strong> para los pagos a ${v.companyName}.</p>
<p class="muted small">${v.note}</p>
${v.again ? html`<p><a href="${v.again}">Inscribir otro medio de pago</a></p>` : ''}
</section>`;
  return page({ title: `Medio de pago inscrito · ${v.companyName}`, company: v.companyName, body });
}

export function linkNotFoundPage(): RenderedPage {
  return messagePage({
    title: 'Enlace no encontrado',
    heading: 'No encontramos este enlace',
    text: 'El enlace puede estar incompleto o mal copiado. Revisa el mensaje en el que te llegó o pide a la empresa un enlace nuevo.',
  });
}

export function linkGonePage(reason: 'used' | 'deleted', companyName: string): RenderedPage {
  return messagePage({
    title: 'Enlace no disponible',
    heading: reason === 'used' ? 'Este enlace ya se usó' : 'Este enlace ya no está disponible',
    text:
      reason === 'used'
        ? `Con este enlace ya se inscribió un medio de pago y solo servía una vez. Si necesitas inscribir otro, pide a ${companyName} un enlace nuevo.`
        : `${companyName} desactivó este enlace. Si necesitas inscribir un medio de pago, pide a la empresa un enlace nuevo.`,
  });
}
