import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

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

/** What the browser sent to the server behind a recording proxy. */
export interface Seen {
  method: string;
  url: string;
  body: string;
}

/**
 * What the browser sends to our server, exactly: a proxy in front of the test server that records
 * every request (method, URL, raw body) before passing it on.
 */
export async function recordingProxy(target: string): Promise<{ url: string; seen: Seen[]; close: () => void }> {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    seen.push({ method: req.method ?? 'GET', url: req.url ?? '', body: body.toString('utf8') });
    const upstream = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    upstream.end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => server.close() };
}
