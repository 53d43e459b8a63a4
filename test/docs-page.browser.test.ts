import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { createHarness, type Harness } from './harness.ts';
import { CHROMIUM, launchChromium } from './support/browser.ts';

/**
 * The API reference at /docs on a phone (docs/openapi.md), in Debian's Chromium at 360 px: it
 * loads with every request answered by the service itself (any other host is refused and
 * recorded, as on a closed network), shows an operation, and nothing is wider than the screen.
 */
const SKIP = fs.existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;

describe('the /docs reference on a phone', { skip: SKIP }, () => {
  let h: Harness;
  let origin: string;
  let browser: BrowserContext;
  let page: Page;
  let userDataDir: string;
  const outside: string[] = [];
  const local: string[] = [];

  before(async () => {
    h = await createHarness();
    origin = await h.app.listen({ port: 0, host: '127.0.0.1' });
    ({ browser, page, userDataDir } = await launchChromium());
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.origin === origin) {
        local.push(url.pathname);
        return route.continue();
      }
      outside.push(url.href);
      return route.abort();
    });
  });
  after(async () => {
    await browser?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    await h?.close();
  });

  const overflow = () =>
    page.evaluate(() => ({
      document: document.documentElement.scrollWidth,
      body: document.body.scrollWidth,
      viewport: window.innerWidth,
    }));

  test('loads from this service alone, shows an operation, and never scrolls sideways at 360 px', { timeout: 120_000 }, async () => {
    const started = Date.now();
    await page.goto(`${origin}/docs`, { waitUntil: 'load' });
    await page.locator('h1', { hasText: 'Recaudo API' }).first().waitFor({ state: 'visible', timeout: 60_000 });
    const top = await overflow();
    assert.equal(top.viewport, 360);
    assert.ok(top.document <= top.viewport && top.body <= top.viewport, `at the top: ${JSON.stringify(top)}`);

    // Operations are rendered as the reader scrolls down to them.
    const operation = page.locator('h3', { hasText: 'Create a customer' }).first();
    for (let step = 0; step < 80 && !(await operation.count()); step++) {
      await page.mouse.wheel(0, 1500);
      await page.waitForTimeout(100);
    }
    await operation.scrollIntoViewIfNeeded({ timeout: 30_000 });
    const box = await operation.boundingBox();
    assert.ok(box && box.width > 0 && box.x >= 0 && box.x + box.width <= 360, `the operation's title is on screen: ${JSON.stringify(box)}`);
    assert.ok(await page.getByText('createCustomer').first().isVisible(), 'its operationId is shown');
    const there = await overflow();
    assert.ok(there.document <= there.viewport && there.body <= there.viewport, `at the operation: ${JSON.stringify(there)}`);

    assert.deepEqual(outside, [], 'no request left the service (no CDN, no fonts, no telemetry)');
    assert.ok(local.includes('/docs/js/scalar.js'), local.join(' '));
    assert.ok(local.includes('/v1/openapi.json'), local.join(' '));
    console.log(`/docs on a 360 px phone: an operation on screen ${Date.now() - started} ms after navigation, ${local.length} local requests`);
  });
});
