import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createHarness, send, type Company, type Harness } from '../../test/harness.ts';
import { FakeWompi } from '../../test/fakes/wompi-server.ts';
import { BANCOLOMBIA } from '../../test/support/charges.ts';
import {
  consentOf,
  createPayment,
  getPage,
  goodCard,
  intentsOf,
  paymentStatus,
  postForm,
  providerCardToken,
  tokenOf,
  type PageRes,
} from '../../test/support/pages.ts';
import type { BanklinkPort, BanklinkSession } from '../rails/banklink.ts';

/**
 * Live payer pages through a provider (docs/pages.md "Live card payments: tokenized in the
 * browser", "Consent"), over HTTP against the local fake of Wompi: the card form that tokenizes in
 * the browser (no named card inputs, the first-party script, the provider only in connect-src),
 * the card route that refuses card data and takes only the provider's token, the consent every
 * provider method asks first and records on the attempt, and PSE's mobile. The browser itself is
 * live-card.browser.test.ts.
 */

const POLL_MS = 60_000;
const PAN = '4242424242424242';

describe('live payer pages through a provider', () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;
  let eventsPath: string;

  async function connect(target: Company) {
    const res = await target.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body as { events_url?: string };
  }

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_pages0001',
      privateKey: 'prv_prod_pages0001',
      eventsSecret: 'prod_events_pages0001',
      integritySecret: 'prod_integrity_pages0001',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_POLL_AFTER_MS: String(POLL_MS), CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    co = await h.company('Tienda Viva SAS');
    const connected = await connect(co);
    // The company's own events URL when the connector answers one (the older shared path otherwise).
    eventsPath = connected.events_url ? new URL(connected.events_url).pathname : '/v1/rails/wompi/events';
    fake.deliver = async (event) => (await send(h.app, { method: 'POST', url: eventsPath, body: event, idem: false })).status;
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  const livePayment = (body: Record<string, unknown> = {}) => createPayment(co, { email: 'cliente@example.com', amount: 70000, ...body }, 'live');
  const txOf = (reference: string) => [...fake.transactions.values()].find((t) => t.reference === reference);
  const created = () => fake.calls.filter((c) => c.operation === 'create_transaction').length;
  const cardPost = async (id: string, page: PageRes, extra: Record<string, string> = {}) =>
    postForm(h, `/pay/${id}/card`, {
      token: tokenOf(page.body),
      card_token: await providerCardToken(fake, PAN),
      card_brand: 'VISA',
      card_last4: '4242',
      holder_name: goodCard.holder_name,
      ...consentOf(page.body),
      ...extra,
    });

  /** What an attempt recorded of the payer's consent (the columns of migrations/0041). */
  async function consentRow(intentId: string) {
    return h.runtime.deps.database.db
      .selectFrom('payment_intents')
      .select(['consent_terms_permalink', 'consent_personal_data_permalink', 'consent_accepted_at'])
      .where('id', '=', intentId)
      .executeTakeFirstOrThrow();
  }

  test('the live card form tokenizes in the browser: no named card inputs, the script from our origin, the provider only in connect-src, the contracts and the consent box', async () => {
    const p = await livePayment();
    const page = await getPage(h, `/pay/${p.id}`);
    assert.equal(page.status, 200);
    const body = page.body;
    assert.match(body, /<form [^>]*id="form-card"[^>]*data-tokenize/);
    assert.ok(body.includes(`data-token-url="${fake.url}/tokens/cards"`), 'the provider’s tokenization URL');
    assert.ok(body.includes(`data-public-key="${fake.publicKey}"`), 'the company’s public key (never the private one)');
    assert.ok(!body.includes(fake.privateKey));
    for (const name of ['card_number', 'cvv', 'exp_month', 'exp_year']) assert.ok(!body.includes(`name="${name}"`), `no input named ${name}`);
    for (const id of ['card_number', 'cvv', 'exp_month', 'exp_year'])
      assert.match(body, new RegExp(`<input id="${id}"`), `the ${id} input is there, unnamed`);
    assert.match(body, /name="card_token"/);
    assert.match(body, /<noscript>[^<]*<p[^>]*>Para pagar con tarjeta necesitas activar JavaScript/);
    // The provider's two contracts, linked, and the box the payer ticks (Ley 1581 de 2012).
    assert.ok(body.includes(`href="${fake.termsPermalink}"`) && body.includes(`href="${fake.personalDataPermalink}"`));
    assert.match(body, /<input type="checkbox" id="consent-card" name="consent" value="1" required/);
    assert.match(body, /autorizo el tratamiento de mis datos personales[^<]*Ley 1581 de 2012/);

    // The CSP stays strict: scripts by the page's nonce only, the provider alone for connections.
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[^']+';/, 'the nonce alone: not even same-origin scripts without it');
    const nonce = /'nonce-([^']+)'/.exec(csp)![1];
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.match(csp, new RegExp(`connect-src ${new URL(fake.url).origin};`));
    const tag = /<script nonce="([^"]+)" src="(\/pay\/assets\/tarjeta\.js\?v=[0-9a-f]{12})" integrity="(sha384-[^"]+)" defer><\/script>/.exec(body);
    assert.ok(tag, 'the tokenizer is a first-party script with its integrity hash');
    assert.equal(tag[1], nonce, 'the tokenizer carries the page’s nonce');
    const script = await h.app.inject({ method: 'GET', url: tag[2] });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    assert.equal(script.headers['x-content-type-options'], 'nosniff');
    assert.equal(`sha384-${createHash('sha384').update(script.rawPayload).digest('base64')}`, tag[3], 'the integrity matches what is served');

    // Test payments (the sandbox) keep the server-side form: named inputs, no script, no connect-src.
    const sandbox = await createPayment(co, { amount: 70000 });
    const test = await getPage(h, `/pay/${sandbox.id}`);
    assert.match(test.body, /name="card_number"/);
    assert.doesNotMatch(test.body, /<form [^>]*data-tokenize|tarjeta\.js|name="consent"/);
    assert.doesNotMatch(String(test.headers['content-security-policy']), /connect-src|script-src [^;]*'self'/);
  });

  test('the live card route refuses a body with the card number or CVV (unread) and needs the provider’s token; nothing is attempted', async () => {
    const p = await livePayment();
    const page = await getPage(h, `/pay/${p.id}`);
    const before = created();
    const withNumber = await postForm(h, `/pay/${p.id}/card`, { token: tokenOf(page.body), ...goodCard, ...consentOf(page.body) });
    assert.equal(withNumber.status, 422);
    assert.match(withNumber.body, /no recibe el número de la tarjeta/);
    assert.ok(!withNumber.body.includes('4242 4242') && !withNumber.body.includes(PAN), 'the number is not shown back');
    const withCvvOnly = await cardPost(p.id, page, { cvv: '123' });
    assert.equal(withCvvOnly.status, 422, 'a token does not make card data acceptable');
    const noToken = await postForm(h, `/pay/${p.id}/card`, { token: tokenOf(page.body), holder_name: 'Ana María Pérez', ...consentOf(page.body) });
    assert.equal(noToken.status, 422);
    assert.match(noToken.body, /JavaScript activado/);
    assert.equal((await intentsOf(co, p.id, 'live')).length, 0, 'nothing attempted');
    assert.equal(created(), before, 'nothing sent to the provider');
  });

  test('consent is required before paying by card, PSE or Nequi: without it 422 and nothing attempted; documents changed meanwhile are asked again', async () => {
    const p = await livePayment({ allows: ['card', 'banklink', 'walleta'] });
    const page = await getPage(h, `/pay/${p.id}`);
    for (const m of ['card', 'banklink', 'walleta']) assert.match(page.body, new RegExp(`id="consent-${m}"`), `${m} asks for consent`);
    const before = created();
    const { consent: _ticked, ...unticked } = consentOf(page.body);
    const card = await postForm(h, `/pay/${p.id}/card`, {
      token: tokenOf(page.body),
      card_token: await providerCardToken(fake, PAN),
      holder_name: 'Ana María Pérez',
      ...unticked,
    });
    assert.equal(card.status, 422);
    assert.match(card.body, /debes aceptar los términos y autorizar el tratamiento de tus datos personales/);
    assert.match(card.body, /id="consent-card"[^>]*aria-invalid="true"/);
    const pse = await postForm(h, `/pay/${p.id}/banklink`, {
      token: tokenOf(page.body),
      bank: BANCOLOMBIA,
      full_name: 'Marta Rojas',
      person_type: 'natural',
      document_type: 'CC',
      document_number: '1020304050',
      payer_phone: '3001234567',
      ...unticked,
    });
    assert.equal(pse.status, 422);
    assert.match(pse.body, /debes aceptar los términos/);
    const nequi = await postForm(h, `/pay/${p.id}/walleta`, { token: tokenOf(page.body), phone: '3991111111', ...unticked });
    assert.equal(nequi.status, 422);
    assert.match(nequi.body, /debes aceptar los términos/);
    // Ticked, but for documents the provider no longer has: shown again to accept.
    const stale = await cardPost(p.id, page, { terms_permalink: 'https://wompi.example/legal/terminos-2019.pdf' });
    assert.equal(stale.status, 422);
    assert.match(stale.body, /documentos del medio de pago cambiaron/);
    assert.ok(stale.body.includes(`href="${fake.termsPermalink}"`), 'the current ones are shown');
    assert.equal((await intentsOf(co, p.id, 'live')).length, 0, 'nothing attempted');
    assert.equal(created(), before, 'nothing sent to the provider');
  });

  test('a card paid with the provider’s token records the consent (both permalinks, when) on the attempt, then the event pays the link', async () => {
    const p = await livePayment();
    const page = await getPage(h, `/pay/${p.id}`);
    const sentAt = h.clock.now().getTime();
    const res = await cardPost(p.id, page);
    const answeredAt = h.clock.now().getTime();
    assert.equal(res.status, 303, res.body.slice(0, 300));
    const [attempt] = await intentsOf(co, p.id, 'live');
    assert.equal(attempt.status, 'in_progress');
    const tx = txOf(attempt.id)!;
    assert.equal(tx.payment_method?.type, 'CARD');
    const row = await consentRow(attempt.id);
    assert.equal(row.consent_terms_permalink, fake.termsPermalink);
    assert.equal(row.consent_personal_data_permalink, fake.personalDataPermalink);
    const acceptedAt = new Date(row.consent_accepted_at as Date).getTime();
    assert.ok(acceptedAt >= sentAt && acceptedAt <= answeredAt, 'accepted when the payer sent the form');
    await fake.finalize(tx.id);
    assert.equal((await paymentStatus(co, p.id, 'live')).status, 'approved');
    // A test payment's attempt (the sandbox) has no provider and records no consent.
    const sandbox = await createPayment(co, { amount: 70000 });
    const sandboxPage = await getPage(h, `/pay/${sandbox.id}`);
    assert.equal((await postForm(h, `/pay/${sandbox.id}/card`, { token: tokenOf(sandboxPage.body), ...goodCard })).status, 303);
    const [sandboxAttempt] = await intentsOf(co, sandbox.id);
    assert.deepEqual(await consentRow(sandboxAttempt.id), {
      consent_terms_permalink: null,
      consent_personal_data_permalink: null,
      consent_accepted_at: null,
    });
  });

  test('PSE asks the payer’s mobile only when the payment has none, checks it (Colombian mobile) and passes it to the rail', async () => {
    // A spy in front of the company's PSE rail: what the page hands it.
    const opened: BanklinkSession[] = [];
    const scope = { companyId: co.company.id, environment: 'live' as const };
    const real = await h.runtime.deps.rails.money(scope, 'banklink');
    const spy: BanklinkPort = Object.assign(Object.create(real) as BanklinkPort, {
      open: (session: BanklinkSession) => {
        opened.push(session);
        return real.open(session);
      },
    });
    const remove = h.runtime.deps.rails.connectors.install('banklink', spy, { environment: 'live', companyId: co.company.id });
    try {
      const identity = { bank: BANCOLOMBIA, full_name: 'Marta Rojas', person_type: 'natural', document_type: 'CC', document_number: '1020304050' };
      const p = await livePayment({ allows: ['banklink'] });
      const page = await getPage(h, `/pay/${p.id}`);
      assert.match(page.body, /<input id="payer_phone" name="payer_phone" type="tel"[^>]*autocomplete="tel"[^>]*required/);
      for (const bad of ['', '12345', '6012345678', '+1 415 555 0100']) {
        const res = await postForm(h, `/pay/${p.id}/banklink`, { token: tokenOf(page.body), ...identity, payer_phone: bad, ...consentOf(page.body) });
        assert.equal(res.status, 422, bad);
        assert.match(res.body, /celular colombiano de 10 dígitos/);
        assert.match(res.body, /id="payer_phone"[^>]*aria-invalid="true"/);
      }
      assert.equal(opened.length, 0, 'nothing opened at the provider');
      const sent = await postForm(h, `/pay/${p.id}/banklink`, {
        token: tokenOf(page.body),
        ...identity,
        payer_phone: '+57 300 123 4567',
        ...consentOf(page.body),
      });
      assert.equal(sent.status, 303, sent.body.slice(0, 300));
      assert.equal(opened.at(-1)!.payer.phone, '+573001234567');
      const [attempt] = await intentsOf(co, p.id, 'live');
      assert.equal((await consentRow(attempt.id)).consent_personal_data_permalink, fake.personalDataPermalink, 'PSE records the consent too');

      // The payment has the payer's mobile: the form does not ask, and the rail gets it.
      const withPhone = await livePayment({ allows: ['banklink'], phone: '+573159876543' });
      const shown = await getPage(h, `/pay/${withPhone.id}`);
      assert.doesNotMatch(shown.body, /name="payer_phone"/);
      const res = await postForm(h, `/pay/${withPhone.id}/banklink`, { token: tokenOf(shown.body), ...identity, ...consentOf(shown.body) });
      assert.equal(res.status, 303, res.body.slice(0, 300));
      assert.equal(opened.at(-1)!.payer.phone, '+573159876543');
    } finally {
      remove();
    }
  });

  test('when the provider’s contracts cannot be read, its methods show a notice instead of a form and a POST answers 503 attempting nothing', async () => {
    const other = await h.company('Contratos Caídos SAS');
    await connect(other);
    const p = await createPayment(other, { email: 'cliente@example.com', amount: 30000, allows: ['walleta'] }, 'live');
    fake.failNext('merchant', '5xx');
    const page = await getPage(h, `/pay/${p.id}`);
    assert.equal(page.status, 200);
    assert.match(page.body, /No pudimos cargar los términos del medio de pago/);
    assert.doesNotMatch(page.body, /id="form-walleta"/);
    const good = await getPage(h, `/pay/${p.id}`);
    const fields = { token: tokenOf(good.body), phone: '3991111111', ...consentOf(good.body) };
    fake.failNext('merchant', '5xx');
    const res = await postForm(h, `/pay/${p.id}/walleta`, fields);
    assert.equal(res.status, 503);
    assert.match(res.body, /No se hizo ningún cobro/);
    assert.equal((await intentsOf(other, p.id, 'live')).length, 0);
  });
});
