import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium, never a downloaded browser (the browser tests skip without it). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium in a fresh profile, with the flags this machine's closed network needs
 * (no background networking, no component updates). A phone-sized, Spanish viewport unless told
 * otherwise. The caller closes `browser` and removes `userDataDir`.
 */
export async function launchChromium(opts: { phone?: boolean } = {}): Promise<{ browser: BrowserContext; page: Page; userDataDir: string }> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    ...(opts.phone === false ? {} : { viewport: { width: 360, height: 780 }, locale: 'es-CO' }),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = browser.pages()[0] ?? (await browser.newPage());
  return { browser, page, userDataDir };
}
