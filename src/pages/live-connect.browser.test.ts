import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, ENGINE, type Company, type Harness } from '../../test/harness.ts';
import { FakeWompi } from '../../test/fakes/wompi-server.ts';
import { plain } from '../../test/support/pages.ts';
import { CHROMIUM, launchChromium, recordingProxy } from '../../test/support/browser.ts';

/**
 * A live connect-link page with a card connector, in Debian's Chromium at 360 px against the local
 * fake of Wompi (docs/pages.md "Connect-link page"): the payer's browser sends the card to the
 * provider's tokenization and our server never receives the number (every request the browser makes
 * to our server passes through a recording proxy, and the card's digits are in none of them); the
 * company's authorization and the provider's consent are asked first, the provider's refusal is
 * shown in Spanish next to its field, and the card is saved at the provider with the consent
 * recorded. Screenshots go to .test-data/screenshots/live-connect-*.png.
 */

const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
const SHOTS = path.resolve('.test-data/screenshots');
const PAN = '4242424242424242';
const CVV = '987';

describe(`live connect-link page in Chromium at 360 px (${ENGINE})`, { skip: SKIP }, () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let browser: BrowserContext;
  let page: Page;
  let userDataDir: string;
  const problems: string[] = [];

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `live-connect-${name}.png`), fullPage: true });
  const text = async () => plain(await page.locator('main').innerText());

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_connectb1',
      privateKey: 'prv_prod_connectb1',
      eventsSecret: 'prod_events_connectb1',
      integritySecret: 'prod_integrity_connectb1',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    proxy = await recordingProxy(`http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`);
    co = await h.company('Gimnasio en Vivo SAS');
    const connected = await co.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
    });
    assert.equal(connected.status, 200, connected.raw);
    fs.mkdirSync(SHOTS, { recursive: true });
    ({ browser, page, userDataDir } = await launchChromium());
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

  async function liveLink() {
    const customer = await co.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com' }, env: 'live' });
    assert.equal(customer.status, 200, customer.raw);
    const res = await co.req({ url: '/v1/connect-links', body: { customer_id: customer.body.id, single_use: true, allows: ['card'] }, env: 'live' });
    assert.equal(res.status, 200, res.raw);
    return { id: res.body.id as string, customerId: customer.body.id as string, path: new URL(res.body.url).pathname };
  }

  /** Every request our server received from the browser, for the connect pages. */
  const connectRequests = () => proxy.seen.filter((r) => r.url.startsWith('/connect/'));

  /** Asserts the card's number (in any grouping) and CVV reached our server in no request. */
  function assertCardNeverReachedUs() {
    const requests = connectRequests();
    assert.ok(requests.length > 0);
    for (const r of requests) {
      const all = decodeURIComponent(`${r.url} ${r.body}`.replace(/\+/g, ' '));
      assert.ok(!all.replace(/[\s-]/g, '').includes(PAN), `the card number reached our server: ${r.method} ${r.url}`);
      assert.ok(!/424242/.test(all), `digits of the card reached our server: ${r.method} ${r.url} ${r.body}`);
      assert.ok(!new RegExp(`cvv=|card_number=|\\b${CVV}\\b`).test(all), `card fields reached our server: ${r.method} ${r.url} ${r.body}`);
    }
  }

  const cardForm = () => page.locator('#form-tarjeta');

  async function fillCard(holder: string) {
    await cardForm().getByLabel('Número de la tarjeta').fill('4242 4242 4242 4242');
    await cardForm().getByLabel('Mes (MM)').fill('12');
    await cardForm()
      .getByLabel('Año (AAAA)')
      .fill(String(new Date().getUTCFullYear() + 3));
    await cardForm().getByLabel('Código de seguridad (CVV)').fill(CVV);
    await cardForm().getByLabel('Nombre del titular').fill(holder);
  }

  test('the card goes from the browser to the provider, never to our server; authorization and consent first; the provider’s refusal in Spanish; saved at the provider with the consent recorded', async () => {
    const l = await liveLink();
    await page.goto(`${proxy.url}${l.path}`);
    assert.equal(await page.getAttribute('html', 'lang'), 'es-CO');
    const shown = await text();
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

    // Nothing ticked: both boxes said, the first one focused; nothing sent to the provider.
    await fillCard('Ana');
    await page.getByRole('button', { name: 'Guardar tarjeta' }).click();
    await page.waitForFunction(() => document.getElementById('consent-card')?.getAttribute('aria-invalid') === 'true');
    assert.match(await page.locator('#acepto_tarjeta-error').innerText(), /autorizar los cobros a esta tarjeta/);
    assert.match(await page.locator('#consent-card-error').innerText(), /Para guardar la tarjeta debes aceptar los términos/);
    assert.ok(await page.locator('#acepto_tarjeta').evaluate((el) => el === document.activeElement), 'the first unticked box has the focus');
    assert.ok(await page.getByRole('button', { name: 'Guardar tarjeta' }).isEnabled(), 'the payer can go on');
    assert.equal(fake.calls.filter((c) => c.operation === 'tokenize_card').length, 0, 'nothing sent to the provider');
    await shot('02-boxes-unticked');

    // The provider refuses the holder's name (at least 5 letters): said in Spanish next to the field.
    await page.locator('#acepto_tarjeta').check();
    await page.locator('#consent-card').check();
    await page.getByRole('button', { name: 'Guardar tarjeta' }).click();
    await page.waitForFunction(() => document.getElementById('holder_name')?.getAttribute('aria-invalid') === 'true');
    assert.equal(await page.locator('#holder_name-error').innerText(), 'Escribe el nombre completo como aparece en la tarjeta (al menos 5 letras).');
    assert.ok(fake.calls.some((c) => c.operation === 'tokenize_card' && c.status === 422));
    await shot('03-provider-refused-name');

    // Fixed: tokenized at the provider, only the token posted; the card saved.
    await cardForm().getByLabel('Nombre del titular').fill('Ana María Pérez');
    await Promise.all([page.waitForURL(`${proxy.url}${l.path}/tarjeta`), page.getByRole('button', { name: 'Guardar tarjeta' }).click()]);
    assert.match(await text(), /Quedó inscrita/);
    assert.match(await text(), /tarjeta Visa terminada en 4242/);
    assert.deepEqual(
      fake.browserTokenizations.map((t) => t.lastFour),
      ['4242'],
    );
    assert.equal(fake.browserTokenizations[0].origin, proxy.url, 'from the connect page’s origin');
    await shot('04-enrolled');

    const posted = connectRequests().filter((r) => r.method === 'POST' && r.url === `${l.path}/tarjeta`);
    assert.equal(posted.length, 1);
    const fields = new URLSearchParams(posted[0].body);
    assert.match(fields.get('card_token') ?? '', /^tok_/);
    assert.equal(fields.get('card_last4'), '4242');
    assert.equal(fields.get('card_exp_month'), '12');
    assert.equal(fields.get('consent'), '1');
    assert.equal(fields.get('acepto_tarjeta'), 'si');
    assert.deepEqual(
      [...fields.keys()].filter((k) => /^(card_number|cvv|exp_month|exp_year)$/.test(k)),
      [],
    );
    assertCardNeverReachedUs();

    const cards = (await co.req({ url: `/v1/customers/${l.customerId}/cards`, env: 'live' })).body.data as any[];
    assert.equal(cards.length, 1);
    assert.equal(cards[0].last4, '4242');
    const row = await h.runtime.deps.database.db
      .selectFrom('cards')
      .select(['rail_source', 'rail_acceptance'])
      .where('id', '=', cards[0].id)
      .executeTakeFirstOrThrow();
    assert.ok(row.rail_source);
    assert.equal(JSON.parse(row.rail_acceptance!).permalink, fake.termsPermalink);
    assert.deepEqual(problems, [], 'no CSP violation or script error');
  });

  test('without the tokenizer a submitted form carries no card data: the page asks for JavaScript, nothing is saved', async () => {
    const l = await liveLink();
    const before = connectRequests().length;
    await page.route('**/pay/assets/tarjeta.js*', (route) => route.abort());
    try {
      await page.goto(`${proxy.url}${l.path}`);
      await fillCard('Ana María Pérez');
      await page.locator('#acepto_tarjeta').check();
      await page.locator('#consent-card').check();
      await Promise.all([page.waitForURL(`${proxy.url}${l.path}/tarjeta`), page.getByRole('button', { name: 'Guardar tarjeta' }).click()]);
      assert.match(await text(), /JavaScript activado/);
      await shot('05-without-tokenizer');
    } finally {
      await page.unroute('**/pay/assets/tarjeta.js*');
    }
    const posted = connectRequests()
      .slice(before)
      .filter((r) => r.method === 'POST');
    assert.equal(posted.length, 1);
    assert.equal(new URLSearchParams(posted[0].body).get('card_token'), '');
    assertCardNeverReachedUs();
    assert.equal(((await co.req({ url: `/v1/customers/${l.customerId}/cards`, env: 'live' })).body.data as any[]).length, 0);
    assert.equal(fake.browserTokenizations.length, 1, 'no new tokenization');
  });
});
