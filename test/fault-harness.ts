// Shared helpers of the fault tests (test/faults*.test.ts, issue 11): a throw-away PostgreSQL
// database per test file, API and worker processes started as real child processes (the operator's
// start command), a webhook receiver that can go down and come back on the same port, a load
// generator that remembers every idempotency key and its answers, and bounded waits.
//
// Deliberately light: no import of the application, so the PGlite run skips these files at once.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { verifyWebhook } from '../packages/sdk/src/webhooks.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ENGINE: 'pglite' | 'postgres' = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';
/** The `skip` option of every fault test: false on PostgreSQL, the reason otherwise. */
export const SKIP_UNLESS_POSTGRES: false | string =
  ENGINE === 'postgres' ? false : 'fault tests need PostgreSQL (several processes share one database); TEST_DATABASE_URL is empty (PGlite run)';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value or the deadline passes; returns the value or undefined. */
export async function until<T>(check: () => Promise<T> | T, timeoutMs: number, intervalMs = 250): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() >= deadline) return undefined;
    await sleep(intervalMs);
  }
}

/** One line of figures per scenario, quoted by the closing note of issue 11. */
export function report(scenario: string, figures: Record<string, unknown>): void {
  console.log(`FAULT-SUMMARY ${JSON.stringify({ scenario, ...figures })}`);
}

// ---------------------------------------------------------------------------------------------
// The database

let databases = 0;

export interface FaultDatabase {
  name: string;
  url: string;
  /** A query on an administrative connection (to the database the test run was given). */
  admin<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<R[]>;
  /** A query inside the fault database, on a connection of its own (never terminated by the tests). */
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<R[]>;
  /** pg_terminate_backend of every other session of the fault database; returns how many. */
  terminateSessions(): Promise<number>;
  /** Runs `lockSql` in a transaction of its own connection and keeps it open until release(). */
  holdLock(lockSql: string, values?: unknown[]): Promise<() => Promise<void>>;
  /** Sessions of the fault database waiting on a lock. */
  lockWaiters(): Promise<number>;
  drop(): Promise<void>;
}

