import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, ENGINE, type Company, type Harness } from '../../test/harness.ts';
import { Receiver } from '../../test/receiver.ts';
import { runDueExpirations } from '../../test/support/payments.ts';
import { createPayment, goodCard, paymentStatus, plain } from '../../test/support/pages.ts';
import { CHROMIUM, launchChromium } from '../../test/support/browser.ts';

/**
 * The payer pages in a real browser: Debian's Chromium driven by playwright-core (never a
 * downloaded browser), at a 360 px wide viewport. Screenshots go to .test-data/screenshots/.
 */

const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
const SHOTS = path.resolve('.test-data/screenshots');

/** The webhook dispatcher's tick (as in webhooks.test.ts): what a worker runs. */
function dispatcherTick(h: Harness): Promise<number> {
  return h.deliverWebhooks();
}

/** A merchant's site: where a paid payment sends the payer (redirect_url). */
async function merchantSite(): Promise<{ url: string; visits: string[]; close: () => void }> {
  const visits: string[] = [];
  const server = http.createServer((req, res) => {
    visits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      '<!doctype html><html lang="es-CO"><head><meta name="viewport" content="width=device-width"><title>Tienda</title></head><body><h1>Gracias por tu compra</h1></body></html>',
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, visits, close: () => server.close() };
}

describe('payer pages in Chromium at 360 px', { skip: SKIP }, () => {
  let h: Harness;
  let co: Company;
  let base: string;
  let browser: BrowserContext;
  let page: Page;
  let merchant: Awaited<ReturnType<typeof merchantSite>>;
  let userDataDir: string;

  const shot = async (name: string) => {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  /** The payment link as the API gives it, opened on the listening test server. */
  const open = async (paymentLink: string) => {
    const link = new URL(paymentLink);
    await page.goto(`${base}${link.pathname}${link.search}`);
  };
  const text = async () => plain(await page.locator('main').innerText());

  before(async () => {
    h = await createHarness();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    co = await h.company('Acme Telecomunicaciones SAS');
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

  test('pay with the approving card: success, redirect to the merchant, approved in the API, payment.approved delivered', async () => {
    const receiver = await new Receiver().start();
    try {
      const hook = await co.req({
        url: '/v1/webhooks',
        body: { name: 'Pagos', description: 'aprobados', url: receiver.url, events: ['payment.approved'] },
      });
      assert.equal(hook.status, 200, hook.raw);
      const p = await createPayment(co, {
        reference: 'FAC-2025-0012',
        redirect_url: `${merchant.url}/gracias`,
        expires_at: new Date(h.clock.now().getTime() + 3 * 86_400_000).toISOString(),
      });
      await open(p.payment_link);
      assert.equal(await page.getAttribute('html', 'lang'), 'es-CO');
      const shown = await text();
      assert.match(shown, /Factura de marzo/);
      assert.match(shown, /\$ 150\.000/);
      assert.match(await page.locator('header').innerText(), /Acme Telecomunicaciones SAS/, 'the company is named');
      // Nothing sticks out of a 360 px screen.
      assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, 'no horizontal scrolling at 360 px');
      await shot('01-payment-page');

      await page.getByLabel('Número de la tarjeta').fill(goodCard.card_number);
      await page.getByLabel('Mes').fill('12');
      await page.getByLabel('Año').fill(goodCard.exp_year);
      await page.getByLabel('Código de seguridad (CVV)').fill('123');
      await page.getByLabel('Nombre del titular').fill('Ana María Pérez');
      await shot('02-card-filled');
      await Promise.all([page.waitForURL(`${merchant.url}/**`), page.getByRole('button', { name: 'Pagar $ 150.000' }).click()]);
      assert.equal(page.url(), `${merchant.url}/gracias?payment_id=${p.id}`);
      assert.equal(await page.locator('h1').innerText(), 'Gracias por tu compra');
      await shot('03-merchant-after-redirect');

      const got = await paymentStatus(co, p.id);
      assert.equal(got.status, 'approved');
      assert.equal(got.amount_paid, 150000);

      // Back on the link: the payer sees it paid.
      await open(p.payment_link);
      assert.match(await text(), /Pago recibido/);
      await shot('04-paid');

      // The webhook: its delivery was written with the change; the dispatcher sends it. On the
      // shared PostgreSQL database the global dispatcher would also send other test files'
      // deliveries, so there the test checks the queued delivery instead of ticking.
      const deliveries = await co.req({ url: `/v1/webhooks/${hook.body.data.id}/deliveries` });
      assert.deepEqual(
        deliveries.body.data.map((d: { event: string }) => d.event),
        ['payment.approved'],
      );
      if (ENGINE === 'pglite') {
        await dispatcherTick(h);
        await receiver.waitFor(1);
        const body = JSON.parse(receiver.received[0].raw.toString('utf8'));
        assert.equal(receiver.received[0].headers['x-webhook-event'], 'payment.approved');
        assert.equal(body.event, 'payment.approved');
        assert.equal(body.data.id, p.id);
        assert.equal(body.data.status, 'approved');
      }
    } finally {
      await receiver.close();
    }
  });

  test('without a redirect URL the payer sees the success page', async () => {
    const p = await createPayment(co, { title: 'Mensualidad de abril' });
    await open(p.payment_link);
    await page.getByLabel('Número de la tarjeta').fill(goodCard.card_number);
    await page.getByLabel('Mes').fill('12');
    await page.getByLabel('Año').fill(goodCard.exp_year);
    await page.getByLabel('Código de seguridad (CVV)').fill('123');
    await page.getByLabel('Nombre del titular').fill('Ana María Pérez');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: /^Pagar/ }).click()]);
    const shown = await text();
    assert.match(shown, /Pago recibido/);
    assert.match(shown, /Tarjeta de crédito o débito/);
    assert.equal(await page.getByRole('status').first().isVisible(), true);
    await shot('05-success-page');
  });

  test('a declining card shows the decline and the payment stays payable', async () => {
    const p = await createPayment(co);
    await open(p.payment_link);
    await page.getByLabel('Número de la tarjeta').fill('4000 0000 0000 0002');
    await page.getByLabel('Mes').fill('12');
    await page.getByLabel('Año').fill(goodCard.exp_year);
    await page.getByLabel('Código de seguridad (CVV)').fill('123');
    await page.getByLabel('Nombre del titular').fill('Ana María Pérez');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Pagar $ 150.000' }).click()]);
    const alert = page.getByRole('alert');
    assert.match(plain(await alert.innerText()), /Tu pago no fue aprobado/);
    assert.match(plain(await alert.innerText()), /La entidad financiera rechazó la transacción/);
    assert.equal((await paymentStatus(co, p.id)).status, 'declined');
    assert.ok(await page.getByLabel('Número de la tarjeta').isVisible(), 'the card form is there to try again');
    await shot('06-declined');

    // ...and it is: the approving card pays it now.
    await page.getByLabel('Número de la tarjeta').fill(goodCard.card_number);
    await page.getByLabel('Mes').fill('12');
    await page.getByLabel('Año').fill(goodCard.exp_year);
    await page.getByLabel('Código de seguridad (CVV)').fill('123');
    await page.getByLabel('Nombre del titular').fill('Ana María Pérez');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Pagar $ 150.000' }).click()]);
    assert.match(await text(), /Pago recibido/);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('client-side checks catch a mistyped card before it is sent', async () => {
    const p = await createPayment(co);
    await open(p.payment_link);
    await page.getByLabel('Número de la tarjeta').fill('4242 4242 4242 4241');
    await page.getByLabel('Mes').fill('12');
    await page.getByLabel('Año').fill(goodCard.exp_year);
    await page.getByLabel('Código de seguridad (CVV)').fill('12');
    await page.getByLabel('Nombre del titular').fill('Ana');
    const before = page.url();
    await page.getByRole('button', { name: 'Pagar $ 150.000' }).click();
    assert.equal(page.url(), before, 'nothing was sent');
    assert.match(await page.locator('#card_number-error').innerText(), /no es válido/);
    assert.equal(await page.getByLabel('Número de la tarjeta').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'card_number', 'focus moves to the first wrong field');
    await shot('07-client-validation');
    assert.equal((await paymentStatus(co, p.id)).status, 'pending');
  });

  test('keyboard only: the card form is reached, filled and submitted with Tab and Enter, with a visible focus', async () => {
    const p = await createPayment(co, { title: 'Pago con teclado' });
    await open(p.payment_link);
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate(() => document.activeElement?.id)) === 'card_number';
    }
    assert.ok(reached, 'Tab reaches the card number');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    assert.notEqual(outline, 'none', 'the focused field shows a focus outline');
    await page.keyboard.type(goodCard.card_number);
    await page.keyboard.press('Tab');
    await page.keyboard.type('12');
    await page.keyboard.press('Tab');
    await page.keyboard.type(goodCard.exp_year);
    await page.keyboard.press('Tab');
    await page.keyboard.type('123');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ana Maria Perez');
    await shot('08-keyboard-focus');
    await Promise.all([page.waitForURL(/intento=pi_/), page.keyboard.press('Enter')]);
    assert.match(await text(), /Pago recibido/);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('plan page, keyboard only at 360 px: the payer subscribes with Tab, typing, Space and Enter', async () => {
    const plan = await co.req({ url: '/v1/plans', body: { name: 'Plan Internet Hogar', amount_in_cents: 9_900_000, cicle_frequency: 'monthly' } });
    assert.equal(plan.status, 200, plan.raw);
    await open(plan.body.link);
    assert.match(await text(), /\$ 99\.000 cada mes/);
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, 'no horizontal scrolling at 360 px');
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate(() => document.activeElement?.id)) === 'first_name';
    }
    assert.ok(reached, 'Tab reaches the name');
    await page.keyboard.type('Camila');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Rojas');
    await page.keyboard.press('Tab');
    await page.keyboard.type('310 555 0101');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'acepto', 'the authorization box is next');
    await page.keyboard.press('Space');
    await shot('20-plan-page');
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await page.waitForSelector('text=Quedaste suscrito');
    await shot('21-plan-subscribed');
    const subs = (await co.req({ url: `/v1/subscriptions?filter[plan_id]=${plan.body.id}` })).body.data;
    assert.equal(subs.length, 1);
    assert.equal((await co.req({ url: `/v1/customers/${subs[0].customer_id}` })).body.phone, '+573105550101');
  });

  test('bank transfer through the sandbox bank, and the instant-key QR page', async () => {
    const p = await createPayment(co, { title: 'Matrícula 2025-1', allows: ['banklink', 'rtkey'], amount: 1250000 });
    await open(p.payment_link);
    assert.equal(await page.locator('#metodo-banklink').getAttribute('open'), '', 'the first method offered is open');
    await page.getByLabel('Tu banco').selectOption({ index: 1 });
    await Promise.all([page.waitForURL(/\/attempts\/pi_/), page.getByRole('button', { name: 'Ir a mi banco' }).click()]);
    assert.match(await text(), /Autoriza el pago/);
    assert.match(await text(), /\$ 1\.250\.000/);
    await shot('09-sandbox-bank');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Rechazar' }).click()]);
    assert.match(plain(await page.getByRole('alert').innerText()), /Tu pago no fue aprobado/);

    await page.getByText('Llave o código QR', { exact: true }).click();
    await Promise.all([page.waitForURL(/\/attempts\/pi_/), page.getByRole('button', { name: 'Generar código QR' }).click()]);
    assert.ok(await page.getByRole('img', { name: /Código QR para pagar \$ 1\.250\.000/ }).isVisible());
    assert.match(await page.getByLabel('Código para copiar (si no puedes escanear)').inputValue(), /^000201/);
    await shot('10-qr');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Simular pago (pruebas)' }).click()]);
    assert.match(await text(), /Pago recibido/);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('open and partial amounts at 360 px', async () => {
    const partial = await createPayment(co, {
      title: 'Cuota de administración',
      amount: 300000,
      partial_payment_config: { enabled: true, minimum_amount: 50000 },
    });
    await open(partial.payment_link);
    await page.getByLabel('Monto en pesos').fill('100.000');
    await Promise.all([page.waitForURL(/monto=/), page.getByRole('button', { name: 'Usar este monto' }).click()]);
    await page.getByText('Billetera A', { exact: true }).click();
    await page.getByLabel('Número de celular registrado en Billetera A').fill('399 111 1111');
    await Promise.all([page.waitForURL(/intento=pi_/), page.getByRole('button', { name: 'Pagar $ 100.000 con Billetera A' }).click()]);
    const shown = await text();
    assert.match(shown, /Recibimos tu pago de \$ 100\.000/);
    assert.match(shown, /Falta por pagar \$ 200\.000/);
    await shot('11-partial-paid');

    const openAmount = await createPayment(co, { title: 'Donación', amount: undefined, open_amount: true, allows: ['card'] });
    await open(openAmount.payment_link);
    assert.match(await text(), /Monto abierto/);
    await page.getByLabel('Monto en pesos').fill('500');
    await Promise.all([page.waitForURL(/monto=/), page.getByRole('button', { name: 'Continuar' }).click()]);
    assert.match(plain(await page.getByRole('alert').innerText()), /El monto mínimo es \$ 1\.000/);
    await shot('12-open-amount-error');
  });

  test('the payment portal finds a payment by its reference', async () => {
    const p = await createPayment(co, { title: 'Factura FV-889', reference: `PORTAL-${Date.now().toString(36)}` });
    await page.goto(`${base}/portal`);
    await page.getByLabel('Referencia de pago').fill(p.reference);
    await Promise.all([page.waitForURL(/referencia=/), page.getByRole('button', { name: 'Buscar' }).click()]);
    assert.match(await text(), /Encontramos 1 cobro/);
    await shot('13-portal');
    await Promise.all([page.waitForURL(`**/pay/${p.id}`), page.getByRole('link', { name: /Ver y pagar/ }).click()]);
    assert.match(await text(), /Factura FV-889/);
  });

  test('an expired link says it expired', async () => {
    const p = await createPayment(co, { title: 'Factura vencida', expires_at: new Date(h.clock.now().getTime() + 3_600_000).toISOString() });
    h.clock.advance(2 * 3_600_000);
    await runDueExpirations(h, [p.id]);
    assert.equal((await paymentStatus(co, p.id)).status, 'expired');
    await open(p.payment_link);
    assert.match(await page.locator('h1').innerText(), /Este enlace de pago venció/);
    assert.equal(await page.locator('form').count(), 0, 'nothing to pay');
    await shot('14-expired');
  });

  test('an unknown link is a Spanish 404 page', async () => {
    const res = await page.goto(`${base}/pay/pay_01m800jmks947bdw72bbhg5694`);
    assert.equal(res?.status(), 404);
    assert.match(await text(), /No encontramos este cobro/);
    await shot('15-not-found');
  });
});
