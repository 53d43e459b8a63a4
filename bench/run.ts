// `npm run bench`: HTTP throughput and latency of the service against a bare Fastify baseline.
//
// Creates a throw-away PostgreSQL database, starts the service and a bare Fastify server as child
// processes on loopback ports, and loads each scenario from a separate load-generator process
// (autocannon). Prints a table on stdout, progress on stderr, and writes bench/results/latest.json.
//
// Environment: BENCH_DATABASE_URL or DATABASE_URL (server where `recaudo_bench_<pid>` is created; default
// postgres://postgres@127.0.0.1:5432/test), BENCH_DURATION (s per scenario, default 10),
// BENCH_CONNECTIONS (default 32), BENCH_WARMUP (unmeasured s before each scenario, default 2),
// BENCH_SCENARIOS (comma-separated keys to run a subset, e.g. baseline_get,customers_get; `lists`
// selects every list scenario), BENCH_SERVICE=tsx (run src/main.ts even when dist/main.js is built).
//
// Limits (issue 18): besides the bare Fastify GET/POST, the baseline process measures the physical
// limit of a service on the same PostgreSQL — one INSERT … RETURNING in its own transaction
// ("one-commit POST") and one SELECT by primary key ("one-read GET") — and every scenario prints its
// ratio to the matching limit and its goal.
//
// Lists: two companies seeded by SQL (generate_series, not the API): 10,000 rows and BENCH_ROWS
// (default 1,000,000) customers and charges each; first pages and pages reached by following
// next_page_url BENCH_LIST_HOPS times (default 50) from the first page and from the middle.
//
// embedded (last): the service on the embedded engine with a new data directory: cold start to
// /health 200 and resident memory after BENCH_EMBEDDED_REQUESTS (default 10,000) requests.
//
// webhook_delivery (last): a receiver process (bench/receiver.ts, loopback, answers 200 at once) is
// registered as a test webhook for one event type; a producer process (bench/producer.ts) commits
// events into the bench database with the service's outbox at BENCH_DELIVERY_RATE events/s
// (comma-separated list for several rounds, default 2000) for BENCH_WARMUP + BENCH_DURATION s, in
// one transaction every BENCH_DELIVERY_BATCH_MS (default 10); the service's own dispatcher delivers
// them. Reported: committed, received, missing, duplicates, deliveries/s (received / first commit to
// last receipt) and commit->receipt latency (receipt Date.now() - data.sent_at taken before the insert).
// BENCH_DELIVERY_DRAIN (s to wait for the last deliveries, default 30). BENCH_DELIVERY_ANALYZE (default 1)
// runs ANALYZE on the webhook tables at the end of each warm-up, as autovacuum does on a live database
// within about a minute; 0 measures the never-analyzed tables of a brand-new database, where the
// dispatcher's claim is planned as a bitmap scan + sort over every due and not yet vacuumed row.
// When the server runs with autovacuum off, every database-backed scenario starts with an ANALYZE
// of the bench database (said in its notes): tables that grew from empty would otherwise have no
// statistics at all, which no live database with autovacuum keeps for more than about a minute.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { cpuDelta, cpuOf, cpuOfCommand, machineBusyMs, percentOfCore } from './cpu.ts';
import type { LoadSpec, LoadSummary } from './load.ts';
import type { ProducerSpec, ProducerSummary } from './producer.ts';
import type { ReceiverStats } from './receiver.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const guard = pathToFileURL(path.join(root, 'bench', 'orphan-guard.mjs')).href;
/** One database per run: two runs at once (another session benchmarking too) never drop each other's. */
const BENCH_DB = `recaudo_bench_${process.pid}`;
const HUGE_LIMIT = '10000000';
/** The service replays a stored response for 60 s; the replay scenario switches keys well before. */
const REPLAY_KEY_EVERY_MS = 50_000;

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

const settings = {
  duration: intEnv('BENCH_DURATION', 10, 1, 600),
  connections: intEnv('BENCH_CONNECTIONS', 32, 1, 1000),
  warmup: intEnv('BENCH_WARMUP', 2, 0, 60),
  pipelining: 1,
};
function intListEnv(name: string, fallback: number[], min: number, max: number): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((part) => {
    const value = Number(part.trim());
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new Error(`${name} must be a comma-separated list of integers between ${min} and ${max}, got "${raw}"`);
    }
    return value;
  });
}

const delivery = {
  rates: intListEnv('BENCH_DELIVERY_RATE', [2000], 1, 100_000),
  batchMs: intEnv('BENCH_DELIVERY_BATCH_MS', 10, 1, 1000),
  drain: intEnv('BENCH_DELIVERY_DRAIN', 30, 1, 600),
  /** Run ANALYZE on the webhook tables at the end of each warm-up, as autovacuum would within a minute. */
  analyze: intEnv('BENCH_DELIVERY_ANALYZE', 1, 0, 1) === 1,
  /** Producer transactions in flight at once, and most events in one. */
  maxInFlight: 4,
  maxBatch: 200,
  eventType: 'balance.updated',
};
/** Group keys: `lists` selects every list scenario, `embedded` the embedded-engine check. */
const LIST_KEYS = (['customers', 'charges'] as const).flatMap((resource) =>
  (['small', 'big'] as const).flatMap((size) => (['first', 'next'] as const).map((page) => `${resource}_list_${size}_${page}`)),
);
const SCENARIO_KEYS = [
  'baseline_get',
  'baseline_post',
  'limit_commit_post',
  'limit_read_get',
  'customers_create',
  'customers_create_replay',
  'customers_get',
  'charges_card',
  ...LIST_KEYS,
  'lists',
  'webhook_delivery',
  'embedded',
];
const selected = process.env.BENCH_SCENARIOS
  ? process.env.BENCH_SCENARIOS.split(',')
      .map((k) => k.trim())
      .filter(Boolean)
  : null;
for (const key of selected ?? []) {
  if (!SCENARIO_KEYS.includes(key)) throw new Error(`BENCH_SCENARIOS: unknown scenario "${key}" (known: ${SCENARIO_KEYS.join(', ')})`);
}
const wants = (key: string): boolean => !selected || selected.includes(key) || (LIST_KEYS.includes(key) && selected.includes('lists'));
/** Rows seeded (SQL, not the API) into the company of the big list scenarios; the small one gets 10,000. */
const listRows = { small: 10_000, big: intEnv('BENCH_ROWS', 1_000_000, 10_000, 100_000_000) };
/** Pages collected for the `next` list scenarios: hops followed from the first page and from the middle. */
const LIST_HOPS = intEnv('BENCH_LIST_HOPS', 50, 1, 10_000);
/** Requests sent to the embedded engine before its resident memory is read. */
const EMBEDDED_REQUESTS = intEnv('BENCH_EMBEDDED_REQUESTS', 10_000, 100, 1_000_000);
const adminUrl = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

// ---------------------------------------------------------------------------------------------
// Child processes

interface Child {
  name: string;
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  tail: string[];
}

const children = new Set<Child>();

/**
 * Starts `node --import tsx <args>` from the repository root, with the orphan guard preloaded; a
 * `.js` entry (the built service) runs without the TypeScript loader.
 */