/** CREATE DATABASE recaudo_fault_<pid>_<n> beside TEST_DATABASE_URL; dropped WITH (FORCE) by drop(). */
export async function createFaultDatabase(): Promise<FaultDatabase> {
  const base = process.env.TEST_DATABASE_URL!;
  const name = `recaudo_fault_${process.pid}_${++databases}`;
  const admin = new pg.Client({ connectionString: base, application_name: 'recaudo-fault-admin' });
  await admin.connect();
  admin.on('error', () => {});
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  let inside: pg.Client | undefined;
  const insideClient = async () => {
    if (inside) return inside;
    const client = new pg.Client({ connectionString: url.toString(), application_name: 'recaudo-fault-observer' });
    client.on('error', () => {
      if (inside === client) inside = undefined;
    });
    await client.connect();
    inside = client;
    return client;
  };
  return {
    name,
    url: url.toString(),
    async admin(text, values) {
      return (await admin.query(text, values as any[])).rows;
    },
    async query(text, values) {
      return (await (await insideClient()).query(text, values as any[])).rows;
    },
    async terminateSessions() {
      // Only this database's sessions, never the observer's own connection, never another database.
      const me = await insideClient();
      const rows = (
        await me.query<{ n: string }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [name],
        )
      ).rows;
      return Number(rows[0]?.n ?? 0);
    },
    async holdLock(lockSql, values) {
      const client = new pg.Client({ connectionString: url.toString(), application_name: 'recaudo-fault-locker' });
      client.on('error', () => {});
      await client.connect();
      await client.query('BEGIN');
      await client.query(lockSql, values as any[]);
      return async () => {
        await client.query('ROLLBACK').catch(() => {});
        await client.end().catch(() => {});
      };
    },
    async lockWaiters() {
      const rows = await (
        await insideClient()
      ).query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`, [name]);
      return Number(rows.rows[0]?.n ?? 0);
    },
    async drop() {
      await inside?.end().catch(() => {});
      inside = undefined;
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error) => console.error(`could not drop ${name}: ${error.message}`));
      await admin.end().catch(() => {});
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Child processes

/**
 * Preloaded into every child: when the test process goes away without cleaning up, the IPC channel
 * closes and the child kills itself (no orphans holding ports or database sessions). The channel
 * is unref'd, so it never keeps a child's event loop alive (a worker that would exit still exits).
 */
const ORPHAN_GUARD = `data:text/javascript,${encodeURIComponent('if (process.send) { process.on("disconnect", () => process.kill(process.pid, "SIGKILL")); process.channel?.unref(); }')}`;

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export interface Exit {
  process: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Exited because the test killed it. */
  expected: boolean;
  at: number;
  tail: string[];
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** An API process (`node --import tsx src/main.ts`) or a worker (`... src/main.ts worker`). */
export class ServiceProcess {
  proc: ChildProcess | undefined;
  readonly exits: Exit[] = [];
  readonly tail: string[] = [];
  starts = 0;
  /** Started and answering (API: /health 200); load is only sent to ready processes. */
  ready = false;
  private killing = false;

  constructor(
    readonly name: string,
    readonly role: 'api' | 'worker',
    readonly env: NodeJS.ProcessEnv,
    readonly port: number | undefined,
    private onExit: (exit: Exit) => void,
  ) {}

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  start(): void {
    const args = ['--import', 'tsx', '--import', ORPHAN_GUARD, 'src/main.ts', ...(this.role === 'worker' ? ['worker'] : [])];
    const env = { ...this.env, ...(this.port ? { PORT: String(this.port) } : {}) };
    const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    this.proc = proc;
    this.starts += 1;
    this.killing = false;
    this.ready = false;
    live.add(proc);
    for (const stream of [proc.stdout!, proc.stderr!]) {
      let buffer = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffer += chunk;
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) {
          if (!line.trim()) continue;
          this.tail.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
          if (this.tail.length > 40) this.tail.shift();
        }
      });
    }
    proc.on('exit', (code, signal) => {
      live.delete(proc);
      this.ready = false;
      // The last meaningful lines (a crash's message, not its stack or its undefined fields).
      const tail = this.tail.filter((l) => !/^\s+at /.test(l) && !/^\s*\w+: undefined,?$/.test(l)).slice(-8);
      const exit: Exit = { process: this.name, code, signal, expected: this.killing, at: Date.now(), tail };
      this.exits.push(exit);
      this.onExit(exit);
    });
  }

  /** Kills the process (expected exit) and waits until it is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    this.killing = true;
    const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    await gone;
  }

  /** API: GET /health answers 200. Worker: it is still running after a short while. */
  async waitReady(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    if (this.role === 'worker') {
      // A worker has no port: it is ready once it logged its start (LOG_LEVEL=info) or survived 2 s.
      await sleep(2_000);
      if (!this.alive) throw new Error(`${this.name} exited at start:\n${this.tail.join('\n')}`);
      this.ready = true;
      return;
    }
    for (;;) {
      if (!this.alive) throw new Error(`${this.name} exited at start:\n${this.tail.join('\n')}`);
      try {
        const res = await fetch(`${this.base}/health`, { signal: AbortSignal.timeout(2_000) });
        if (res.status === 200) {
          this.ready = true;
          return;
        }
      } catch {
        /* starting */
      }
      if (Date.now() > deadline) throw new Error(`${this.name} not healthy within ${timeoutMs} ms:\n${this.tail.join('\n')}`);
      await sleep(150);
    }
  }
}

export interface ClusterOptions {
  apis?: number;
  env?: Record<string, string>;
}

/** Two API processes and one worker on one fault database (scenario A of issue 11). */
export class Cluster {
  readonly apis: ServiceProcess[] = [];
  worker!: ServiceProcess;
  readonly exits: Exit[] = [];
  env!: NodeJS.ProcessEnv;

  constructor(readonly db: FaultDatabase) {}

  get unexpectedExits(): Exit[] {
    return this.exits.filter((e) => !e.expected);
  }

  get all(): ServiceProcess[] {
    return [...this.apis, this.worker].filter(Boolean);
  }

  async start(opts: ClusterOptions = {}): Promise<void> {
    this.env = {
      ...process.env,
      DATABASE_URL: this.db.url,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_TEST: '100000',
      RATE_LIMIT_LIVE: '100000',
      // Small pools: the PostgreSQL server is shared with other test runs.
      DB_POOL_SIZE: '6',
      CHARGE_RECONCILE_DELAY_MS: '2000',
      SANDBOX_ACCOUNT_DELAY_MS: '300',
      SANDBOX_CHARGE_DELAY_MS: '300',
      SANDBOX_STAMP_DELAY_MS: '100',
      MESSAGING_SANDBOX_DELAY_MS: '100',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_CONCURRENCY: '16',
      // Offsets from the event; long enough to outlast the receiver outage of scenario E.
      WEBHOOK_RETRY_SCHEDULE: '1s,2s,3s,5s,8s,12s,17s,23s,30s,40s,50s,60s,75s,90s,120s',
      // One secret for every process (a replay served by another process must match).
      CARD_DATA_SECRET: 'fault-tests-card-data-secret-0123456789abcdef',
      PAGES_SECRET: 'fault-tests-pages-secret-0123456789abcdef',
      // Test-mode webhooks to the local receiver (issue 11 puts private targets behind this switch).
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      // How long a retry waits for a request that committed its claim and may still be running.
      IDEMPOTENCY_HOLD_MS: '5000',
      ...opts.env,
    };
    const onExit = (exit: Exit) => this.exits.push(exit);
    for (let i = 0; i < (opts.apis ?? 2); i++) {
      const port = await freePort();
      this.apis.push(
        new ServiceProcess(`api${i + 1}`, 'api', { ...this.env, RUN_WORKERS: 'false', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }, port, onExit),
      );
    }
    this.worker = new ServiceProcess('worker', 'worker', this.env, undefined, onExit);
    // The first process migrates the new database alone; then the others start together.
    this.apis[0].start();
    await this.apis[0].waitReady();
    for (const p of [...this.apis.slice(1), this.worker]) p.start();
    await Promise.all([...this.apis.slice(1), this.worker].map((p) => p.waitReady()));
  }

  /** Restarts every process that is not running (after an expected or unexpected exit); returns their names. */
  async ensureRunning(): Promise<string[]> {
    const dead = this.all.filter((p) => !p.alive);
    for (const p of dead) p.start();
    await Promise.all(dead.map((p) => p.waitReady()));
    return dead.map((p) => p.name);
  }

  aliveApis(): ServiceProcess[] {
    return this.apis.filter((p) => p.alive && p.ready);
  }

  /** Runs the CLI against the fault database (`recaudo companies create`). */
  createCompany(name: string): { companyId: string; key: string } {
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'companies', 'create', '--name', name, '--json'], {
      cwd: ROOT,
      env: { ...this.env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 90_000,
    });
    if (res.status !== 0) throw new Error(`CLI failed (${res.status}): ${res.stderr}`);
    const line = res.stdout.trim().split('\n').filter(Boolean).pop() ?? '';
    const out = JSON.parse(line) as { company: { id: string }; keys: { test: string } };
    return { companyId: out.company.id, key: out.keys.test };
  }

  async stop(): Promise<void> {
    await Promise.all(this.all.map((p) => p.kill('SIGKILL').catch(() => {})));
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface Answer {
  status: number; // 0: no answer (connection refused or reset, timeout)
  body: any;
  error?: string;
  process: string;
  ms: number;
}

/** One request to one process; never throws (a transport failure is status 0). */
export async function call(
  target: ServiceProcess,
  key: string,
  method: string,
  url: string,
  opts: { body?: unknown; idem?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = Date.now();
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method === 'POST') headers['x-idempotency'] = opts.idem ?? randomUUID();
  try {
    const res = await fetch(`${target.base}${url}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, process: target.name, ms: Date.now() - started };
  } catch (error) {
    const e = error as Error & { cause?: { code?: string; message?: string } };
    return {
      status: 0,
      body: undefined,
      error: e.cause?.code ?? e.cause?.message ?? e.name ?? e.message,
      process: target.name,
      ms: Date.now() - started,
    };
  }
}

