import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Faults a fake provider plays on its next call of an operation: `timeout` (never answers, does
 * nothing), `5xx`, `lose_answer` (does it, then drops the connection), `hold` (does it, then keeps
 * the caller waiting until the fake closes: a process killed mid-call), `slow` (does it, answers
 * after `slowMs`).
 */
export type FakeFault = 'timeout' | '5xx' | 'lose_answer' | 'hold' | 'slow';

/** A fake provider's HTTP server on a loopback port (its `url` ends in `/v1`) and its fault plan. */
export abstract class FakeHttpService {
  url = '';
  /** How long a `slow` fault keeps the answer. */
  slowMs = 2_000;
  private readonly faults = new Map<string, FakeFault[]>();
  private server: http.Server | null = null;

  protected abstract handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  failNext(operation: string, fault: FakeFault): void {
    this.faults.set(operation, [...(this.faults.get(operation) ?? []), fault]);
  }

  protected nextFault(operation: string): FakeFault | undefined {
    return this.faults.get(operation)?.shift();
  }

  /** After the work is done: whether its answer goes out (`lose_answer` drops the connection, `hold` keeps it; `slow` waits first). */
  protected async answers(fault: FakeFault | undefined, res: http.ServerResponse): Promise<boolean> {
    if (fault === 'lose_answer') {
      res.destroy();
      return false;
    }
    if (fault === 'hold') return false;
    if (fault === 'slow') await new Promise((resolve) => setTimeout(resolve, this.slowMs));
    return true;
  }
}
