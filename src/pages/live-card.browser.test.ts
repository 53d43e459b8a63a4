import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, ENGINE, send, type Company, type Harness } from '../../test/harness.ts';
import { FakeWompi } from '../../test/fakes/wompi-server.ts';
import { createPayment, intentsOf, paymentStatus, plain } from '../../test/support/pages.ts';
import { CHROMIUM, launchChromium, recordingProxy } from '../../test/support/browser.ts';

/**
 * A live payment page with a card connector, in Debian's Chromium at 360 px against the local fake
 * of Wompi (docs/pages.md "Live card payments: tokenized in the browser", "Consent"): the payer's
 * browser sends the card to the provider's tokenization and our server never receives the number
 * (every request the browser makes to our server passes through a recording proxy, and the card's
 * digits are in none of them), consent is required, the provider's refusal is shown in Spanish
 * next to its field, and the attempt is paid by the provider's event. Without the tokenizer the
 * form cannot leak the card either. Screenshots go to .test-data/screenshots/live-card-*.png.
 */

const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
const SHOTS = path.resolve('.test-data/screenshots');
const PAN = '4242424242424242';
const CVV = '987';

describe(`live card payment page in Chromium at 360 px (${ENGINE})`, { skip: SKIP }, () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let browser: BrowserContext;
  let page: Page;
  let userDataDir: string;
  const problems: string[] = [];

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `live-card-${name}.png`), fullPage: true });
  const text = async () => plain(await page.locator('main').innerText());

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_browser01',
      privateKey: 'prv_prod_browser01',
      eventsSecret: 'prod_events_browser01',
      integritySecret: 'prod_integrity_browser01',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    proxy = await recordingProxy(`http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`);
    co = await h.company('Tienda en Vivo SAS');
    const connected = await co.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
    });
    assert.equal(connected.status, 200, connected.raw);
    const eventsPath = connected.body.events_url ? new URL(connected.body.events_url).pathname : '/v1/rails/wompi/events';
    fake.deliver = async (event) => (await send(h.app, { method: 'POST', url: eventsPath, body: event, idem: false })).status;
    fs.mkdirSync(SHOTS, { recursive: true });
    ({ browser, page, userDataDir } = await launchChromium());
    // A CSP violation (the tokenizer's call blocked, an inline script refused) or a script error fails the test.
    page.on('console', (msg) => {
      if (/Content Security Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (error) => problems.push(String(error)));
  });

  after(async () => {
    await browser?.close();
    proxy?.close();
    await h?.close();
    await fake?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  /** Every request our server received from the browser, for the payer pages. */
  const payRequests = () => proxy.seen.filter((r) => r.url.startsWith('/pay/'));

  /** Asserts the card's number (in any grouping) and CVV reached our server in no request. */
  function assertCardNeverReachedUs() {
    const requests = payRequests();
    assert.ok(requests.length > 0);
    for (const r of requests) {
      const all = decodeURIComponent(`${r.url} ${r.body}`.replace(/\+/g, ' '));
      assert.ok(!all.replace(/[\s-]/g, '').includes(PAN), `the card number reached our server: ${r.method} ${r.url}`);
      assert.ok(!/424242/.test(all), `digits of the card reached our server: ${r.method} ${r.url} ${r.body}`);
      assert.ok(!new RegExp(`cvv=|card_number=|\\b${CVV}\\b`).test(all), `card fields reached our server: ${r.method} ${r.url} ${r.body}`);
    }
  }

  /** The card form (the page offers the other methods too, each with its own form). */
  const cardForm = () => page.locator('#form-card');

  async function fillCard(holder: string) {
    await cardForm().getByLabel('Número de la tarjeta').fill('4242 4242 4242 4242');
    await cardForm().getByLabel('Mes').fill('12');
    await cardForm()
      .getByLabel('Año')
      .fill(String(new Date().getUTCFullYear() + 3));
    await cardForm().getByLabel('Código de seguridad (CVV)').fill(CVV);
    await cardForm().getByLabel('Nombre del titular').fill(holder);
  }

  test('the card goes from the browser to the provider, never to our server; consent first; the provider’s refusal in Spanish; paid by the provider’s event', async () => {
    const p = await createPayment(co, { email: 'cliente@example.com', amount: 70000, title: 'Plan hogar 300 megas' }, 'live');
    await page.goto(`${proxy.url}/pay/${p.id}`);
    assert.equal(await page.getAttribute('html', 'lang'), 'es-CO');
    const shown = await text();
    assert.match(shown, /\$ 70\.000/);
    assert.match(shown, /Ley 1581 de 2012/);
    assert.doesNotMatch(shown, /Modo de prueba/);
    assert.equal(
      await cardForm()
        .getByRole('link', { name: /términos y condiciones/ })
        .getAttribute('href'),
      fake.termsPermalink,
    );
    assert.equal(
      await cardForm()
        .getByRole('link', { name: /tratamiento de datos personales/ })
        .getAttribute('href'),
      fake.personalDataPermalink,
    );
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, 'no horizontal scrolling at 360 px');
    await shot('01-form');

    // Consent first: without it the card is not even sent to the provider.
    await fillCard('Ana');
    await page.getByRole('button', { name: 'Pagar $ 70.000' }).click();
    const consent = cardForm().getByLabel(/Acepto los términos y condiciones/);
    await page.waitForFunction(() => document.getElementById('consent-card')?.getAttribute('aria-invalid') === 'true');
    assert.match(await page.locator('#consent-card-error').innerText(), /debes aceptar los términos/);
    assert.ok(await consent.evaluate((el) => el === document.activeElement), 'the unticked box has the focus');
    assert.equal(fake.calls.filter((c) => c.operation === 'tokenize_card').length, 0, 'nothing sent to the provider');

    // The provider refuses the holder's name (it asks at least 5 letters): said in Spanish next to the field.
    await consent.check();
    await page.getByRole('button', { name: 'Pagar $ 70.000' }).click();
    await page.waitForFunction(() => document.getElementById('holder_name')?.getAttribute('aria-invalid') === 'true');
    assert.equal(await page.locator('#holder_name-error').innerText(), 'Escribe el nombre completo como aparece en la tarjeta (al menos 5 letras).');
    assert.equal(await page.locator('#holder_name-error').getAttribute('aria-live'), 'polite');
    assert.ok(
      await cardForm()
        .getByLabel('Nombre del titular')
        .evaluate((el) => el === document.activeElement),
      'focus on the field to fix',
    );
    assert.ok(await page.getByRole('button', { name: 'Pagar $ 70.000' }).isEnabled(), 'the payer can try again');
    assert.ok(fake.calls.some((c) => c.operation === 'tokenize_card' && c.status === 422));
    await shot('02-provider-refused-name');

    // Fixed: the browser tokenizes at the provider and posts only the token; the provider answers PENDING.
    await cardForm().getByLabel('Nombre del titular').fill('Ana María Pérez');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Pagar $ 70.000' }).click()]);
    assert.deepEqual(
      fake.browserTokenizations.map((t) => t.lastFour),
      ['4242'],
      'the provider tokenized the card once, for a browser',
    );
    assert.equal(fake.browserTokenizations[0].origin, proxy.url, 'from the payment page’s origin');
    assert.match(await text(), /Tu pago está en proceso/);
    await shot('03-in-progress');

    // What our server got: the provider's token, the holder, the consent; never the card.
    const posted = payRequests().filter((r) => r.method === 'POST' && r.url === `/pay/${p.id}/card`);
    assert.equal(posted.length, 1);
    const fields = new URLSearchParams(posted[0].body);
    assert.match(fields.get('card_token') ?? '', /^tok_/);
    assert.equal(fields.get('card_last4'), '4242');
    assert.equal(fields.get('consent'), '1');
    assert.equal(fields.get('terms_permalink'), fake.termsPermalink);
    assert.equal(fields.get('holder_name'), 'Ana María Pérez');
    assert.deepEqual(
      [...fields.keys()].filter((k) => /card_number|cvv|exp_/.test(k)),
      [],
    );
    assertCardNeverReachedUs();

    // The attempt recorded the consent; the provider's event pays the link.
    const [attempt] = await intentsOf(co, p.id, 'live');
    assert.equal(attempt.status, 'in_progress');
    const row = await h.runtime.deps.database.db
      .selectFrom('payment_intents')
      .select(['consent_terms_permalink', 'consent_personal_data_permalink', 'consent_accepted_at'])
      .where('id', '=', attempt.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.consent_terms_permalink, fake.termsPermalink);
    assert.equal(row.consent_personal_data_permalink, fake.personalDataPermalink);
    assert.ok(row.consent_accepted_at);
    const tx = [...fake.transactions.values()].find((t) => t.reference === attempt.id)!;
    assert.equal(tx.payment_method?.type, 'CARD');
    await fake.finalize(tx.id);
    assert.equal((await paymentStatus(co, p.id, 'live')).status, 'approved');
    await page.reload();
    assert.match(await text(), /Pago recibido/);
    await shot('04-paid');
    assert.deepEqual(problems, [], 'no CSP violation or script error');
  });

  test('without the tokenizer (no JavaScript for it) a submitted form carries no card data: the page asks for JavaScript, nothing is attempted', async () => {
    const p = await createPayment(co, { email: 'cliente@example.com', amount: 45000 }, 'live');
    const before = payRequests().length;
    await page.route('**/pay/assets/tarjeta.js*', (route) => route.abort());
    try {
      await page.goto(`${proxy.url}/pay/${p.id}`);
      await fillCard('Ana María Pérez');
      await cardForm()
        .getByLabel(/Acepto los términos y condiciones/)
        .check();
      await Promise.all([page.waitForURL(`${proxy.url}/pay/${p.id}/card`), page.getByRole('button', { name: 'Pagar $ 45.000' }).click()]);
      assert.match(await text(), /JavaScript activado/);
      await shot('05-without-tokenizer');
    } finally {
      await page.unroute('**/pay/assets/tarjeta.js*');
    }
    const posted = payRequests()
      .slice(before)
      .filter((r) => r.method === 'POST');
    assert.equal(posted.length, 1);
    assert.equal(new URLSearchParams(posted[0].body).get('card_token'), '');
    assertCardNeverReachedUs();
    assert.equal((await intentsOf(co, p.id, 'live')).length, 0);
    assert.equal(fake.browserTokenizations.length, 1, 'no new tokenization');
  });
});
