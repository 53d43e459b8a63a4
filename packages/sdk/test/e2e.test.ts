import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFaultDatabase, freePort, type FaultDatabase } from '../../../test/fault-harness.ts';
import { ensureBuilt } from '../../../test/support/build.ts';
import type * as SdkModule from '../src/index.ts';

/**
 * Issue 19's acceptance: the built server (`node dist/main.js`) on a fresh database, a company made
 * by the operator's CLI, and the SDK as a merchant installs it (the package built by its own
 * `npm run build`, imported as `@recaudo/node`) driving customer → card → charge → refund; a local
 * receiver verifies the real deliveries with `verifyWebhook` and refuses a forged and an unsigned one.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const ENGINE: 'pglite' | 'postgres' = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';
const RATE_LIMIT_TEST = 10;

/** The SDK as published: packages/sdk/dist through the package's exports map. */
type Sdk = typeof SdkModule;

function run(cmd: string, args: string[], cwd = ROOT): void {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 300_000, env: { ...process.env, npm_config_loglevel: 'error' } });
  if (res.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${res.status ?? res.signal}):\n${res.stdout}\n${res.stderr}`);
}

/** The built server, `node dist/main.js`: dist/ rebuilt first when the sources changed since (ensureBuilt). */
async function serverCommand(): Promise<{ args: string[]; how: string }> {
  await ensureBuilt();
  return { args: [path.join(ROOT, 'dist', 'main.js')], how: 'node dist/main.js' };
}

interface Received {
  raw: Buffer;
  headers: IncomingHttpHeaders;
  status: number;
  reason?: string;
  event?: { id: string; event: string; data: Record<string, unknown> };
}

/** A merchant's webhook endpoint: every request is verified with the SDK; 200 when genuine, 400 otherwise. */
class Receiver {
  readonly received: Received[] = [];
  credentials: { secret?: string; token?: string } = {};
  private server: http.Server | undefined;
  port = 0;
  constructor(private readonly sdk: Sdk) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/recaudo/webhooks`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const entry: Received = { raw, headers: req.headers, status: 200 };
        try {
          entry.event = this.sdk.verifyWebhook(raw, req.headers, this.credentials) as Received['event'];
        } catch (error) {
          entry.status = 400;
          entry.reason = error instanceof this.sdk.WebhookVerificationError ? error.reason : String(error);
        }
        this.received.push(entry);
        res.writeHead(entry.status, { 'content-type': 'text/plain' }).end(entry.reason ?? 'ok');
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
  }

  async waitFor(match: (r: Received) => boolean, timeoutMs = 30_000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(
          `no matching delivery in ${timeoutMs} ms; received: ${JSON.stringify(this.received.map((r) => [r.status, r.reason, r.headers['x-webhook-event']]))}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Posts a delivery to this receiver as anyone on the network could; answers the status. */
  async post(raw: string, headers: Record<string, string>): Promise<number> {
    const res = await fetch(this.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });
    await res.text();
    return res.status;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

describe(`@recaudo/node against the built server (${ENGINE})`, () => {
  let sdk: Sdk;
  let server: ChildProcess;
  let serverLog = '';
  let how: { args: string[]; how: string } = { args: [], how: '' };
  let base = '';
  let apiKey = '';
  let dataDir = '';
  let database: FaultDatabase | undefined;
  let receiver: Receiver;
  const statuses: number[] = [];

  before(async () => {
    const started = Date.now();
    how = await serverCommand();
    const built = Date.now();
    run('npm', ['run', 'build', '-w', '@recaudo/node']);
    sdk = (await import('@recaudo/node')) as unknown as Sdk;
    const sdkBuilt = Date.now();

    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-sdk-e2e-'));
    if (ENGINE === 'postgres') database = await createFaultDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url ?? '',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_TEST: String(RATE_LIMIT_TEST),
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      PUBLIC_BASE_URL: base,
    };
    server = spawn(process.execPath, how.args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (c: Buffer) => (serverLog += c.toString()));
    server.stderr!.on('data', (c: Buffer) => (serverLog += c.toString()));
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start (${how.how}):\n${serverLog}`);
      try {
        if ((await fetch(`${base}/health`)).ok) break;
      } catch {
        /* starting */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const ready = Date.now();

    // The operator's CLI makes the company (through the server's control socket on the embedded engine).
    const cli = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'recaudo.mjs'), 'companies', 'create', '--name', 'SDK E2E SAS', '--json'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(cli.status, 0, cli.stderr);
    apiKey = (JSON.parse(cli.stdout.trim().split('\n').pop()!) as { keys: { test: string } }).keys.test;
    assert.match(apiKey, /^sk_test_/);

    receiver = new Receiver(sdk);
    await receiver.start();
    console.log(
      `sdk-e2e: server ${how.how}; server build check ${((built - started) / 1000).toFixed(1)} s, SDK build ${((sdkBuilt - built) / 1000).toFixed(1)} s, ` +
        `server ready in ${((ready - sdkBuilt) / 1000).toFixed(1)} s`,
    );
  });

  after(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      const exited = await Promise.race([once(server, 'exit').then(() => true), new Promise((r) => setTimeout(() => r(false), 15_000))]);
      if (!exited) {
        server.kill('SIGKILL');
        await once(server, 'exit');
      }
    }
    await receiver?.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A client whose fetch records every status the server answered (retries included). */
  function client(opts: { maxRetries?: number } = {}) {
    const counting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    };
    return new sdk.Recaudo({ apiKey, baseUrl: base, fetch: counting, maxRetries: opts.maxRetries ?? 4 });
  }

  test('customer → card → charge → refund; the deliveries verify with verifyWebhook; forged and unsigned ones are refused', async () => {
    const recaudo = client();
    const hook = await recaudo.webhooks.create({ name: 'SDK e2e', url: receiver.url, events: ['charge.paid', 'charge.refunded'] });
    assert.match(hook.data.secret!, /^wh_tok_/);
    receiver.credentials = { secret: hook.data.secret!, token: hook.data.header ?? undefined };

    const customer = await recaudo.customers.create({
      first_name: 'Ana',
      last_name: 'Gómez',
      email: 'ana@example.com',
      document_type: 'CC',
      document_number: '1020304050',
    });
    const card = await recaudo.cards.create({
      customer_id: customer.id,
      card_number: '4242424242424242', // docs/testing.md: approves
      expiration_month: '12',
      expiration_year: String(new Date().getUTCFullYear() + 3),
      cvv: '123',
      holder_name: 'Ana Gómez',
      authorization: true,
    });
    assert.equal(card.last4, '4242');
    const charge = await recaudo.charges.create({
      customer_id: customer.id,
      card_id: card.id,
      amount: 150000,
      title: 'Cuota de octubre',
      // docs/testing.md: the one kind of test charge a refund accepts (any other is 422 10806).
      test_scenario: 'refundable',
    });
    assert.equal(charge.status, 'paid');
    const refunded = await recaudo.charges.refund(charge.id);
    assert.equal(refunded.status, 'refunded');
    assert.equal((await recaudo.charges.retrieve(charge.id)).status, 'refunded');

    // A refund again is a typed error with the API's code.
    const again = await recaudo.charges.refund(charge.id).catch((e: unknown) => e);
    assert.ok(again instanceof sdk.RecaudoError, String(again));
    assert.equal(again.status, 422);
    assert.equal(again.code, 10805);
    assert.equal(again.code_name, 'charge_refunded');
    assert.ok(again.requestId);

    const paid = await receiver.waitFor((r) => r.headers['x-webhook-event'] === 'charge.paid');
    const refundedDelivery = await receiver.waitFor((r) => r.headers['x-webhook-event'] === 'charge.refunded');
    for (const delivery of [paid, refundedDelivery]) {
      assert.equal(delivery.status, 200, `a genuine delivery was refused: ${delivery.reason}`);
      assert.equal(delivery.event!.data.id, charge.id);
      assert.equal(delivery.event!.id, delivery.headers['x-webhook-id']);
    }
    assert.equal(paid.event!.event, 'charge.paid');
    assert.equal(refundedDelivery.event!.data.status, 'refunded');
    // The delivered event is the one the API lists.
    const listed = await recaudo.events.retrieve(paid.event!.id);
    assert.equal((listed as { id: string }).id, paid.event!.id);

    const genuine = Object.fromEntries(
      ['x-webhook-id', 'x-webhook-event', 'x-webhook-token', 'signature'].map((name) => [name, String(paid.headers[name])]),
    ) as Record<string, string>;
    const rawPaid = paid.raw.toString('utf8');
    // A forged charge.paid: the genuine headers on a body that names another amount.
    assert.equal(await receiver.post(rawPaid.replace(/"amount":\d+/, '"amount":1'), genuine), 400);
    assert.equal(receiver.received.at(-1)!.reason, 'bad_signature');
    // A forged charge.paid that knows the token (token only in the headers, no signature).
    const { signature: _signature, ...unsigned } = genuine;
    assert.equal(await receiver.post(rawPaid, unsigned), 400);
    assert.equal(receiver.received.at(-1)!.reason, 'missing_header');
    // An unsigned body made up from scratch.
    const madeUp = JSON.stringify({
      id: 'evt_forged',
      event: 'charge.paid',
      created_at: new Date().toISOString(),
      is_test: true,
      data: { id: charge.id },
    });
    assert.equal(await receiver.post(madeUp, { 'x-webhook-id': 'evt_forged', 'x-webhook-event': 'charge.paid' }), 400);
    // The genuine delivery replayed under another id (to slip past deduplication).
    assert.equal(await receiver.post(rawPaid, { ...genuine, 'x-webhook-id': 'evt_other' }), 400);
    assert.equal(receiver.received.at(-1)!.reason, 'id_mismatch');
    // The genuine delivery replayed as it was verifies: deduplicate on its id.
    assert.equal(await receiver.post(rawPaid, genuine), 200);
    // A receiver left without credentials refuses everything (the old receiver/ accepted it).
    const saved = receiver.credentials;
    receiver.credentials = {};
    assert.equal(await receiver.post(rawPaid, genuine), 400);
    assert.equal(receiver.received.at(-1)!.reason, 'no_credentials');
    receiver.credentials = saved;
  });

  test('an explicit idempotency key is replayed by the server; the SDK rides out the real rate limit (429 + Retry-After)', async () => {
    const recaudo = client({ maxRetries: 6 });
    const key = `sdk-e2e-${Date.now()}`;
    const first = await recaudo.api.POST('/v1/customers', {
      body: { first_name: 'Beto', email: 'beto@example.com' },
      headers: { 'x-idempotency': key },
    });
    const second = await recaudo.api.POST('/v1/customers', {
      body: { first_name: 'Beto', email: 'beto@example.com' },
      headers: { 'x-idempotency': key },
    });
    assert.equal(first.response.status, 200);
    assert.equal(second.data!.id, first.data!.id, 'the same key answers the same customer');
    assert.equal(second.response.headers.get('idempotent-replayed'), 'true');

    // Three times the per-second limit at once: every call still succeeds, waiting as told.
    statuses.length = 0;
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: RATE_LIMIT_TEST * 3 }, () => recaudo.customers.list({ per_page: '1' })));
    const ms = Date.now() - started;
    assert.equal(results.length, RATE_LIMIT_TEST * 3);
    const limited = statuses.filter((s) => s === 429).length;
    assert.ok(limited >= RATE_LIMIT_TEST, `expected 429s to be retried, saw ${JSON.stringify(statuses)}`);
    assert.ok(ms >= 1_000, 'Retry-After (1 s) was waited for');
    console.log(`sdk-e2e: ${RATE_LIMIT_TEST * 3} concurrent GETs at ${RATE_LIMIT_TEST}/s: ${limited} answers 429, all served in ${ms} ms`);
  });

  test('an unknown key is a typed 404 record_not_found; a dead port is a RecaudoConnectionError', async () => {
    const stranger = new sdk.Recaudo({ apiKey: 'sk_test_doesnotexist0000000000000000000000', baseUrl: base });
    const error = await stranger.customers.list().catch((e: unknown) => e);
    assert.ok(error instanceof sdk.RecaudoError);
    assert.equal(error.status, 404);
    assert.equal(error.code_name, 'record_not_found');
    const nowhere = new sdk.Recaudo({
      apiKey,
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      maxRetries: 1,
      clock: { now: Date.now, sleep: async () => {} },
    });
    const down = await nowhere.customers.list().catch((e: unknown) => e);
    assert.ok(down instanceof sdk.RecaudoConnectionError, String(down));
    assert.equal(down.attempts, 2);
  });
});
