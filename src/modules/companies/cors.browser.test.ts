import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { cardBody } from '../../../test/support/cards.ts';
import { CHROMIUM, launchChromium } from '../../../test/support/browser.ts';

/**
 * Browser tokenization across origins (docs/browser-tokenization.md) in Debian's Chromium
 * (playwright-core, never a downloaded browser): a shop page served from another local origin calls
 * `fetch` to POST /v1/tokens with the publishable key. From an allowed origin the browser's
 * preflight passes and the page reads the token; from any other the browser blocks the call (the
 * POST is never sent: no token is made).
 */
const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;

/** The shop's checkout page: tokenizes the card with fetch and leaves the outcome in window.outcome. */
function shopPage(api: string, publishableKey: string, card: Record<string, unknown>): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Tienda</title></head><body>
<p id="estado">…</p>
<script>
window.outcome = (async () => {
  try {
    const res = await fetch(${JSON.stringify(`${api}/v1/tokens`)}, {
      method: 'POST',
      headers: {
        authorization: 'Bearer ${publishableKey}',
        'content-type': 'application/json',
        'x-idempotency': crypto.randomUUID(),
      },
      body: JSON.stringify(${JSON.stringify(card)}),
    });
    const body = await res.json();
    document.getElementById('estado').textContent = 'ok';
    return { ok: true, status: res.status, id: body.id, requestId: res.headers.get('x-request-id') };
  } catch (error) {
    document.getElementById('estado').textContent = 'bloqueado';
    return { ok: false, error: String(error) };
  }
})();
</script></body></html>`;
}

async function serve(host: string, html: () => string): Promise<{ origin: string; close: () => void }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html());
  });
  server.listen(0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { origin: `http://${host}:${port}`, close: () => server.close() };
}

describe('cross-origin POST /v1/tokens in Chromium', { skip: SKIP }, () => {
  let h: Harness;
  let co: Company;
  let api: string;
  let browser: BrowserContext;
  let page: Page;
  let userDataDir: string;
  let allowedShop: { origin: string; close: () => void };
  let otherShop: { origin: string; close: () => void };
  const { customer_id: _c, authorization: _a, ...card } = cardBody('x');
  const tokenCount = async () =>
    Number(
      (
        await h.runtime.deps.database.db
          .selectFrom('card_tokens')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('company_id', '=', co.company.id)
          .executeTakeFirstOrThrow()
      ).n,
    );

  before(async () => {
    h = await createHarness();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    co = await h.company('Tienda de Boletas SAS');
    const html = () => shopPage(api, co.publishable_keys.test, card);
    // Two shops on two other origins: "localhost" and "127.0.0.1" on other ports are other origins.
    allowedShop = await serve('localhost', html);
    otherShop = await serve('127.0.0.1', html);
    const set = await co.req({ method: 'PUT', url: '/v1/company/allowed-origins', body: { origins: [allowedShop.origin] } });
    assert.equal(set.status, 200, set.raw);
    ({ browser, page, userDataDir } = await launchChromium({ phone: false }));
  });

  after(async () => {
    await browser?.close();
    allowedShop?.close();
    otherShop?.close();
    await h?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  test('a page on an allowed origin gets its token (preflight and request pass)', async () => {
    const before = await tokenCount();
    await page.goto(`${allowedShop.origin}/checkout`);
    const outcome = (await page.evaluate(() => (window as unknown as { outcome: Promise<unknown> }).outcome)) as {
      ok: boolean;
      status: number;
      id: string;
      requestId: string | null;
      error?: string;
    };
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.status, 200);
    assert.match(outcome.id, /^tok_/);
    assert.ok(outcome.requestId, 'exposed headers are readable');
    assert.equal(await tokenCount(), before + 1);
  });

  test('a page on another origin cannot read the answer: the browser withholds it (the preflight no longer tells which origins are listed)', async () => {
    const before = await tokenCount();
    const messages: string[] = [];
    page.on('console', (m) => messages.push(m.text()));
    await page.goto(`${otherShop.origin}/checkout`);
    const outcome = (await page.evaluate(() => (window as unknown as { outcome: Promise<unknown> }).outcome)) as { ok: boolean; error?: string };
    assert.equal(outcome.ok, false);
    assert.match(String(outcome.error), /TypeError|Failed to fetch/);
    assert.ok(
      messages.some((m) => /CORS/.test(m)),
      `Chromium reports the CORS refusal: ${messages.join(' | ')}`,
    );
    // The preflight answers every origin alike (issue 29), so the POST reaches the API and makes a
    // token, but without Access-Control-Allow-Origin for this origin the page never gets it.
    assert.ok((await tokenCount()) <= before + 1, 'at most the one request the page sent');
  });
});