export const ok = (a: Answer) => a.status >= 200 && a.status < 300;

/** The body of POST /v1/cards for the sandbox's approving card, authorized for the customer. */
export function approvingCardBody(customerId: string): Record<string, unknown> {
  return {
    card_number: '4242424242424242',
    expiration_month: 12,
    expiration_year: new Date().getUTCFullYear() + 3,
    cvv: '123',
    holder_name: 'Ana Fallas',
    customer_id: customerId,
    authorization: true,
    // Live through a connector: the payer accepted the provider's contracts (ignored by the sandbox).
    accept_terms: true,
  };
}
export const idOf = (a: Answer): string | undefined => a.body?.id ?? a.body?.data?.id;

// ---------------------------------------------------------------------------------------------
// Load with remembered keys

export interface KeyRecord {
  key: string;
  kind: string;
  url: string;
  body: unknown;
  answers: Answer[];
  /** The first 2xx answer (during the load or a retry). */
  acked?: Answer;
  /** The 2xx came from a retry of the key. */
  ackedOnRetry?: boolean;
}

export interface LoadSpec {
  kind: string;
  url: string;
  body: (key: string) => unknown;
  /** Loops per API process. */
  concurrency: number;
}

/**
 * Steady load: `concurrency` loops per API process per spec, each sending one new key after
 * another to its process while the process is up (a down process is simply not sent to).
 */