function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, forwardLines = 20): Child {
  const loader = args[0]?.endsWith('.js') ? [] : ['--import', 'tsx'];
  const proc = spawn(process.execPath, [...loader, '--import', guard, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const tail: string[] = [];
  let lines = 0;
  const onLine = (line: string) => {
    if (!line.trim()) return;
    lines += 1;
    tail.push(line);
    if (tail.length > 40) tail.shift();
    if (lines <= forwardLines) log(`[${name}] ${line}`);
    else if (lines === forwardLines + 1) log(`[${name}] (further output not shown)`);
  };
  for (const stream of [proc.stdout!, proc.stderr!]) {
    let buffer = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffer += chunk;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      parts.forEach(onLine);
    });
    stream.on('end', () => buffer && onLine(buffer));
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
    proc.on('error', (error) => {
      tail.push(String(error));
      children.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  const child: Child = { name, proc, exited, tail };
  children.add(child);
  return child;
}

function running(child: Child): boolean {
  return child.proc.exitCode === null && child.proc.signalCode === null;
}

async function stopChild(child: Child, graceMs = 10_000): Promise<void> {
  if (!running(child)) return;
  child.proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    child.exited.then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
  ]);
  clearTimeout(timer);
  if (timedOut && running(child)) {
    log(`${child.name} did not stop within ${graceMs} ms; killing it`);
    child.proc.kill('SIGKILL');
    await child.exited;
  }
}

function describeExit(child: Child, exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
  const tail = child.tail.slice(-15).join('\n    ');
  return `${child.name} exited (${how})${tail ? `; last output:\n    ${tail}` : ''}`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(child: Child, url: string, timeoutMs: number, pollMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = 'no answer yet';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  void child.exited.then((e) => (exit = e));
  while (Date.now() < deadline) {
    if (exit) throw new Error(describeExit(child, exit));
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      lastProblem = `status ${res.status}`;
    } catch (error) {
      lastProblem = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    }
    // Poll interval of a readiness check (not a fixed wait): retry until healthy, exited or deadline.
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`${child.name} not healthy at ${url} within ${timeoutMs} ms (${lastProblem})`);
}

function waitMessage<T>(child: Child, type: string, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.name}: no "${type}" message within ${timeoutMs} ms`)), timeoutMs);
    child.proc.on('message', (message: { type?: string }) => {
      if (message?.type === type) {
        clearTimeout(timer);
        resolve(message as T);
      }
    });
    void child.exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(describeExit(child, exit)));
    });
  });
}

/** Runs one scenario in its own load-generator process and waits for that process to end. */
async function runLoad(spec: LoadSpec, hooks: { measuring(): void; done(): void }): Promise<LoadSummary> {
  const child = startChild(`load ${spec.name}`, [path.join('bench', 'load.ts')], { ...process.env, BENCH_LOAD_SPEC: JSON.stringify(spec) });
  let summary: LoadSummary | undefined;
  let failure: string | undefined;
  child.proc.on('message', (message: { type: string; summary?: LoadSummary; message?: string }) => {
    if (message.type === 'measuring') hooks.measuring();
    if (message.type === 'result') {
      hooks.done();
      summary = message.summary;
    }
    if (message.type === 'error') failure = message.message;
  });
  // A fixed number of requests (the embedded round) has no duration: allow it ten minutes.
  const limitMs = spec.amount ? 600_000 : (spec.warmup + spec.duration + 30) * 1000;
  const watchdog = setTimeout(() => {
    failure = `load generator still running after ${limitMs} ms`;
    void stopChild(child, 2_000);
  }, limitMs);
  const exit = await child.exited;
  clearTimeout(watchdog);
  if (summary) return summary;
  throw new Error(failure ? `load generator for "${spec.name}" failed: ${failure}` : describeExit(child, exit));
}

// ---------------------------------------------------------------------------------------------
// Cleanup (normal end, errors, ctrl-C)

let databaseCreated = false;
let cleaning: Promise<void> | null = null;
let aborted = false;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    const list = [...children];
    if (list.length) log(`stopping ${list.map((c) => c.name).join(', ')}`);
    await Promise.all(list.map((c) => stopChild(c)));
    if (databaseCreated) {
      const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
      try {
        await client.connect();
        await client.query(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`);
        databaseCreated = false;
        log(`dropped database ${BENCH_DB}`);
      } catch (error) {
        log(`could not drop database ${BENCH_DB}: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        await client.end().catch(() => {});
      }
    }
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (aborted) {
      // Second signal: do not wait any longer.
      for (const c of children) c.proc.kill('SIGKILL');
      process.exit(130);
    }
    aborted = true;
    log(`${signal} received: cleaning up (send it again to force)`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers for priming (run from this process, which serves nothing)

async function call(origin: string, method: string, urlPath: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(`${origin}${urlPath}`, { method, headers, body, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: any = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, json, text };
}

function expectOk(what: string, r: { status: number; text: string }): void {
  if (r.status < 200 || r.status >= 300) throw new Error(`${what}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
}

// ---------------------------------------------------------------------------------------------

/**
 * What a scenario is judged against (issue 18): a durable write against one commit on the same
 * PostgreSQL, a read against one indexed read, a replay against the bare Fastify POST.
 */
type Limit = 'bare_get' | 'bare_post' | 'one_commit_post' | 'one_read_get';
const LIMIT_OF: Record<Limit, string> = {
  bare_get: 'baseline_get',
  bare_post: 'baseline_post',
  one_commit_post: 'limit_commit_post',
  one_read_get: 'limit_read_get',
};

interface Scenario {
  key: string;
  name: string;
  target: 'baseline' | 'service';
  method: 'GET' | 'POST';
  path: string;
  /** Round-robin over these paths instead of `path` (cursor pages). */
  paths?: string[];
  auth: boolean | Record<string, string>;
  body?: string;
  idempotency?: 'unique' | 'replay';
  limit: Limit;
  /** The goal as a ratio to the limit (null: a reference row). */
  goal: number | null;
}

interface ScenarioResult extends LoadSummary {
  key: string;
  name: string;
  method: 'GET' | 'POST';
  path: string;
  ratioVsBaselineGet: number | null;
  ratioVsBaselineSameMethod: number | null;
  limit: Limit;
  ratioVsLimit: number | null;
  goal: number | null;
  /** Percent of one core during the measurement (Linux only; null elsewhere). */
  cpuPct: { server: number | null; postgres: number | null; loadgen: number; machine: number | null; other: number | null };
  flagged: boolean;
  notes: string[];
}

const CUSTOMER_BODY = JSON.stringify({ first_name: 'Ana', last_name: 'Bench', email: 'ana@example.com', phone: '+573001234567' });

function machineInfo() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    availableParallelism: os.availableParallelism?.() ?? cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpuMhz: cpus[0]?.speed ?? null,
    totalMemMb: Math.round(os.totalmem() / 2 ** 20),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAvgAtStart: os.loadavg().map((v) => Math.round(v * 100) / 100),
  };
}

function git(args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd: root, timeout: 5_000 }, (err, stdout) => resolve(err ? null : stdout.trim()));
  });
}

/** The commit measured, and whether src/ had uncommitted changes (the service runs from the working tree). */
async function gitInfo(): Promise<{ commit: string | null; srcModified: boolean | null }> {
  const commit = await git(['rev-parse', '--short', 'HEAD']);
  const status = await git(['status', '--porcelain', '--', 'src', 'migrations']);
  return { commit, srcModified: status === null ? null : status.length > 0 };
}

function createCompany(env: NodeJS.ProcessEnv, name = 'Bench SAS'): Promise<{ companyId: string; testKey: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join('bin', 'recaudo.mjs'), 'companies', 'create', '--name', name, '--json'],
      { cwd: root, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`CLI failed: ${err.message}\n${stderr}`));
        const line = stdout.trim().split('\n').filter(Boolean).pop() ?? '';
        try {
          const out = JSON.parse(line) as { company: { id: string }; keys: { test: string } };
          if (!out.keys?.test) throw new Error('no test key');
          resolve({ companyId: out.company.id, testKey: out.keys.test });
        } catch (error) {
          reject(new Error(`CLI output not understood (${(error as Error).message}): ${stdout.slice(0, 300)}`));
        }
      },
    );
  });
}

/** Busy CPU of the whole machine not accounted for by the server, postgres or the load generator. */
function otherCpu(cpu: { server: number | null; postgres: number | null; machine: number | null }, loadgen: number): number | null {
  if (cpu.machine === null || cpu.server === null || cpu.postgres === null) return null;
  return Math.max(0, Math.round((cpu.machine - cpu.server - cpu.postgres - loadgen) * 10) / 10);
}

