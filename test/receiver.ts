import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  at: number;
}

export type Mode = { status: number; delayMs?: number } | { hang: true };

/** A real local HTTP receiver whose answer can be switched, recording every request it gets. */
export class Receiver {
  readonly received: Received[] = [];
  mode: Mode = { status: 200 };
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      this.received.push({ headers: req.headers, raw: Buffer.concat(chunks), at: Date.now() });
      for (const w of this.waiters.splice(0)) w();
      const mode = this.mode;
      if ('hang' in mode) return; // never answers: the sender's timeout must fire
      const answer = () => {
        res.writeHead(mode.status, { 'content-type': 'text/plain' });
        res.end(mode.status < 300 ? 'ok' : 'receiver says no');
      };
      if (mode.delayMs) setTimeout(answer, mode.delayMs);
      else answer();
    });
  });
  private waiters: (() => void)[] = [];
  url = '';

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** Resolves once `count` requests have arrived (no sleeps). */
  async waitFor(count: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`receiver got ${this.received.length} of ${count}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
  }
}