export class Load {
  readonly keys = new Map<string, KeyRecord>();
  readonly inflight = new Map<string, number>();
  private running = false;
  private loops: Promise<void>[] = [];
  private n = 0;

  constructor(
    private cluster: Cluster,
    private companyKey: string,
    private prefix: string,
    private specs: LoadSpec[],
  ) {}

  start(): void {
    this.running = true;
    for (const spec of this.specs)
      for (const target of this.cluster.apis) for (let i = 0; i < spec.concurrency; i++) this.loops.push(this.loop(spec, target));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(spec: LoadSpec, target: ServiceProcess): Promise<void> {
    while (this.running) {
      if (!target.alive || !target.ready) {
        await sleep(50);
        continue;
      }
      const key = `${this.prefix}-${spec.kind}-${++this.n}-${randomUUID().slice(0, 8)}`;
      const rec: KeyRecord = { key, kind: spec.kind, url: spec.url, body: spec.body(key), answers: [] };
      this.keys.set(key, rec);
      this.inflight.set(target.name, (this.inflight.get(target.name) ?? 0) + 1);
      const answer = await call(target, this.companyKey, 'POST', spec.url, { body: rec.body, idem: key, timeoutMs: 30_000 });
      this.inflight.set(target.name, (this.inflight.get(target.name) ?? 0) - 1);
      rec.answers.push(answer);
      if (ok(answer)) rec.acked = answer;
      else await sleep(answer.status === 0 ? 100 : 20);
    }
  }

  records(kind?: string): KeyRecord[] {
    return [...this.keys.values()].filter((r) => !kind || r.kind === kind);
  }
}

/**
 * Retries every key without a 2xx (same key, same body) on the running API processes, in turn,
 * until each gets a 2xx or `deadline`. A 503/409/429/5xx or no answer waits a little and retries;
 * any other 4xx is final (recorded, not retried).
 */
export async function retryUnacknowledged(
  cluster: Cluster,
  companyKey: string,
  records: KeyRecord[],
  opts: { deadline: number; concurrency?: number; maxAttempts?: number },
): Promise<{ retried: number; attempts: number; unresolved: KeyRecord[]; statuses: Record<string, number>; slowestMs: number }> {
  const todo = records.filter((r) => !r.acked);
  const statuses: Record<string, number> = {};
  let attempts = 0;
  let slowestMs = 0;
  let next = 0;
  const unresolved: KeyRecord[] = [];
  const worker = async () => {
    for (;;) {
      const rec = todo[next++];
      if (!rec) return;
      for (let i = 0; i < (opts.maxAttempts ?? 40) && Date.now() < opts.deadline; i++) {
        const targets = cluster.aliveApis();
        if (targets.length === 0) {
          await sleep(250);
          continue;
        }
        const target = targets[(i + rec.key.length) % targets.length];
        attempts += 1;
        // Long enough for a server that waits for an earlier run of the key (up to about a minute).
        const answer = await call(target, companyKey, 'POST', rec.url, {
          body: rec.body,
          idem: rec.key,
          timeoutMs: Math.max(1_000, Math.min(75_000, opts.deadline - Date.now())),
        });
        rec.answers.push(answer);
        slowestMs = Math.max(slowestMs, answer.ms);
        const label = answer.status === 0 ? `none:${answer.error}` : String(answer.status);
        statuses[label] = (statuses[label] ?? 0) + 1;
        if (ok(answer)) {
          rec.acked = answer;
          rec.ackedOnRetry = true;
          break;
        }
        if (answer.status >= 400 && answer.status < 500 && ![408, 409, 425, 429].includes(answer.status)) break;
        await sleep(answer.status === 0 ? 250 : Math.min(2_000, 250 * (i + 1)));
      }
      if (!rec.acked) unresolved.push(rec);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker));
  return { retried: todo.length, attempts, unresolved, statuses, slowestMs };
}

// ---------------------------------------------------------------------------------------------
// Webhook receiver

export interface Delivery {
  id: string;
  type: string;
  dataId: string | undefined;
  at: number;
  validSignature: boolean;
}

/**
 * A local webhook receiver that records every delivery (by x-webhook-id), checks its signature,
 * counts requests in flight, and can go down (its port closed) and come back on the same port.
 */
export class FaultReceiver {
  readonly deliveries: Delivery[] = [];
  readonly ids = new Set<string>();
  inflight = 0;
  delayMs = 0;
  secret: string | undefined;
  token: string | undefined;
  port = 0;
  private server: http.Server | undefined;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  get up(): boolean {
    return !!this.server;
  }