function fmt(n: number | null, digits = 0): string {
  if (n === null || !Number.isFinite(n)) return '-';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** One line of the main table: an HTTP scenario, or a webhook delivery round. */
interface TableRow {
  name: string;
  rps: number;
  p50: number | null;
  p99: number | null;
  avg: number | null;
  non2xx: number;
  errors: number;
  ratioVsBaselineGet: number | null;
  ratioVsBaselineSameMethod: number | null;
  /** The limit this row is judged against, its ratio to it, and the goal (issue 18). */
  limit: Limit | null;
  ratioVsLimit: number | null;
  goal: number | null;
  cpuPct: { server: number | null; postgres: number | null; loadgen: number | null; other: number | null };
  flagged: boolean;
}

function table(rows: TableRow[]): string {
  const head = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'avg ms',
    'non-2xx',
    'errors',
    'vs base GET',
    'vs base same-method',
    'vs limit',
    'goal',
    'CPU srv/pg/load/other %',
    '',
  ];
  const body = rows.map((r) => [
    r.name,
    fmt(r.rps),
    fmt(r.p50),
    fmt(r.p99),
    fmt(r.avg, 2),
    fmt(r.non2xx),
    fmt(r.errors),
    fmt(r.ratioVsBaselineGet, 3),
    fmt(r.ratioVsBaselineSameMethod, 3),
    r.limit && r.ratioVsLimit !== null ? `${fmt(r.ratioVsLimit, 3)} ${r.limit}` : '-',
    r.goal === null ? '' : `>= ${r.goal} ${r.ratioVsLimit !== null && r.ratioVsLimit >= r.goal ? 'met' : 'NOT met'}`,
    [r.cpuPct.server, r.cpuPct.postgres, r.cpuPct.loadgen, r.cpuPct.other].map((v) => fmt(v)).join('/'),
    r.flagged ? 'FLAGGED' : '',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

function httpRow(r: ScenarioResult): TableRow {
  return { ...r, p50: r.latencyMs.p50, p99: r.latencyMs.p99, avg: r.latencyMs.avg };
}

// ---------------------------------------------------------------------------------------------
// Lists at depth: two companies seeded by SQL (10,000 rows and BENCH_ROWS rows of customers and of
// charges), each list read on its first page and on pages reached by following next_page_url.

/** The entry the service runs: the build when there is one (BENCH_SERVICE=tsx forces the sources). */
async function serviceEntry(): Promise<string> {
  const built = path.join(root, 'dist', 'main.js');
  if (process.env.BENCH_SERVICE !== 'tsx' && (await fs.stat(built).catch(() => null))) return built;
  return path.join(root, 'src', 'main.ts');
}

async function seedRows(client: pg.Client, companyId: string, rows: number): Promise<void> {
  // Three rows per second of created_at: ties that the id tie-breaker must order.
  await client.query(
    `INSERT INTO customers (company_id, environment, id, type, first_name, last_name, email, phone, created_at, updated_at)
     SELECT $1, 'test', gen_random_uuid(), 'natural', 'Ana', 'Seed ' || i, 'seed' || i || '@example.com',
            '+57300' || lpad(i::text, 7, '0'), t.at, t.at
     FROM generate_series(1, $2::int) AS i, LATERAL (SELECT now() - (i / 3) * interval '1 second' AS at) AS t`,
    [companyId, rows],
  );
  const { rows: one } = await client.query<{ id: string }>(`SELECT id FROM customers WHERE company_id = $1 AND environment = 'test' LIMIT 1`, [
    companyId,
  ]);
  await client.query(
    `INSERT INTO charges (company_id, environment, id, status, title, currency, amount, customer_id, payment_method_type,
                          card_id, intent_id, created_at, updated_at, paid_at)
     SELECT $1, 'test', 'ch_seed_' || $3 || '_' || i, 'paid', 'Cuota ' || i, 'COP', 150000, $4::uuid, 'card',
            'card_seed', 'pi_seed_' || $3 || '_' || i, t.at, t.at, t.at
     FROM generate_series(1, $2::int) AS i, LATERAL (SELECT now() - (i / 3) * interval '1 second' AS at) AS t`,
    [companyId, rows, companyId.replace(/[^a-zA-Z0-9]/g, ''), one[0].id],
  );
}

/** Follows next_page_url `hops` times from each start; returns the pages reached (paths). */
async function followPages(origin: string, headers: Record<string, string>, starts: string[], hops: number): Promise<string[]> {
  const pages: string[] = [];
  for (const start of starts) {
    let next: string | null = start;
    for (let i = 0; i <= hops && next; i += 1) {
      const r = await call(origin, 'GET', next, headers);
      expectOk(`list page ${next}`, r);
      if (i > 0) pages.push(next);
      const url: unknown = r.json?.next_page_url;
      next = typeof url === 'string' ? (url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url) : null;
    }
  }
  return pages;
}

async function seedLists(benchUrl: string, origin: string): Promise<{ scenarios: Scenario[]; seededMs: number }> {
  const started = Date.now();
  const client = new pg.Client({ connectionString: benchUrl, connectionTimeoutMillis: 10_000, application_name: 'recaudo-bench-seed' });
  await client.connect();
  const scenarios: Scenario[] = [];
  try {
    for (const size of ['small', 'big'] as const) {
      const rows = listRows[size];
      const { companyId, testKey } = await createCompany({ ...process.env, DATABASE_URL: benchUrl }, `Bench lists ${rows}`);
      log(`seeding ${rows.toLocaleString('en-US')} customers and ${rows.toLocaleString('en-US')} charges into company ${companyId} (SQL)`);
      const t = Date.now();
      await seedRows(client, companyId, rows);
      log(`    seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      const headers = { authorization: `Bearer ${testKey}` };
      for (const resource of ['customers', 'charges'] as const) {
        const first = `/v1/${resource}?per_page=20`;
        const middle = `/v1/${resource}?per_page=20&page=${Math.max(1, Math.floor(rows / 20 / 2))}`;
        const pages = await followPages(origin, headers, [first, middle], LIST_HOPS);
        const label = `${rows.toLocaleString('en-US')} rows`;
        const common = { target: 'service' as const, method: 'GET' as const, auth: headers, limit: 'one_read_get' as const, goal: 0.5 };
        scenarios.push(
          { ...common, key: `${resource}_list_${size}_first`, name: `GET /v1/${resource}?per_page=20 (${label})`, path: first },
          { ...common, key: `${resource}_list_${size}_next`, name: `GET /v1/${resource} next_page_url (${label})`, path: first, paths: pages },
        );
      }
    }
    // Vacuum now (it also analyzes): otherwise autovacuum's insert-triggered pass over the seeded
    // rows runs during the following scenarios and takes PostgreSQL's CPU from them.
    log('vacuuming the seeded tables');
    await client.query('VACUUM (ANALYZE) customers, charges');
  } finally {
    await client.end().catch(() => {});
  }
  return { scenarios, seededMs: Date.now() - started };
}

/** Issue 18's depth goal: a list's p99 with BENCH_ROWS rows at most 1.5 times its p99 with 10,000. */
function listP99Checks(results: ScenarioResult[]) {
  const checks: { name: string; p99Small: number; p99Big: number; ratio: number; met: boolean }[] = [];
  for (const resource of ['customers', 'charges']) {
    for (const page of ['first', 'next']) {
      const small = results.find((r) => r.key === `${resource}_list_small_${page}`);
      const big = results.find((r) => r.key === `${resource}_list_big_${page}`);
      if (!small || !big) continue;
      // autocannon's latencies have 1 ms resolution: a 1 ms floor keeps a 0 ms p99 from dividing by zero.
      const ratio = Math.max(big.latencyMs.p99, 1) / Math.max(small.latencyMs.p99, 1);
      checks.push({ name: `${resource} ${page} page`, p99Small: small.latencyMs.p99, p99Big: big.latencyMs.p99, ratio, met: ratio <= 1.5 });
    }
  }
  return checks;
}

// ---------------------------------------------------------------------------------------------
// The embedded engine: cold start to /health on a new data directory, and resident memory after
// BENCH_EMBEDDED_REQUESTS requests (half creates, half reads).

interface EmbeddedResult {
  entry: string;
  /** From spawn to /health 200 on a new data directory (initialised and migrated during the start). */
  coldStartMs: number;
  /** The same on the data directory of the first start. */
  restartMs: number;
  requests: number;
  rssMb: number | null;
  peakRssMb: number | null;
  stopMs: number;
  goal: { coldStartMs: number; rssMb: number };
  met: boolean;
}

function residentMb(pid: number | undefined): { rss: number | null; peak: number | null } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    const mb = (v: number) => (Number.isFinite(v) ? Math.round(v / 1024) : null);
    return { rss: mb(kb('VmRSS')), peak: mb(kb('VmHWM')) };
  } catch {
    return { rss: null, peak: null };
  }
}

async function embeddedRound(): Promise<EmbeddedResult> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'recaudo-bench-embedded-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: origin,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_TEST: HUGE_LIMIT,
    RATE_LIMIT_LIVE: HUGE_LIMIT,
  };
  delete env.DATABASE_URL;
  const entry = await serviceEntry();
  log(`embedded engine: starting ${path.relative(root, entry)} on a new data directory`);
  const t0 = performance.now();
  const service = startChild('embedded', [entry], env);
  try {
    await waitHealthy(service, `${origin}/health`, 60_000, 10);
    const coldStartMs = Math.round(performance.now() - t0);
    log(`    healthy after ${coldStartMs} ms`);
    const { testKey } = await createCompany(env, 'Bench embedded');
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const created = await call(origin, 'POST', '/v1/customers', { ...headers, 'x-idempotency': `bench-embedded-${Date.now()}` }, CUSTOMER_BODY);
    expectOk('embedded: create a customer', created);
    const half = Math.floor(EMBEDDED_REQUESTS / 2);
    const hooks = { measuring: () => {}, done: () => {} };
    const common = { origin, headers, connections: Math.min(settings.connections, 16), duration: 0, warmup: 0 };
    await runLoad(
      {
        ...common,
        name: 'embedded-create',
        method: 'POST',
        path: '/v1/customers',
        body: CUSTOMER_BODY,
        idempotency: { mode: 'unique' },
        amount: half,
      },
      hooks,
    );
    await runLoad(
      { ...common, name: 'embedded-read', method: 'GET', path: `/v1/customers/${created.json.id}`, amount: EMBEDDED_REQUESTS - half },
      hooks,
    );
    const { rss, peak } = residentMb(service.proc.pid);
    const s0 = performance.now();
    await stopChild(service);
    const stopMs = Math.round(performance.now() - s0);
    log(`    ${EMBEDDED_REQUESTS} requests: RSS ${rss} MB (peak ${peak} MB); stopped in ${stopMs} ms`);
    // A restart on the same data directory (already initialised and migrated): the usual start.
    const t1 = performance.now();
    const again = startChild('embedded (restart)', [entry], env);
    await waitHealthy(again, `${origin}/health`, 60_000, 10);
    const restartMs = Math.round(performance.now() - t1);
    log(`    restarted on the same data directory: healthy after ${restartMs} ms`);
    await stopChild(again);
    const goal = { coldStartMs: 3000, rssMb: 500 };
    return {
      entry: path.relative(root, entry),
      coldStartMs,
      restartMs,
      requests: EMBEDDED_REQUESTS,
      rssMb: rss,
      peakRssMb: peak,
      stopMs,
      goal,
      met: coldStartMs <= goal.coldStartMs && rss !== null && rss <= goal.rssMb,
    };
  } finally {
    await stopChild(service);
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Webhook delivery scenario

interface DeliveryResult {
  key: 'webhook_delivery';
  name: string;
  targetRate: number;
  producer: Omit<ProducerSummary, 'ids'>;
  receiver: ReceiverStats;
  committed: number;
  received: number;
  missing: number;
  duplicates: number;
  /** Measured deliveries received / seconds from the first measured commit to the last receipt. */
  deliveriesPerSec: number | null;
  latencyMs: ReceiverStats['measured']['latencyMs'];
  /** Seconds from the producer's end until every committed event had been received (or the drain limit). */
  drainS: number;
  /** Committed events not yet received when the producer had stopped. */
  backlogAtEnd: number;
  /** Deliveries/s while that backlog drained, the producer gone (when it was >= DRAIN_RATE_MIN_BACKLOG). */
  drainRatePerSec: number | null;
  /** Changes in the service's tables over the round (the bench database holds only this webhook). */
  database: {
    deliveriesSucceeded: number;
    deliveriesPending: number;
    deliveriesFailed: number;
    attempts: number;
    attemptsNot2xx: number;
    /** (Auto)vacuums and (auto)analyzes of webhook_deliveries during the round. */
    vacuums: number;
    analyzes: number;
    /** Seconds from the first measured commit to the last analyze of webhook_deliveries, when it fell in the round. */
    analyzedAtS: number | null;
    /** BENCH_DELIVERY_ANALYZE: the bench ran ANALYZE itself at the end of the warm-up (counted in `analyzes`). */
    analyzedByBench: boolean;
  };
  /**
   * postgres = all backends (those of the producer read just before it closed them);
   * postgresForService / postgresForProducer = the backends of each (application_name).
   */
  cpuPct: {
    server: number | null;
    postgres: number | null;
    postgresForService: number | null;
    postgresForProducer: number | null;
    loadgen: number | null;
    producer: number | null;
    receiver: number | null;
    machine: number | null;
    other: number | null;
  };
  goal: { deliveriesPerSec: number; p50Ms: number; met: boolean } | null;
  flagged: boolean;
  notes: string[];
}

const DELIVERY_GOAL = { deliveriesPerSec: 2000, p50Ms: 100 };
/** application_name of the producer's connections (PRODUCER_APP in bench/producer.ts, not imported: importing runs it). */
const PRODUCER_APP = 'recaudo-bench-producer';
const DRAIN_RATE_MIN_BACKLOG = 500;

/** Sends `message` to a child and resolves with its first reply of type `reply`. */
function ask<T>(child: Child, message: object, reply: string, timeoutMs = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type?: string }) => {
      if (m?.type !== reply) return;
      done();
      resolve(m as T);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${child.name}: no "${reply}" answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.proc.off('message', onMessage);
    };
    child.proc.on('message', onMessage);
    child.proc.send(message);
  });
}

async function deliveryCounts(client: pg.Client) {
  const d = await client.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status');
  const a = await client.query<{ n: string; bad: string }>(
    'SELECT count(*) AS n, count(*) FILTER (WHERE status_code IS NULL OR status_code NOT BETWEEN 200 AND 299) AS bad FROM webhook_attempts',
  );
  const v = await client.query<{ vacuums: string; analyzes: string; last_analyze: Date | null }>(
    `SELECT autovacuum_count + vacuum_count AS vacuums, autoanalyze_count + analyze_count AS analyzes, greatest(last_autoanalyze, last_analyze) AS last_analyze
     FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`,
  );
  const by = (status: string) => Number(d.rows.find((r) => r.status === status)?.n ?? 0);
  return {
    succeeded: by('succeeded'),
    pending: by('pending'),
    failed: by('failed'),
    attempts: Number(a.rows[0].n),
    attemptsNot2xx: Number(a.rows[0].bad),
    vacuums: Number(v.rows[0]?.vacuums ?? 0),
    analyzes: Number(v.rows[0]?.analyzes ?? 0),
    lastAnalyze: v.rows[0]?.last_analyze ? new Date(v.rows[0].last_analyze).getTime() : null,
  };
}

async function deliveryRound(opts: {
  rate: number;
  benchUrl: string;
  companyId: string;
  service: Child;
  receiver: Child;
  client: pg.Client;
}): Promise<DeliveryResult> {
  const { rate, service, receiver, client } = opts;
  const name = `webhook delivery ${fmt(rate)}/s`;
  const notes: string[] = [];
  const before = await deliveryCounts(client);
  const spec: ProducerSpec = {
    databaseUrl: opts.benchUrl,
    companyId: opts.companyId,
    environment: 'test',
    eventType: delivery.eventType,
    rate,
    warmup: settings.warmup,
    duration: settings.duration,
    batchMs: delivery.batchMs,
    maxInFlight: delivery.maxInFlight,
    maxBatch: delivery.maxBatch,
  };
  const producer = startChild(`producer ${rate}/s`, [path.join('bench', 'producer.ts')], {
    ...process.env,
    BENCH_PRODUCER_SPEC: JSON.stringify(spec),
  });
  let mark: { wall: number; server: number | null; postgres: Map<number, number> | null; machine: number | null; receiver: number | null } | null =
    null;
  let backends: Promise<Map<number, string>> = Promise.resolve(new Map());
  let analyzed: Promise<void> = Promise.resolve();
  let postgresAtResult: Map<number, number> | null = null;
  let summary: ProducerSummary | undefined;
  let failure: string | undefined;
  producer.proc.on('message', (m: { type: string; summary?: ProducerSummary; message?: string }) => {
    if (m.type === 'measuring') {
      mark = {
        wall: performance.now(),
        server: cpuOf(service.proc.pid),
        postgres: cpuOfCommand('postgres'),
        machine: machineBusyMs(),
        receiver: cpuOf(receiver.proc.pid),
      };
      // Which backend serves whom, to split PostgreSQL's CPU between the service and the producer.
      backends = client
        .query<{ pid: number; application_name: string }>('SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database()')
        .then(
          (r) => new Map(r.rows.map((row) => [row.pid, row.application_name])),
          () => new Map(),
        );
      if (delivery.analyze) {
        analyzed = backends
          .then(() => client.query('ANALYZE webhook_deliveries, events, webhook_attempts'))
          .then(
            () => undefined,
            (error: Error) => log(`ANALYZE failed: ${error.message}`),
          );
      }
    }
    if (m.type === 'result') {
      summary = m.summary;
      // The producer's backends end with it: read their CPU while they exist, then let it close.
      postgresAtResult = cpuOfCommand('postgres');
      if (running(producer)) producer.proc.send({ type: 'close' });
    }
    if (m.type === 'error') failure = m.message;
  });
  const limitMs = (settings.warmup + settings.duration + 60) * 1000;
  const watchdog = setTimeout(() => {
    failure = `producer still running after ${limitMs} ms`;
    void stopChild(producer, 2_000);
  }, limitMs);
  const exit = await producer.exited;
  clearTimeout(watchdog);
  if (!summary) throw new Error(failure ? `producer at ${rate}/s failed: ${failure}` : describeExit(producer, exit));
  await analyzed;
  const produced = performance.now();

  // Every committed event received, or the drain limit.
  const deadline = produced + delivery.drain * 1000;
  let progress = { requests: 0, unique: 0 };
  let first: { at: number; unique: number } | null = null;
  while (performance.now() < deadline) {
    progress = await ask<{ requests: number; unique: number }>(receiver, { type: 'progress' }, 'progress');
    first ??= { at: performance.now(), unique: progress.unique };
    if (progress.unique >= summary.committed) break;
    if (!running(service)) throw new Error(describeExit(service, await service.exited));
    // Poll interval of a completion check (not a fixed wait).
    await new Promise((r) => setTimeout(r, 20));
  }
  const drained = performance.now();
  const drainS = Math.round((drained - produced) / 100) / 10;
  // Delivered after the producer stopped, with the machine to the service alone: its own pace.
  const backlogAtEnd = first ? Math.max(0, summary.committed - first.unique) : 0;
  const drainRatePerSec =
    first && backlogAtEnd >= DRAIN_RATE_MIN_BACKLOG && drained > first.at
      ? Math.round((progress.unique - first.unique) / ((drained - first.at) / 1000))
      : null;
  const cpu: DeliveryResult['cpuPct'] = {
    server: null,
    postgres: null,
    postgresForService: null,
    postgresForProducer: null,
    loadgen: null,
    producer: null,
    receiver: null,
    machine: null,
    other: null,
  };
  if (mark) {
    const m = mark as NonNullable<typeof mark>;
    const wall = drained - m.wall;
    const server = cpuOf(service.proc.pid);
    const recv = cpuOf(receiver.proc.pid);
    const machineNow = machineBusyMs();
    const postgresNow = cpuOfCommand('postgres');
    // Latest reading of every backend, including the producer's that have ended since.
    const postgresEnd = postgresNow ? new Map([...((postgresAtResult as Map<number, number> | null) ?? []), ...postgresNow]) : null;
    cpu.server = percentOfCore(server === null || m.server === null ? null : server - m.server, wall);
    cpu.postgres = percentOfCore(cpuDelta(m.postgres, postgresEnd), wall);
    const apps = await backends;
    const part = (match: (app: string) => boolean) =>
      m.postgres && postgresEnd
        ? percentOfCore(
            [...postgresEnd].filter(([pid]) => match(apps.get(pid) ?? '')).reduce((sum, [pid, ms]) => sum + ms - (m.postgres!.get(pid) ?? 0), 0),
            wall,
          )
        : null;
    cpu.postgresForProducer = part((app) => app === PRODUCER_APP);
    cpu.postgresForService = part((app) => app === 'recaudo' || app === 'recaudo-listen');
    cpu.machine = percentOfCore(machineNow === null || m.machine === null ? null : machineNow - m.machine, wall);
    cpu.producer = percentOfCore(summary.cpuMs, wall);
    cpu.receiver = percentOfCore(recv === null || m.receiver === null ? null : recv - m.receiver, wall);
    cpu.loadgen = cpu.producer === null || cpu.receiver === null ? null : Math.round((cpu.producer + cpu.receiver) * 10) / 10;
    cpu.other = cpu.loadgen === null ? null : otherCpu(cpu, cpu.loadgen);
  }

  // The service records outcomes after its batch's requests have all been answered: let it finish.
  let after = await deliveryCounts(client);
  const settleUntil = performance.now() + 10_000;
  while (after.pending - before.pending > 0 && performance.now() < settleUntil) {
    await new Promise((r) => setTimeout(r, 50));
    after = await deliveryCounts(client);
  }

  const { ids, ...producerRest } = summary;
  const final = await ask<{ stats: ReceiverStats }>(receiver, { type: 'final', committed: ids }, 'final', 60_000);
  const stats = final.stats;
  const spanMs =
    stats.measured.firstSentAt !== null && stats.measured.lastReceivedAt !== null ? stats.measured.lastReceivedAt - stats.measured.firstSentAt : null;
  const deliveriesPerSec = spanMs && spanMs > 0 ? Math.round((stats.measured.received / (spanMs / 1000)) * 10) / 10 : null;
  const database = {
    deliveriesSucceeded: after.succeeded - before.succeeded,
    deliveriesPending: after.pending - before.pending,
    deliveriesFailed: after.failed - before.failed,
    attempts: after.attempts - before.attempts,
    attemptsNot2xx: after.attemptsNot2xx - before.attemptsNot2xx,
    vacuums: after.vacuums - before.vacuums,
    analyzes: after.analyzes - before.analyzes,
    analyzedAtS:
      after.lastAnalyze !== null && after.lastAnalyze !== before.lastAnalyze && stats.measured.firstSentAt !== null
        ? Math.round((after.lastAnalyze - stats.measured.firstSentAt) / 100) / 10
        : null,
    analyzedByBench: delivery.analyze,
  };
  const flagged =
    stats.missing > 0 ||
    stats.duplicates > 0 ||
    stats.unknown > 0 ||
    stats.malformed > 0 ||
    summary.failedTransactions > 0 ||
    summary.committedMeasured === 0 ||
    database.attemptsNot2xx > 0;
  if (stats.missing > 0) notes.push(`${stats.missing} committed events not received within ${delivery.drain} s after the producer stopped`);
  if (stats.duplicates > 0) notes.push(`${stats.duplicates} events received more than once`);
  if (stats.unknown > 0 || stats.malformed > 0) notes.push(`${stats.unknown} unknown ids, ${stats.malformed} malformed requests at the receiver`);
  if (summary.failedTransactions > 0) notes.push(`${summary.failedTransactions} producer transactions failed: ${summary.firstError}`);
  if (database.attempts !== database.deliveriesSucceeded) {
    notes.push(
      `${database.attempts} attempts recorded for ${database.deliveriesSucceeded} deliveries settled (${database.deliveriesPending} still pending)`,
    );
  }
  if (database.analyzes > 0 && !delivery.analyze) {
    notes.push(
      `webhook_deliveries was analyzed during the round${database.analyzedAtS !== null ? ` (${database.analyzedAtS} s after the first measured commit)` : ''}: the claim's plan changes from then on`,
    );
  }
  if (delivery.analyze)
    notes.push('webhook tables analyzed by the bench at the end of the warm-up (BENCH_DELIVERY_ANALYZE=0: never-analyzed tables)');
  else notes.push('BENCH_DELIVERY_ANALYZE=0: the webhook tables had no statistics unless autovacuum analyzed them');
  if (summary.measuredRate < rate * 0.97) notes.push(`the producer committed only ${fmt(summary.measuredRate)} events/s of the ${fmt(rate)} asked`);
  const goal =
    rate >= DELIVERY_GOAL.deliveriesPerSec
      ? {
          ...DELIVERY_GOAL,
          // 2 % tolerance: asking exactly the goal rate, the window (first commit to last receipt) also holds one latency.
          met:
            !flagged &&
            (deliveriesPerSec ?? 0) >= DELIVERY_GOAL.deliveriesPerSec * 0.98 &&
            (stats.measured.latencyMs?.p50 ?? Infinity) < DELIVERY_GOAL.p50Ms,
        }
      : null;
  return {
    key: 'webhook_delivery',
    name,
    targetRate: rate,
    producer: producerRest,
    receiver: stats,
    committed: summary.committed,
    received: stats.unique,
    missing: stats.missing,
    duplicates: stats.duplicates,
    deliveriesPerSec,
    latencyMs: stats.measured.latencyMs,
    drainS,
    backlogAtEnd,
    drainRatePerSec,
    database,
    cpuPct: cpu,
    goal,
    flagged,
    notes,
  };
}

function deliveryRow(r: DeliveryResult): TableRow {
  return {
    name: `${r.name} (commit->receipt)`,
    rps: r.deliveriesPerSec ?? 0,
    p50: r.latencyMs?.p50 ?? null,
    p99: r.latencyMs?.p99 ?? null,
    avg: r.latencyMs?.avg ?? null,
    non2xx: r.database.attemptsNot2xx,
    errors: r.missing + r.duplicates,
    ratioVsBaselineGet: null,
    ratioVsBaselineSameMethod: null,
    limit: null,
    ratioVsLimit: null,
    goal: null,
    cpuPct: r.cpuPct,
    flagged: r.flagged,
  };
}

function deliveryTable(rows: DeliveryResult[]): string {
  const head = [
    'webhook delivery',
    'asked/s',
    'committed/s',
    'committed',
    'received',
    'missing',
    'dup',
    'deliveries/s',
    'p50',
    'p90',
    'p99',
    'max ms',
    'drain s',
    'drain/s',
    'txn ms p50/p99',
    'CPU pg for srv/prod %',
    'goal',
  ];
  const body = rows.map((r) => [
    r.name,
    fmt(r.targetRate),
    fmt(r.producer.measuredRate),
    fmt(r.committed),
    fmt(r.received),
    fmt(r.missing),
    fmt(r.duplicates),
    fmt(r.deliveriesPerSec),
    fmt(r.latencyMs?.p50 ?? null),
    fmt(r.latencyMs?.p90 ?? null),
    fmt(r.latencyMs?.p99 ?? null),
    fmt(r.latencyMs?.max ?? null),
    fmt(r.drainS, 1),
    fmt(r.drainRatePerSec),
    `${fmt(r.producer.transactionMs.p50, 1)}/${fmt(r.producer.transactionMs.p99, 1)}`,
    `${fmt(r.cpuPct.postgresForService)}/${fmt(r.cpuPct.postgresForProducer)}`,
    r.goal ? (r.goal.met ? 'met' : 'NOT met') : '-',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

async function main(): Promise<number> {
  const startedAt = new Date();
  const machine = machineInfo();
  log(
    `settings: ${settings.duration} s per scenario (+${settings.warmup} s warm-up), ${settings.connections} connections; ${machine.cpus} CPUs, node ${machine.node}`,
  );

  // 1. A fresh database.
  const benchUrl = databaseUrl(adminUrl, BENCH_DB);
  let postgresVersion = 'unknown';
  let autovacuum = true;
  {
    const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
    await admin.connect().catch((error: Error) => {
      throw new Error(`cannot connect to ${redact(adminUrl)}: ${error.message}`);
    });
    try {
      postgresVersion = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
      autovacuum = (await admin.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0].autovacuum === 'on';
      await admin.query(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${BENCH_DB}`);
      databaseCreated = true;
    } finally {
      await admin.end();
    }
  }
  log(`created database ${redact(benchUrl)} (PostgreSQL ${postgresVersion})`);

  // 2. The service.
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const serviceEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: benchUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: origin,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_TEST: HUGE_LIMIT,
    RATE_LIMIT_LIVE: HUGE_LIMIT,
    // The delivery scenario's receiver listens on 127.0.0.1: the local-development opt-in.
    ALLOW_PRIVATE_WEBHOOKS: 'true',
  };
  log(`starting the service on ${origin}`);
  const entry = await serviceEntry();
  const service = startChild('service', [entry], serviceEnv);
  const t0 = Date.now();
  await waitHealthy(service, `${origin}/health`, 90_000);
  log(`service healthy after ${Date.now() - t0} ms`);

  const { companyId, testKey } = await createCompany({ ...process.env, DATABASE_URL: benchUrl });
  log(`company ${companyId} created with the CLI`);

  // 3. The baseline.
  const baseline = startChild('baseline', [path.join('bench', 'baseline-server.ts')], { ...process.env, BENCH_LIMIT_DATABASE_URL: benchUrl });
  const { port: basePort } = await waitMessage<{ port: number }>(baseline, 'listening', 30_000);
  const baseOrigin = `http://127.0.0.1:${basePort}`;
  log(`baseline Fastify listening on ${baseOrigin}`);
  expectOk('baseline GET', await call(baseOrigin, 'GET', '/baseline', {}));
  expectOk('baseline POST', await call(baseOrigin, 'POST', '/baseline', { 'content-type': 'application/json' }, CUSTOMER_BODY));

  // Priming: one customer to read back, and a check that the key works.
  const auth = { authorization: `Bearer ${testKey}` };
  const jsonAuth = { ...auth, 'content-type': 'application/json' };
  const created = await call(origin, 'POST', '/v1/customers', { ...jsonAuth, 'x-idempotency': `bench-prime-${Date.now()}` }, CUSTOMER_BODY);
  expectOk('create a customer', created);
  const customerId: string = created.json.id;
  expectOk('read the customer', await call(origin, 'GET', `/v1/customers/${customerId}`, auth));
  // A saved, authorized test card of that customer for the charges scenario (docs/charges.md).
  const card = await call(
    origin,
    'POST',
    '/v1/cards',
    { ...jsonAuth, 'x-idempotency': `bench-card-${Date.now()}` },
    JSON.stringify({
      card_number: '4242424242424242',
      expiration_month: 12,
      expiration_year: new Date().getUTCFullYear() + 3,
      cvv: '123',
      holder_name: 'Ana Bench',
      customer_id: customerId,
      authorization: true,
    }),
  );
  expectOk('save a test card', card);
  const CHARGE_BODY = JSON.stringify({ amount: 150000, title: 'Cuota bench', customer_id: customerId, card_id: card.json.id });
  // Counted in SQL: past LIST_COUNT_CAP the list's total is null (docs/lists.md).
  const countCustomers = async (): Promise<number> => {
    const client = new pg.Client({ connectionString: benchUrl });
    await client.connect();
    try {
      return Number((await client.query('SELECT count(*) AS n FROM customers WHERE company_id = $1', [companyId])).rows[0].n);
    } finally {
      await client.end();
    }
  };
  // With autovacuum off (as on the machine this was written on), tables the scenarios grew from
  // empty would never get statistics, and the planner would pick its indexes blind: a live database
  // analyzes them within about a minute. The bench does it before each scenario instead.
  const analyzeIfNoAutovacuum = async (): Promise<boolean> => {
    if (autovacuum) return false;
    const client = new pg.Client({ connectionString: benchUrl });
    await client.connect();
    try {
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
    return true;
  };

  expectOk('one-commit POST', await call(baseOrigin, 'POST', '/limit/commit', { 'content-type': 'application/json' }, CUSTOMER_BODY));
  expectOk('one-read GET', await call(baseOrigin, 'GET', '/limit/read', {}));

  const lists = LIST_KEYS.some(wants) ? await seedLists(benchUrl, origin) : null;

  const allScenarios: Scenario[] = [
    {
      key: 'baseline_get',
      name: 'baseline GET /baseline',
      target: 'baseline',
      method: 'GET',
      path: '/baseline',
      auth: false,
      limit: 'bare_get',
      goal: null,
    },
    {
      key: 'baseline_post',
      name: 'baseline POST /baseline',
      target: 'baseline',
      method: 'POST',
      path: '/baseline',
      auth: false,
      body: CUSTOMER_BODY,
      limit: 'bare_post',
      goal: null,
    },
    {
      key: 'limit_commit_post',
      name: 'limit: one-commit POST',
      target: 'baseline',
      method: 'POST',
      path: '/limit/commit',
      auth: false,
      body: CUSTOMER_BODY,
      limit: 'one_commit_post',
      goal: null,
    },
    {
      key: 'limit_read_get',
      name: 'limit: one-read GET',
      target: 'baseline',
      method: 'GET',
      path: '/limit/read',
      auth: false,
      limit: 'one_read_get',
      goal: null,
    },
    {
      key: 'customers_create',
      name: 'POST /v1/customers (new key each)',
      target: 'service',
      method: 'POST',
      path: '/v1/customers',
      auth: true,
      body: CUSTOMER_BODY,
      idempotency: 'unique',
      limit: 'one_commit_post',
      goal: 0.5,
    },
    {
      key: 'customers_create_replay',
      name: 'POST /v1/customers (replayed key)',
      target: 'service',
      method: 'POST',
      path: '/v1/customers',
      auth: true,
      body: CUSTOMER_BODY,
      idempotency: 'replay',
      limit: 'bare_post',
      goal: 0.5,
    },
    {
      key: 'customers_get',
      name: 'GET /v1/customers/{id}',
      target: 'service',
      method: 'GET',
      path: `/v1/customers/${customerId}`,
      auth: true,
      limit: 'one_read_get',
      goal: 0.7,
    },
    {
      key: 'charges_card',
      name: 'POST /v1/charges (card, test key)',
      target: 'service',
      method: 'POST',
      path: '/v1/charges',
      auth: true,
      body: CHARGE_BODY,
      idempotency: 'unique',
      limit: 'one_commit_post',
      goal: 0.25,
    },
    ...(lists?.scenarios ?? []),
  ];

  const scenarios = allScenarios.filter((s) => wants(s.key));
  const runDelivery = wants('webhook_delivery');
  const steps = scenarios.length + (runDelivery ? delivery.rates.length : 0);

  const results: ScenarioResult[] = [];
  const checks: Record<string, unknown> = {};
  for (const [i, s] of scenarios.entries()) {
    const notes: string[] = [];
    const authHeaders = s.auth === true ? auth : s.auth === false ? {} : s.auth;
    const headers: Record<string, string> = { ...authHeaders, ...(s.body ? { 'content-type': 'application/json' } : {}) };
    let idempotency: LoadSpec['idempotency'];
    if (s.idempotency === 'unique') idempotency = { mode: 'unique' };
    if (s.idempotency === 'replay') {
      // Store the response once, and check that a second request is indeed a replay.
      const prefix = `bench-replay-${Date.now().toString(36)}`;
      const since = Date.now();
      const first = await call(origin, 'POST', s.path, { ...headers, 'x-idempotency': `${prefix}-0` }, s.body);
      expectOk('prime the replayed key', first);
      const second = await call(origin, 'POST', s.path, { ...headers, 'x-idempotency': `${prefix}-0` }, s.body);
      expectOk('replay the primed key', second);
      if (second.headers.get('idempotent-replayed') !== 'true' || second.json?.id !== first.json?.id) {
        throw new Error('the second request with the same key was not a replay');
      }
      idempotency = { mode: 'rotating', prefix, since, everyMs: REPLAY_KEY_EVERY_MS };
      const rotations = Math.floor((Date.now() - since + (settings.warmup + settings.duration + 5) * 1000) / REPLAY_KEY_EVERY_MS);
      if (rotations > 0) notes.push(`key switched ${rotations} time(s) to stay inside the 60 s window; each switch runs once, the rest replay`);
    }
    const before = s.target === 'service' && s.method === 'POST' && s.key.startsWith('customers_') ? await countCustomers() : null;
    if (s.target === 'service' && (await analyzeIfNoAutovacuum()))
      notes.push('autovacuum is off on this server: the bench ran ANALYZE before the scenario');
    if (s.paths) notes.push(`${s.paths.length} pages collected by following next_page_url, taken in turn`);

    log(
      `[${i + 1}/${steps}] ${s.name}: ${settings.warmup ? `${settings.warmup} s warm-up + ` : ''}${settings.duration} s, ${settings.connections} connections`,
    );
    const serverPid = (s.target === 'baseline' ? baseline : service).proc.pid;
    let mark: { wall: number; server: number | null; postgres: Map<number, number> | null; machine: number | null } | null = null;
    const cpu: { server: number | null; postgres: number | null; machine: number | null } = { server: null, postgres: null, machine: null };
    const hooks = {
      measuring: () => {
        mark = { wall: performance.now(), server: cpuOf(serverPid), postgres: cpuOfCommand('postgres'), machine: machineBusyMs() };
      },
      done: () => {
        if (!mark) return;
        const wall = performance.now() - mark.wall;
        const server = cpuOf(serverPid);
        const machineNow = machineBusyMs();
        cpu.server = percentOfCore(server === null || mark.server === null ? null : server - mark.server, wall);
        cpu.postgres = percentOfCore(cpuDelta(mark.postgres, cpuOfCommand('postgres')), wall);
        cpu.machine = percentOfCore(machineNow === null || mark.machine === null ? null : machineNow - mark.machine, wall);
      },
    };
    const summary = await runLoad(
      {
        name: s.key,
        origin: s.target === 'baseline' ? baseOrigin : origin,
        method: s.method,
        path: s.path,
        paths: s.paths,
        headers,
        body: s.body,
        idempotency,
        connections: settings.connections,
        duration: settings.duration,
        warmup: settings.warmup,
      },
      hooks,
    );

    if (before !== null && s.method === 'POST') {
      const after = await countCustomers();
      checks[`${s.key}_customers_created`] = after - before;
      notes.push(`${after - before} customers created during the scenario (warm-up included)`);
    }
    const flagged = summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0 || summary.ok2xx === 0;
    if (flagged) {
      notes.push(`NOT ALL 2xx: status codes ${JSON.stringify(summary.statusCodes)}, ${summary.errors} errors, ${summary.timeouts} timeouts`);
    }
    const result: ScenarioResult = {
      key: s.key,
      name: s.name,
      method: s.method,
      path: s.path,
      ...summary,
      ratioVsBaselineGet: null,
      ratioVsBaselineSameMethod: null,
      limit: s.limit,
      ratioVsLimit: null,
      goal: s.goal,
      cpuPct: { ...cpu, loadgen: summary.loadgenCpuPct, other: otherCpu(cpu, summary.loadgenCpuPct) },
      flagged,
      notes,
    };
    results.push(result);
    log(
      `    ${fmt(summary.rps)} req/s, p50 ${fmt(summary.latencyMs.p50, 1)} ms, p99 ${fmt(summary.latencyMs.p99, 1)} ms, ` +
        `${summary.ok2xx} 2xx, ${summary.non2xx} non-2xx, ${summary.errors} errors; ` +
        `CPU server ${fmt(cpu.server)}%, postgres ${fmt(cpu.postgres)}%, load generator ${fmt(summary.loadgenCpuPct)}%, ` +
        `machine ${fmt(cpu.machine)}% of ${machine.cpus * 100}%${flagged ? '  << FLAGGED' : ''}`,
    );
    if (!running(service)) throw new Error(describeExit(service, await service.exited));
  }

  const deliveries: DeliveryResult[] = [];
  let webhookId: string | null = null;
  if (runDelivery) {
    const receiver = startChild('receiver', [path.join('bench', 'receiver.ts')], process.env);
    const { port: receiverPort } = await waitMessage<{ port: number }>(receiver, 'listening', 30_000);
    const hookUrl = `http://127.0.0.1:${receiverPort}/recaudo/webhooks`;
    const hook = await call(
      origin,
      'POST',
      '/v1/webhooks',
      { ...jsonAuth, 'x-idempotency': `bench-webhook-${Date.now()}` },
      JSON.stringify({ name: 'bench receiver', url: hookUrl, events: [delivery.eventType] }),
    );
    expectOk('register the receiver webhook', hook);
    webhookId = hook.json?.data?.id ?? null;
    log(`receiver listening on ${hookUrl}, registered as test webhook ${webhookId} for ${delivery.eventType}`);
    const client = new pg.Client({ connectionString: benchUrl, connectionTimeoutMillis: 10_000, application_name: 'recaudo-bench' });
    await client.connect();
    try {
      for (const [j, rate] of delivery.rates.entries()) {
        log(
          `[${scenarios.length + j + 1}/${steps}] webhook delivery at ${rate} events/s: ${settings.warmup ? `${settings.warmup} s warm-up + ` : ''}${settings.duration} s, ` +
            `one producer transaction every ${delivery.batchMs} ms, then up to ${delivery.drain} s to receive the rest`,
        );
        const r = await deliveryRound({ rate, benchUrl, companyId, service, receiver, client });
        deliveries.push(r);
        log(
          `    committed ${r.committed} (${fmt(r.producer.measuredRate)}/s measured), received ${r.received}, missing ${r.missing}, duplicates ${r.duplicates}; ` +
            `${fmt(r.deliveriesPerSec)} deliveries/s, p50 ${fmt(r.latencyMs?.p50 ?? null)} ms, p99 ${fmt(r.latencyMs?.p99 ?? null)} ms; drained ${fmt(r.drainS, 1)} s after the producer; ` +
            `CPU server ${fmt(r.cpuPct.server)}%, postgres ${fmt(r.cpuPct.postgres)}%, producer ${fmt(r.cpuPct.producer)}%, receiver ${fmt(r.cpuPct.receiver)}%, machine ${fmt(r.cpuPct.machine)}%${r.flagged ? '  << FLAGGED' : ''}`,
        );
        if (!running(service)) throw new Error(describeExit(service, await service.exited));
      }
    } finally {
      await client.end().catch(() => {});
      await stopChild(receiver);
    }
  }

  const baseGet = results.find((r) => r.key === 'baseline_get')?.rps ?? 0;
  const basePost = results.find((r) => r.key === 'baseline_post')?.rps ?? 0;
  for (const r of results) {
    r.ratioVsBaselineGet = baseGet > 0 ? r.rps / baseGet : null;
    const same = r.method === 'POST' ? basePost : baseGet;
    r.ratioVsBaselineSameMethod = same > 0 ? r.rps / same : null;
    const limitRps = results.find((x) => x.key === LIMIT_OF[r.limit])?.rps ?? 0;
    r.ratioVsLimit = limitRps > 0 ? r.rps / limitRps : null;
  }
  const p99Goals = lists ? listP99Checks(results) : [];
  let embedded: EmbeddedResult | { error: string } | null = null;
  if (wants('embedded')) {
    try {
      embedded = await embeddedRound();
    } catch (error) {
      // The rest of the run is still worth its report.
      embedded = { error: error instanceof Error ? error.message : String(error) };
      log(`embedded engine round failed: ${embedded.error}`);
    }
  }

  const finishedAt = new Date();
  const report = {
    timestamp: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    git: await gitInfo(),
    settings: { ...settings, durationUnit: 's', loadGenerator: 'autocannon (separate process)' },
    machine: { ...machine, loadAvgAtEnd: os.loadavg().map((v) => Math.round(v * 100) / 100) },
    postgres: { version: postgresVersion, database: BENCH_DB },
    service: {
      command: entry.endsWith('.js') ? `node ${path.relative(root, entry)}` : `node --import tsx ${path.relative(root, entry)}`,
      env: {
        LOG_LEVEL: 'warn',
        RATE_LIMIT_TEST: HUGE_LIMIT,
        RATE_LIMIT_LIVE: HUGE_LIMIT,
        ALLOW_PRIVATE_WEBHOOKS: 'true',
        RUN_WORKERS: process.env.RUN_WORKERS ?? '(default)',
        DB_POOL_SIZE: process.env.DB_POOL_SIZE ?? '(default)',
      },
    },
    cpu: 'cpuPct: percent of one core during the measured seconds; server = the process under test, postgres = all postgres processes, loadgen = autocannon process, machine = all busy CPU of the machine, other = machine minus the three',
    ratios: {
      ratioVsBaselineGet: 'scenario req/s divided by baseline GET req/s',
      ratioVsBaselineSameMethod: 'GET scenarios against baseline GET, POST scenarios against baseline POST',
    },
    scenarios: results,
    lists: lists ? { rows: listRows, hops: LIST_HOPS, seededMs: lists.seededMs, p99Goals } : null,
    embedded,
    webhookDelivery: runDelivery
      ? {
          description:
            "A producer process commits events (emitEvent, one transaction per batch) into the bench database at targetRate/s; the service's dispatcher POSTs them to a receiver process. " +
            "deliveriesPerSec = measured events received / (last receipt - first measured sent_at); latencyMs = receipt Date.now() - data.sent_at (taken before the event's insert, so it includes the rest of its transaction and the commit). " +
            'cpuPct.loadgen = producer + receiver; the CPU window runs from the end of the warm-up until the last event was received.',
          eventType: delivery.eventType,
          webhookId,
          batchMs: delivery.batchMs,
          producerMaxInFlight: delivery.maxInFlight,
          producerMaxBatch: delivery.maxBatch,
          drainLimitS: delivery.drain,
          analyzeAfterWarmup: delivery.analyze,
          goal: DELIVERY_GOAL,
          serviceEnv: { WEBHOOK_CONCURRENCY: process.env.WEBHOOK_CONCURRENCY ?? '(default)' },
          rounds: deliveries,
        }
      : null,
    checks,
  };

  const outDir = path.join(root, 'bench', 'results');
  await fs.mkdir(outDir, { recursive: true });
  await fs.writeFile(path.join(outDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);

  const out: string[] = [];
  out.push('');
  out.push(
    `Recaudo benchmark  ${startedAt.toISOString()}  node ${machine.node}, ${machine.cpus} x ${machine.cpuModel}, PostgreSQL ${postgresVersion}`,
  );
  out.push(
    `${settings.duration} s per scenario after ${settings.warmup} s warm-up, ${settings.connections} connections, pipelining 1; load generator, service and baseline share the machine`,
  );
  out.push('');
  out.push(table([...results.map(httpRow), ...deliveries.map(deliveryRow)]));
  out.push('');
  if (deliveries.length) {
    out.push(deliveryTable(deliveries));
    out.push('');
  }
  out.push('vs base GET: req/s / baseline GET req/s.  vs base same-method: GET rows against baseline GET, POST rows against baseline POST.');
  out.push('Latencies have 1 ms resolution (autocannon).  CPU: percent of one core during the measurement for the server under test');
  out.push('(service or baseline), all postgres processes, the load generator, and other busy CPU on the machine (anything else running).');
  if (deliveries.length) {
    out.push(
      `Webhook delivery rows: req/s = deliveries/s (received / first commit to last receipt), latency = receipt - data.sent_at (commit->receipt),`,
    );
    out.push(`non-2xx = attempts recorded with another outcome, errors = missing + duplicate deliveries; load CPU = producer + receiver;`);
    out.push(`CPU pg for srv/prod: the postgres CPU of the service's backends and of the producer's (the rest is autovacuum, WAL writer...).`);
    out.push(`txn ms: the producer's transactions (BEGIN..COMMIT); the latency includes the rest of its event's transaction.`);
    out.push(
      `drain s: from the producer's end to the last receipt; drain/s: deliveries/s of that tail with the producer gone (backlog >= ${DRAIN_RATE_MIN_BACKLOG}).`,
    );
    out.push(
      `Goal: >= ${DELIVERY_GOAL.deliveriesPerSec} deliveries/s (2 % tolerance) with p50 < ${DELIVERY_GOAL.p50Ms} ms, judged on rounds asking >= ${DELIVERY_GOAL.deliveriesPerSec}/s.`,
    );
  }
  if (p99Goals.length) {
    out.push(`Lists at depth (p99 with ${listRows.big.toLocaleString('en-US')} rows <= 1.5 x p99 with ${listRows.small.toLocaleString('en-US')}):`);
    for (const c of p99Goals) out.push(`  ${c.name}: p99 ${c.p99Small} ms -> ${c.p99Big} ms, x${fmt(c.ratio, 2)}  ${c.met ? 'met' : 'NOT met'}`);
  }
  if (embedded && 'error' in embedded) out.push(`Embedded engine: the round failed: ${embedded.error}`);
  else if (embedded) {
    out.push(
      `Embedded engine (${embedded.entry}): cold start ${embedded.coldStartMs} ms to /health 200 on a new data directory (goal <= ${embedded.goal.coldStartMs}), ${embedded.restartMs} ms on it again, ` +
        `RSS ${embedded.rssMb} MB after ${embedded.requests} requests (peak ${embedded.peakRssMb}; goal <= ${embedded.goal.rssMb}), stopped in ${embedded.stopMs} ms  ${embedded.met ? 'met' : 'NOT met'}`,
    );
  }
  out.push('vs limit: req/s over the matching limit (one_commit_post for writes, one_read_get for reads, bare_post for the replay).');
  for (const r of [...results, ...deliveries]) for (const n of r.notes) out.push(`- ${r.name}: ${n}`);
  out.push(`results written to ${path.relative(process.cwd(), path.join(outDir, 'latest.json')) || 'bench/results/latest.json'}`);
  process.stdout.write(`${out.join('\n')}\n`);

  const busy = [...results, ...deliveries].filter((r) => (r.cpuPct.other ?? 0) >= 20);
  if (busy.length) {
    log(`warning: other processes used CPU during ${busy.map((r) => `${r.name} (${r.cpuPct.other}%)`).join(', ')}; those numbers are disturbed`);
  }
  const flagged = [...results, ...deliveries].filter((r) => r.flagged);
  if (flagged.length) log(`FLAGGED (responses other than 2xx, or errors): ${flagged.map((r) => r.name).join('; ')}`);
  return flagged.length ? 1 : 0;
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  if (!aborted) log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  if (!aborted) {
    await cleanup();
    process.exit(exitCode);
  }
}
