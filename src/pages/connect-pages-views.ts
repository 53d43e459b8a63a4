import { html, icons, page, raw, type Html, type RenderedPage } from './html.ts';
import type { FieldErrors } from './sandbox.ts';
import { describedBy, errorSummary, fieldError, invalid, messagePage } from './views.ts';

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
  /** The form the payer just sent with its errors and values (never the card number or code). */
  form: { method: ConnectMethod; errors: FieldErrors; values: Record<string, string>; general?: string } | null;
}

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
  document.querySelectorAll('form').forEach(function(form){
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

function authorization(id: string, errors: FieldErrors, checked: boolean, text: string): Html {
  return html`<div class="field">
<label class="check"><input type="checkbox" id="${id}" name="${id}" value="si" aria-describedby="${id}-error"${invalid(id, errors)}${checked ? raw(' checked') : ''}> ${text}</label>
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
${offered.includes('tarjeta') ? section('tarjeta', 'Tarjeta de crédito o débito', open === 'tarjeta', cardForm(v)) : ''}
${offered.includes('billetera') ? section('billetera', v.wallets.length === 1 ? v.wallets[0].name : 'Nequi o Daviplata', open === 'billetera', walletForm(v)) : ''}
${v.accountsOffered || !wantsAccounts ? '' : html`<p class="muted small">La inscripción de cuentas bancarias y billeteras aún no está disponible aquí.</p>`}`;
  return page({ title: `Inscribe tu medio de pago · ${v.companyName}`, company: v.companyName, body, script: SCRIPT });
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
