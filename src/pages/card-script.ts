import { createHash } from 'node:crypto';

/**
 * The payer pages' card tokenizer (docs/pages.md "Live card payments: tokenized in the browser";
 * the payment page and the connect-link page): a small first-party script, served by these pages
 * from their own origin (the page's CSP allows it by the page's nonce (`script-src 'nonce-…'`
 * only) and, in `connect-src`, only the provider's origin). On a card form
 * marked `data-tokenize` it checks the card as the server-side form does, sends it from the
 * payer's browser straight to the provider's tokenization (`data-token-url`, with the company's
 * public key in `data-public-key`), and posts to Recaudo only the provider's single-use token,
 * its brand and last four (and the expiry, when the form has `card_exp_month`/`card_exp_year`),
 * the holder's name and the consent. A form may name its consent error (`data-consent-error`) and
 * add required boxes of its own (`data-required`: the error when unticked). The card inputs have no `name`, so
 * the number and the CVV can never be part of a form post, with or without this script. The
 * provider's refusals are shown in Spanish next to their field (aria-live), never its own words.
 *
 * Plain ES2017 in a string (no build step, no transpiler helpers): what is served is this text.
 */
export const CARD_SCRIPT = `(function () {
  'use strict';
  var form = document.querySelector('form[data-tokenize]');
  if (!form || !window.fetch) return;
  var url = form.getAttribute('data-token-url');
  var key = form.getAttribute('data-public-key');
  var button = form.querySelector('button[type=submit]');
  var label = button ? button.textContent : '';
  var status = document.getElementById('card-status');
  // The card's fields, the form's own required boxes, then the consent (the order errors take the focus in).
  var BOXES = Array.prototype.slice.call(form.querySelectorAll('input[type=checkbox][data-required]'));
  var FIELDS = ['card_number', 'exp_month', 'exp_year', 'cvv', 'holder_name']
    .concat(BOXES.map(function (box) { return box.id; }).filter(function (id) { return id !== 'consent-card'; }))
    .concat(['consent-card']);
  var CONSENT = form.getAttribute('data-consent-error') || 'Para pagar debes aceptar los términos y autorizar el tratamiento de tus datos personales.';
  // The provider's field names (its 422 INPUT_VALIDATION_ERROR messages), as the form's fields.
  var PROVIDER_FIELDS = { number: 'card_number', cvc: 'cvv', exp_month: 'exp_month', exp_year: 'exp_year', card_holder: 'holder_name' };
  var PROVIDER_TEXT = {
    card_number: 'El medio de pago no aceptó el número de la tarjeta. Revísalo.',
    cvv: 'El medio de pago no aceptó el código de seguridad. Revísalo.',
    exp_month: 'El medio de pago no aceptó el mes de vencimiento. Revísalo.',
    exp_year: 'El medio de pago no aceptó el año de vencimiento. Revísalo.',
    holder_name: 'Escribe el nombre completo como aparece en la tarjeta (al menos 5 letras).'
  };
  var REFUSED = 'El medio de pago no aceptó los datos de la tarjeta. Revísalos e intenta de nuevo. No se hizo ningún cobro.';
  var UNREACHABLE = 'No pudimos comunicarnos con el medio de pago. Revisa tu conexión e intenta de nuevo. No se hizo ningún cobro.';

  function el(id) { return document.getElementById(id); }
  function show(id, message) {
    var input = el(id), out = el(id + '-error');
    if (!input || !out) return;
    out.textContent = message || '';
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
  function say(message) { if (status) status.textContent = message || ''; }
  function busy(on) {
    form.setAttribute('aria-busy', on ? 'true' : 'false');
    if (!button) return;
    button.disabled = on;
    button.textContent = on ? button.getAttribute('data-busy') || label : label;
  }
  function luhn(n) {
    var sum = 0, even = false;
    for (var i = n.length - 1; i >= 0; i--) { var d = +n[i]; if (even) { d *= 2; if (d > 9) d -= 9; } sum += d; even = !even; }
    return n.length > 0 && sum % 10 === 0;
  }
  function card() {
    var year = el('exp_year').value.trim();
    if (/^\\d{2}$/.test(year)) year = '20' + year;
    return {
      number: el('card_number').value.replace(/[\\s-]/g, ''),
      month: +el('exp_month').value.trim(),
      year: year,
      cvc: el('cvv').value.trim(),
      holder: el('holder_name').value.trim().replace(/\\s+/g, ' ')
    };
  }
  function check(c) {
    var errs = {}, now = new Date();
    if (!c.number) errs.card_number = 'Escribe el número de la tarjeta.';
    else if (!/^\\d{12,19}$/.test(c.number) || !luhn(c.number)) errs.card_number = 'El número de la tarjeta no es válido. Revísalo.';
    if (!(c.month >= 1 && c.month <= 12)) errs.exp_month = 'Elige el mes de vencimiento.';
    else if (!/^\\d{4}$/.test(c.year)) errs.exp_year = 'Elige el año de vencimiento.';
    else if (+c.year * 12 + c.month - 1 < now.getFullYear() * 12 + now.getMonth()) errs.exp_year = 'La tarjeta está vencida. Revisa la fecha o usa otra tarjeta.';
    if (!(/^3[47]/.test(c.number) ? /^\\d{4}$/ : /^\\d{3}$/).test(c.cvc)) errs.cvv = 'Revisa el código de seguridad.';
    if (c.holder.length < 2) errs.holder_name = 'Escribe el nombre como aparece en la tarjeta.';
    else if (c.holder.length > 100 || /[\\d<>{}]/.test(c.holder)) errs.holder_name = 'El nombre no es válido.';
    BOXES.forEach(function (box) { if (!box.checked) errs[box.id] = box.getAttribute('data-required'); });
    var consent = el('consent-card');
    if (consent && !consent.checked) errs['consent-card'] = CONSENT;
    return errs;
  }
  function showAll(errs) {
    FIELDS.forEach(function (id) { show(id, errs[id]); });
    var first = FIELDS.filter(function (id) { return errs[id]; })[0];
    if (first) el(first).focus();
    return Boolean(first);
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (form.getAttribute('aria-busy') === 'true') return;
    say('');
    var c = card();
    if (showAll(check(c))) return;
    busy(true);
    var controller = window.AbortController ? new AbortController() : null;
    var timer = controller ? setTimeout(function () { controller.abort(); }, 30000) : null;
    fetch(url, {
      method: 'POST',
      mode: 'cors',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + key },
      body: JSON.stringify({
        number: c.number,
        cvc: c.cvc,
        exp_month: (c.month < 10 ? '0' : '') + c.month,
        exp_year: c.year.slice(-2),
        card_holder: c.holder
      }),
      signal: controller ? controller.signal : undefined
    })
      .then(function (res) {
        return res.json().catch(function () { return null; }).then(function (body) { return { status: res.status, body: body }; });
      })
      .then(function (answer) {
        if (timer) clearTimeout(timer);
        var data = answer.body && answer.body.data;
        if (answer.status >= 200 && answer.status < 300 && data && typeof data.id === 'string') {
          form.elements.card_token.value = data.id;
          form.elements.card_brand.value = typeof data.brand === 'string' ? data.brand : '';
          form.elements.card_last4.value = typeof data.last_four === 'string' ? data.last_four : '';
          if (form.elements.card_exp_month) form.elements.card_exp_month.value = String(c.month);
          if (form.elements.card_exp_year) form.elements.card_exp_year.value = c.year;
          // The token stands for the card now: nothing of it stays in the page.
          el('card_number').value = '';
          el('cvv').value = '';
          form.submit();
          return;
        }
        busy(false);
        var messages = answer.status === 422 && answer.body && answer.body.error && answer.body.error.messages;
        var errs = {};
        if (messages && typeof messages === 'object') {
          Object.keys(messages).forEach(function (name) {
            var id = PROVIDER_FIELDS[name];
            if (id) errs[id] = PROVIDER_TEXT[id];
          });
        }
        if (!showAll(errs)) say(answer.status >= 400 && answer.status < 500 ? REFUSED : UNREACHABLE);
      })
      .catch(function () {
        if (timer) clearTimeout(timer);
        busy(false);
        say(UNREACHABLE);
      });
  });
})();
`;

/** The script's Subresource Integrity hash (the page's `integrity` attribute). */
export const CARD_SCRIPT_INTEGRITY = `sha384-${createHash('sha384').update(CARD_SCRIPT, 'utf8').digest('base64')}`;

/** Where the pages serve it; the version changes with its text, so a browser never mixes two. */
export const CARD_SCRIPT_PATH = `/pay/assets/tarjeta.js?v=${createHash('sha256').update(CARD_SCRIPT, 'utf8').digest('hex').slice(0, 12)}`;
