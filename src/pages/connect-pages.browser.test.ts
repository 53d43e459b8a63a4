import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import { plain } from '../../test/support/pages.ts';
import { CHROMIUM, launchChromium } from '../../test/support/browser.ts';

/**
 * The connect-link page (docs/pages.md "Connect-link page") in Debian's Chromium (playwright-core,
 * never a downloaded browser) at 360 px wide, driven with the keyboard only: Tab, Space, Enter and
 * typing. Screenshots go to .test-data/screenshots/.
 */

const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
const SHOTS = path.resolve('.test-data/screenshots');
const MERCHANT = 'https://tienda.example.co';

describe('connect-link page in Chromium at 360 px, keyboard only', { skip: SKIP }, () => {
  let h: Harness;
  let co: Company;
  let base: string;
  let browser: BrowserContext;
  let page: Page;
  let userDataDir: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const text = async () => plain(await page.locator('main').innerText());
  const focused = () => page.evaluate(() => document.activeElement?.id || (document.activeElement?.parentElement?.id ?? ''));
  /** Presses Tab until the element with this id (or the summary of the section with this id) has the focus. */
  const tabTo = async (id: string) => {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      if ((await focused()) === id) return;
    }
    assert.fail(`Tab never reached #${id}`);
  };
  const noSideScroll = async () =>
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, 'no horizontal scrolling at 360 px');

  const newLink = async (body: Record<string, unknown> = {}) => {
    const customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Camila', last_name: 'Rojas' } })).body;
    const res = await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true, ...body } });
    assert.equal(res.status, 200, res.raw);
    return { ...res.body, path: new URL(res.body.url).pathname } as { id: string; customer_id: string; path: string };
  };
  const accountsOf = async (customerId: string) => (await co.req({ url: `/v1/customers/${customerId}/accounts` })).body.data as any[];

  before(async () => {
    h = await createHarness();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    co = await h.company('Energía del Valle SAS');
    fs.mkdirSync(SHOTS, { recursive: true });
    ({ browser, page, userDataDir } = await launchChromium());
  });

  after(async () => {
    await browser?.close();
    await h?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  test('bank account: bank and type chosen by typing, number typed, authorization with Space, sent with Enter, back to the company', async (t) => {
    // The sandbox bank answers SANDBOX_ACCOUNT_DELAY_MS after submission: the clock stands still so the
    // account is still PENDING when it is read, however slow the machine (CI took over a second once).
    h.clock.freeze();
    t.after(() => h.clock.unfreeze());
    const l = await newLink({ redirect_url: `${MERCHANT}/inscrito` });
    await page.goto(`${base}${l.path}`);
    assert.equal(await page.getAttribute('html', 'lang'), 'es-CO');
    assert.match(await page.locator('header').innerText(), /Energía del Valle SAS/);
    await noSideScroll();
    await shot('30-connect-page');
    await tabTo('bank');
    await page.keyboard.type('Davivienda');
    assert.equal(await page.locator('#bank option:checked').innerText(), 'Davivienda');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'account_type');
    await page.keyboard.type('Corriente');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'account_number');
    await page.keyboard.type('0550 1234 5678');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'acepto_cuenta');
    await page.keyboard.press('Space');
    assert.ok(await page.locator('#acepto_cuenta').isChecked());
    await shot('31-connect-bank-filled');
    await page.keyboard.press('Tab');
    // The company's site (redirect_url must be https) is not on this machine: the browser's request to it is the proof.
    const [redirected] = await Promise.all([page.waitForRequest((r) => r.url().startsWith(`${MERCHANT}/`)), page.keyboard.press('Enter')]);
    // That request fails, and Chromium then commits its error page a moment later: a late navigation that would
    // interrupt the next test's page.goto (it did in CI). The tab is closed and the next tests get a new one.
    await page.close();
    page = await browser.newPage();
    const landed = new URL(redirected.url());
    assert.equal(landed.pathname, '/inscrito');
    assert.equal(landed.searchParams.get('connect_link_id'), l.id);
    const [account] = await accountsOf(l.customer_id);
    assert.equal(landed.searchParams.get('account_id'), account.id);
    assert.deepEqual([account.subtype, account.status, account.authorization], ['CHECKING', 'PENDING', true]);
  });

  test('card: the section opened with Enter, the form filled by typing; a bad number is a form error read from the summary, then saved', async () => {
    const l = await newLink();
    await page.goto(`${base}${l.path}`);
    await tabTo('metodo-tarjeta');
    await page.keyboard.press('Enter');
    assert.equal(await page.locator('#metodo-tarjeta').getAttribute('open'), '');
    const fill = async (number: string) => {
      await tabTo('card_number');
      await page.keyboard.type(number);
      await page.keyboard.press('Tab');
      await page.keyboard.type('12');
      await page.keyboard.press('Tab');
      await page.keyboard.type(String(new Date().getUTCFullYear() + 3));
      await page.keyboard.press('Tab');
      await page.keyboard.type('123');
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'holder_name');
      await page.keyboard.press('Control+A');
      await page.keyboard.type('Camila Rojas');
      await page.keyboard.press('Tab');
      if (!(await page.locator('#acepto_tarjeta').isChecked())) await page.keyboard.press('Space');
      await page.keyboard.press('Tab');
      await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    };
    await fill('4242 4242 4242 4241');
    await page.waitForSelector('[data-error-summary]');
    assert.equal(await page.evaluate(() => document.activeElement?.hasAttribute('data-error-summary')), true, 'the error summary has the focus');
    assert.match(plain(await page.locator('[data-error-summary]').innerText()), /El número de la tarjeta no es válido/);
    assert.equal(await page.locator('#card_number').inputValue(), '', 'the number is not shown back');
    await noSideScroll();
    await shot('32-connect-card-error');
    await fill('4242 4242 4242 4242');
    await page.waitForSelector('text=Quedó inscrita');
    assert.match(await text(), /tu tarjeta Visa terminada en 4242/);
    await noSideScroll();
    await shot('33-connect-card-done');
    const cards = (await co.req({ url: `/v1/customers/${l.customer_id}/cards` })).body.data;
    assert.equal(cards.length, 1);
    assert.equal(cards[0].authorization, true);
  });

  test('wallet account: Nequi and the phone, then the code from the app typed and sent with Enter', async () => {
    const l = await newLink();
    await page.goto(`${base}${l.path}`);
    await tabTo('metodo-billetera');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'wallet_bank');
    await page.keyboard.type('Nequi');
    assert.equal(await page.locator('#wallet_bank option:checked').innerText(), 'Nequi');
    await page.keyboard.press('Tab');
    await page.keyboard.type('300 123 4567');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForURL(/\/codigo\//), page.keyboard.press('Enter')]);
    assert.match(await text(), /Confirma tu Nequi/);
    await noSideScroll();
    await shot('34-connect-wallet-code');
    await tabTo('otp');
    await page.keyboard.type('123456');
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await page.waitForSelector('text=Quedó inscrita');
    assert.match(await text(), /Quedó activa/);
    await shot('35-connect-wallet-done');
    const [account] = await accountsOf(l.customer_id);
    assert.deepEqual([account.subtype, account.status], ['ELECTRONIC_DEPOSIT', 'ACTIVE']);
  });

  test('a used-up link: the page left open is sent with the keyboard and says the link was used; opening it again says so too', async () => {
    const l = await newLink();
    await page.goto(`${base}${l.path}`);
    // Meanwhile the link is used from another device.
    const other = await h.app.inject({ method: 'GET', url: l.path });
    const token = /name="token" value="([^"]+)"/.exec(other.body)![1];
    const BANCOLOMBIA = /<option value="([^"]+)">Bancolombia<\/option>/.exec(other.body)![1];
    h.clock.advance(1000);
    const used = await h.app.inject({
      method: 'POST',
      url: `${l.path}/cuenta`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token, bank: BANCOLOMBIA, account_type: 'SAVINGS', account_number: '12345678', acepto_cuenta: 'si' }).toString(),
    });
    assert.equal(used.statusCode, 200);

    await tabTo('bank');
    await page.keyboard.type('Bancolombia');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ahorros');
    await page.keyboard.press('Tab');
    await page.keyboard.type('99887766');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await page.waitForSelector('text=Este enlace ya se usó');
    await noSideScroll();
    await shot('36-connect-used');
    assert.equal((await accountsOf(l.customer_id)).length, 1, 'only the first enrollment exists');
    const again = await page.goto(`${base}${l.path}`);
    assert.equal(again?.status(), 410);
    assert.match(await text(), /Este enlace ya se usó/);
  });
});