  async start(): Promise<this> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      this.inflight += 1;
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        let validSignature = false;
        let event: { id?: string; event?: string; data?: { id?: string } } = {};
        try {
          event = verifyWebhook<{ id?: string }>(raw, req.headers, { secret: this.secret, token: this.token });
          validSignature = true;
        } catch {
          try {
            event = JSON.parse(raw.toString('utf8'));
          } catch {
            /* not JSON */
          }
        }
        const id = String(req.headers['x-webhook-id'] ?? event.id ?? '');
        const answer = () => {
          this.inflight -= 1;
          // Recorded when answered 2xx: what the sender can count as delivered.
          this.deliveries.push({
            id,
            type: String(req.headers['x-webhook-event'] ?? event.event),
            dataId: event.data?.id,
            at: Date.now(),
            validSignature,
          });
          this.ids.add(id);
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('ok');
        };
        if (this.delayMs) setTimeout(answer, this.delayMs);
        else answer();
      });
      req.on('aborted', () => {
        this.inflight = Math.max(0, this.inflight - 1);
      });
    });
    server.keepAliveTimeout = 1_000;
    server.listen(this.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      server.once('listening', () => resolve());
      server.once('error', reject);
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Closes the port and every open connection: deliveries fail with ECONNREFUSED meanwhile. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.inflight = 0;
  }

  /** Listens again on the same port. */
  async upAgain(): Promise<void> {
    if (this.server) return;
    await this.start();
  }

  async close(): Promise<void> {
    await this.down();
  }
}
