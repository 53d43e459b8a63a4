import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { plain } from '../../../test/support/pages.ts';
import { BANCOLOMBIA, chargeEvents } from '../../../test/support/charges.ts';
import { CHROMIUM, launchChromium } from '../../../test/support/browser.ts';

/**
 * The banklink flow in a real browser (Debian's Chromium driven by playwright-core, never a
 * downloaded browser) at 360 px: the API creates the charge, the payer opens its url, approves or
 * declines on the sandbox bank page, lands on the merchant's redirect_url, and the API shows the
 * outcome. Screenshots go to .test-data/screenshots/.
 */

const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
const SHOTS = path.resolve('.test-data/screenshots');

/** The merchant's site: where the bank sends the payer back (redirect_url). */
async function merchantSite(): Promise<{ url: string; visits: string[]; close: () => void }> {
  const visits: string[] = [];
  const server = http.createServer((req, res) => {
    visits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      '<!doctype html><html lang="es-CO"><head><meta name="viewport" content="width=device-width"><title>Tienda</title></head><body><h1>Estamos confirmando tu pago</h1></body></html>',
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, visits, close: () => server.close() };
}

describe('banklink charge through the sandbox bank, in Chromium at 360 px', { skip: SKIP }, () => {
  let h: Harness;
  let co: Company;
  let base: string;
  let browser: BrowserContext;
  let page: Page;
  let merchant: Awaited<ReturnType<typeof merchantSite>>;
  let userDataDir: string;
  let customer: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  /** The charge's url as the API gives it, opened on the listening test server. */
  const open = (url: string) => page.goto(`${base}${new URL(url).pathname}`);
  const text = async () => plain(await page.locator('main').innerText());
  const charge = async (id: string) => (await co.req({ url: `/v1/charges/${id}` })).body;
  const createBanklink = async (amount: number, reference: string) => {
    const res = await co.req({
      url: '/v1/charges/banklink',
      body: {
        amount,
        bank_id: BANCOLOMBIA,
        customer_id: customer,
        redirect_url: `${merchant.url}/pedido/77?paso=pago`,
        external_id: `pedido-${reference}`,
        reference,
      },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body as { id: string; url: string; status: string };
  };

  before(async () => {
    h = await createHarness();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    co = await h.company('Ferretería El Tornillo SAS');
    customer = await createCustomer(co);
    merchant = await merchantSite();
    fs.mkdirSync(SHOTS, { recursive: true });
    ({ browser, page, userDataDir } = await launchChromium());
  });

  after(async () => {
    await browser?.close();
    merchant?.close();
    await h?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  test('approve: the payer lands on redirect_url with charge_id and the API shows the charge paid', async () => {
    const c = await createBanklink(185000, 'FAC-2025-0101');
    assert.equal(c.status, 'processing');
    await open(c.url);
    assert.equal(await page.getAttribute('html', 'lang'), 'es-CO');
    const shown = await text();
    assert.match(shown, /Autoriza el pago/);
    assert.match(shown, /Bancolombia · Pagos en línea/);
    assert.match(shown, /Ferretería El Tornillo SAS/);
    assert.match(shown, /Pago FAC-2025-0101/);
    assert.match(shown, /\$ 185\.000/);
    assert.match(shown, new RegExp(c.id));
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, 'no horizontal scrolling at 360 px');
    const approve = page.getByRole('button', { name: 'Aprobar' });
    const box = await approve.boundingBox();
    assert.ok(box && box.height >= 48, 'a touch target of at least 48 px');
    await shot('banklink-01-bank-page');

    await Promise.all([page.waitForURL(`${merchant.url}/**`), approve.click()]);
    assert.equal(page.url(), `${merchant.url}/pedido/77?paso=pago&charge_id=${c.id}`);
    assert.equal(await page.locator('h1').innerText(), 'Estamos confirmando tu pago');
    await shot('banklink-02-merchant-after-approve');

    const paid = await charge(c.id);
    assert.equal(paid.status, 'paid');
    assert.ok(paid.paid_at);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid'],
    );

    // The link again: the payer sees it paid, with the way back to the merchant.
    await open(c.url);
    assert.match(await text(), /Pago recibido/);
    await shot('banklink-03-paid');
    await Promise.all([page.waitForURL(`${merchant.url}/**`), page.getByRole('link', { name: 'Volver al comercio' }).click()]);
    assert.equal(new URL(page.url()).searchParams.get('charge_id'), c.id);
  });

  test('decline (keyboard only): the payer also lands on redirect_url and the API shows the charge failed', async () => {
    const c = await createBanklink(62500, 'FAC-2025-0102');
    await open(c.url);
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate(() => document.activeElement?.textContent?.trim())) === 'Rechazar';
    }
    assert.ok(reached, 'Tab reaches Rechazar');
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle), 'none', 'a visible focus');
    await shot('banklink-04-reject-focused');
    await Promise.all([page.waitForURL(`${merchant.url}/**`), page.keyboard.press('Enter')]);
    assert.equal(page.url(), `${merchant.url}/pedido/77?paso=pago&charge_id=${c.id}`);

    const failed = await charge(c.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.remarks, 'TRANSACTION_REJECTED');
    await open(c.url);
    const shown = await text();
    assert.match(shown, /Tu pago no fue aprobado/);
    assert.match(shown, /La entidad financiera rechazó la transacción/);
    assert.equal(await page.getByRole('button', { name: 'Aprobar' }).count(), 0, 'nothing to approve any more');
    await shot('banklink-05-declined');
  });

  test('the instant-key QR page of an rtkey charge: the QR, its payload to copy, and "Simular pago"', async () => {
    const res = await co.req({ url: '/v1/charges/rtkey', body: { amount: 48000, customer_id: customer, expires_in: 15, reference: 'MESA-12' } });
    assert.equal(res.status, 200, res.raw);
    await open(res.body.url);
    assert.ok(await page.getByRole('img', { name: /Código QR para pagar \$ 48\.000/ }).isVisible());
    assert.equal(await page.getByLabel('Código para copiar (si no puedes escanear)').inputValue(), res.body.qr.payload);
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360);
    await shot('rtkey-01-qr');
    await Promise.all([page.waitForURL(`**/pay/${res.body.id}`), page.getByRole('button', { name: 'Simular pago (pruebas)' }).click()]);
    assert.match(await text(), /Pago recibido/);
    assert.equal((await charge(res.body.id)).status, 'paid');
    await shot('rtkey-02-paid');
  });
});
