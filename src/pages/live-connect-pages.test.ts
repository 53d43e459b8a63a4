import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import { FakeWompi } from '../../test/fakes/wompi-server.ts';
import { consentOf, getPage, postForm, providerCardToken, tokenOf, type PageRes } from '../../test/support/pages.ts';

/**
 * The connect-link page in live with a card connector (docs/pages.md "Connect-link page", "Live
 * card payments: tokenized in the browser", "Consent"), over HTTP against the local fake of Wompi:
 * the card form tokenizes in the payer's browser (no named card inputs, the first-party script by
 * the page's nonce, the provider alone in connect-src), the route takes only the provider's token
 * (a body with card_number or cvv refused unread, nothing kept), the payer accepts the provider's
 * two contracts first, and the card is saved at the provider with that consent recorded. The
 * browser itself is live-connect.browser.test.ts.
 */

const PAN = '4242424242424242';
const FUTURE_YEAR = String(new Date().getUTCFullYear() + 3);

describe('live connect-link page through a provider', () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_connect01',
      privateKey: 'prv_prod_connect01',
      eventsSecret: 'prod_events_connect01',
      integritySecret: 'prod_integrity_connect01',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    co = await h.company('Gimnasio Vivo SAS');
    const res = await co.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
    });
    assert.equal(res.status, 200, res.raw);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  const customer = async (env: 'test' | 'live' = 'live', email: string | null = 'ana@example.com') => {
    const res = await co.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Gómez', ...(email ? { email } : {}) }, env });
    assert.equal(res.status, 200, res.raw);
    return res.body.id as string;
  };
  const link = async (env: 'test' | 'live' = 'live', email: string | null = 'ana@example.com') => {
    const customer_id = await customer(env, email);
    const res = await co.req({ url: '/v1/connect-links', body: { customer_id, single_use: true, allows: ['card'] }, env });
    assert.equal(res.status, 200, res.raw);
    return { id: res.body.id as string, customer_id, path: new URL(res.body.url).pathname };
  };
  const openPage = async (path: string) => {
    h.clock.advance(1000);
    const page = await getPage(h, path);
    assert.equal(page.status, 200, page.body.slice(0, 400));
    return page;
  };
  const cardsOf = async (customerId: string) => (await co.req({ url: `/v1/customers/${customerId}/cards`, env: 'live' })).body.data as any[];
  const sourcesMade = () => fake.calls.filter((c) => c.operation === 'payment_source').length;
  const cardPost = async (path: string, page: PageRes, extra: Record<string, string> = {}) =>
    postForm(h, `${path}/tarjeta`, {
      token: tokenOf(page.body),
      card_token: await providerCardToken(fake, PAN),
      card_brand: 'VISA',
      card_last4: '4242',
      card_exp_month: '12',
      card_exp_year: FUTURE_YEAR,
      holder_name: 'Ana María Pérez',
      acepto_tarjeta: 'si',
      ...consentOf(page.body),
      ...extra,
    });

  test('the live card form tokenizes in the browser: no named card inputs, the tokenizer by the page’s nonce, the provider only in connect-src, the contracts and the consent box; test links keep the server-side form', async () => {
    const l = await link();
    const page = await openPage(l.path);
    const body = page.body;
    assert.match(body, /<form [^>]*id="form-tarjeta"[^>]*data-tokenize/);
    assert.ok(body.includes(`data-token-url="${fake.url}/tokens/cards"`), 'the provider’s tokenization URL');
    assert.ok(body.includes(`data-public-key="${fake.publicKey}"`), 'the company’s public key');
    assert.ok(!body.includes(fake.privateKey), 'never the private key');
    for (const name of ['card_number', 'cvv', 'exp_month', 'exp_year']) assert.ok(!body.includes(`name="${name}"`), `no input named ${name}`);
    for (const id of ['card_number', 'cvv', 'exp_month', 'exp_year']) assert.match(body, new RegExp(`<input id="${id}"`), `the ${id} input, unnamed`);
    for (const name of ['card_token', 'card_brand', 'card_last4', 'card_exp_month', 'card_exp_year'])
      assert.match(body, new RegExp(`name="${name}"`));
    assert.match(body, /<noscript>[^<]*<p[^>]*>Para inscribir una tarjeta necesitas activar JavaScript/);
    // The provider's two contracts and the required box (Ley 1581 de 2012), next to the company's authorization.
    assert.ok(body.includes(`href="${fake.termsPermalink}"`) && body.includes(`href="${fake.personalDataPermalink}"`));
    assert.match(body, /<input type="checkbox" id="consent-card" name="consent" value="1" required/);
    assert.match(body, /autorizo el tratamiento de mis datos personales para guardar esta tarjeta[^<]*Ley 1581 de 2012/);
    assert.match(body, /id="acepto_tarjeta" name="acepto_tarjeta" value="si"[^>]*data-required=/);

    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[^']+';/, 'scripts by the nonce alone');
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.match(csp, new RegExp(`connect-src ${new URL(fake.url).origin};`));
    const nonce = /'nonce-([^']+)'/.exec(csp)![1];
    const tag = /<script nonce="([^"]+)" src="(\/pay\/assets\/tarjeta\.js\?v=[0-9a-f]{12})" integrity="(sha384-[^"]+)" defer><\/script>/.exec(body);
    assert.ok(tag, 'the tokenizer, first-party, with its integrity hash');
    assert.equal(tag[1], nonce);
    const script = await h.app.inject({ method: 'GET', url: tag[2] });
    assert.equal(script.statusCode, 200);
    assert.equal(`sha384-${createHash('sha384').update(script.rawPayload).digest('base64')}`, tag[3]);

    // A test link (the built-in sandbox) keeps today's server-side form: named inputs, no script, no connect-src.
    const t = await link('test');
    const testPage = await openPage(t.path);
    assert.match(testPage.body, /name="card_number"/);
    assert.doesNotMatch(testPage.body, /<form[^>]*data-tokenize|tarjeta\.js|id="consent-card"/);
    assert.doesNotMatch(String(testPage.headers['content-security-policy']), /connect-src/);
  });

  test('the card route never reads card data, asks for the consent and the authorization, checks the documents shown: nothing saved, nothing sent to the provider', async () => {
    const l = await link();
    const page = await openPage(l.path);
    const sources = sourcesMade();

    // A body that carries the card (a scripted post, an old page): refused unread.
    const leaked = await postForm(h, `${l.path}/tarjeta`, {
      token: tokenOf(page.body),
      card_number: '4242 4242 4242 4242',
      cvv: '123',
      exp_month: '12',
      exp_year: FUTURE_YEAR,
      holder_name: 'Ana María Pérez',
      acepto_tarjeta: 'si',
      ...consentOf(page.body),
    });
    assert.equal(leaked.status, 422);
    assert.match(leaked.body, /este formulario no recibe el número de la tarjeta/);
    assert.ok(!leaked.body.includes('4242 4242'), 'the number is not shown back');

    // No consent, no authorization: both said, in Spanish, next to their box.
    const unticked = await cardPost(l.path, page, { consent: '', acepto_tarjeta: '' });
    assert.equal(unticked.status, 422);
    assert.match(unticked.body, /Para guardar la tarjeta debes aceptar los términos/);
    assert.match(unticked.body, /Marca la casilla para autorizar los cobros a esta tarjeta/);
    assert.match(unticked.body, /id="consent-card"[^>]*aria-invalid="true"/);

    // Ticked, for documents the provider no longer has: shown again to accept.
    const stale = await cardPost(l.path, page, { terms_permalink: 'https://wompi.example/legal/terminos-2019.pdf' });
    assert.equal(stale.status, 422);
    assert.match(stale.body, /documentos del medio de pago cambiaron/);
    assert.ok(stale.body.includes(`href="${fake.termsPermalink}"`));

    // No token (the tokenizer did not run): the page asks for JavaScript.
    const noToken = await cardPost(l.path, page, { card_token: '' });
    assert.equal(noToken.status, 422);
    assert.match(noToken.body, /JavaScript activado/);

    assert.deepEqual(await cardsOf(l.customer_id), [], 'nothing saved');
    assert.equal(sourcesMade(), sources, 'nothing sent to the provider');
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}`, env: 'live' })).body.status, 'active');
  });

  test('the provider’s token becomes the customer’s card at the provider, the consent recorded (both permalinks, when, who asserted it); the link used once', async () => {
    const l = await link();
    const page = await openPage(l.path);
    const sources = sourcesMade();
    const res = await cardPost(l.path, page);
    assert.equal(res.status, 200, res.body.slice(0, 600));
    assert.match(res.body, /Quedó inscrita/);
    assert.match(res.body, /tarjeta Visa terminada en 4242/);
    assert.equal(sourcesMade(), sources + 1, 'one payment source at the provider');
    const source = fake.calls.filter((c) => c.operation === 'payment_source').at(-1)!;
    assert.equal(source.status, 201);

    const [card] = await cardsOf(l.customer_id);
    assert.equal(card.brand, 'visa');
    assert.equal(card.last4, '4242');
    assert.equal(card.exp_month, 12);
    assert.equal(card.exp_year, Number(FUTURE_YEAR));
    assert.equal(card.holder_name, 'Ana María Pérez');
    assert.equal(card.authorization, true);
    assert.equal(card.is_test, false);
    const row = await h.runtime.deps.database.db
      .selectFrom('cards')
      .select(['rail_source', 'rail_acceptance'])
      .where('id', '=', card.id)
      .executeTakeFirstOrThrow();
    assert.ok(row.rail_source, 'saved at the provider');
    const acceptance = JSON.parse(row.rail_acceptance!);
    assert.equal(acceptance.permalink, fake.termsPermalink);
    assert.equal(acceptance.personal_data_permalink, fake.personalDataPermalink);
    assert.ok(acceptance.accepted_at);
    assert.equal(acceptance.asserted_by, `connect_link:${l.id}`);
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}`, env: 'live' })).body.status, 'used');

    // The same form again: the same enrollment, nothing new at the provider.
    const again = await cardPost(l.path, page);
    assert.notEqual(again.status, 500);
    assert.equal((await cardsOf(l.customer_id)).length, 1);
  });

  test('a customer without an e-mail (the provider files cards under it): a notice instead of the form, and the route saves nothing', async () => {
    const l = await link('live', null);
    const page = await openPage(l.path);
    assert.match(page.body, /el medio de pago necesita tu correo electrónico/);
    assert.doesNotMatch(page.body, /<form[^>]*data-tokenize|tarjeta\.js/);
    assert.doesNotMatch(String(page.headers['content-security-policy']), /connect-src/);
    // A page opened while the customer had one, posted after the company removed it: refused, nothing kept.
    const other = await link();
    const opened = await openPage(other.path);
    const cleared = await co.req({ method: 'PUT', url: `/v1/customers/${other.customer_id}`, body: { email: null }, env: 'live' });
    assert.equal(cleared.status, 200, cleared.raw);
    assert.equal(cleared.body.email, null);
    const sources = sourcesMade();
    const res = await cardPost(other.path, opened);
    assert.equal(res.status, 422);
    assert.match(res.body, /el medio de pago necesita tu correo electrónico/);
    assert.equal(res.status, 422);
    assert.deepEqual(await cardsOf(other.customer_id), []);
    assert.equal(sourcesMade(), sources);
  });
});
