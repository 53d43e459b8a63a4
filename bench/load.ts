// Load generator for one scenario, run by bench/run.ts in its own process so that it never shares
// an event loop with a server under test. Usage: BENCH_LOAD_SPEC='<LoadSpec JSON>' node --import tsx bench/load.ts
// (an environment variable rather than an argument, so the API key does not show in `ps`).
// Sends one IPC message back: { type: 'result', summary } or { type: 'error', message }.
import autocannon from 'autocannon';

export interface LoadSpec {
  name: string;
  /** Origin of the server under test, e.g. http://127.0.0.1:3000 */
  origin: string;
  method: 'GET' | 'POST';
  path: string;
  /** When set, requests go round-robin over these paths (cursor pages collected beforehand) instead of `path`. */
  paths?: string[];
  headers: Record<string, string>;
  body?: string;
  /**
   * unique: a new x-idempotency value on every request.
   * rotating: one fixed value, replaced every `everyMs` counted from `since` (the moment it was
   * primed) so that each value is used well inside the service's idempotency window.
   */
  idempotency?: { mode: 'unique' } | { mode: 'rotating'; prefix: string; since: number; everyMs: number };
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of unmeasured load before the measurement (0 = none). */
  warmup: number;
  /** When set, the measurement stops after this many requests instead of after `duration`. */
  amount?: number;
}

export interface LoadSummary {
  rps: number;
  requests: number;
  durationS: number;
  latencyMs: { p50: number; p90: number; p99: number; avg: number; max: number };
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** CPU used by this load-generator process during the measurement, in percent of one core. */
  loadgenCpuPct: number;
}

type Message = { type: 'measuring' } | { type: 'result'; summary: LoadSummary } | { type: 'error'; message: string };

function requestFor(spec: LoadSpec): autocannon.RequestSpec {
  const base: autocannon.RequestSpec = { method: spec.method, path: spec.path, headers: spec.headers, body: spec.body };
  const idem = spec.idempotency;
  if (spec.paths?.length) {
    const paths = spec.paths;
    let next = 0;
    return { ...base, setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length] }) };
  }
  if (!idem) return base;
  if (idem.mode === 'unique') {
    const prefix = `bench-${process.pid}-${Date.now().toString(36)}`;
    let counter = 0;
    return { ...base, setupRequest: (req) => ({ ...req, headers: { ...spec.headers, 'x-idempotency': `${prefix}-${counter++}` } }) };
  }
  const key = () => `${idem.prefix}-${Math.floor((Date.now() - idem.since) / idem.everyMs)}`;
  return { ...base, setupRequest: (req) => ({ ...req, headers: { ...spec.headers, 'x-idempotency': key() } }) };
}

let current: autocannon.Instance | null = null;

function fire(spec: LoadSpec, duration: number, amount?: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    current = autocannon(
      {
        url: spec.origin,
        connections: spec.connections,
        ...(amount ? { amount } : { duration }),
        pipelining: 1,
        timeout: 10,
        requests: [requestFor(spec)],
      },
      (err, result) => {
        current = null;
        if (err) reject(err);
        else resolve(result);
      },
    );
  });
}

function send(message: Message): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(message)}\n`);
      resolve();
      return;
    }
    process.send(message, () => resolve());
  });
}

process.on('SIGTERM', () => {
  current?.stop();
  process.exit(143);
});

async function main(): Promise<void> {
  const spec = JSON.parse(process.env.BENCH_LOAD_SPEC ?? '') as LoadSpec;
  if (spec.warmup > 0) await fire(spec, spec.warmup);
  await send({ type: 'measuring' });
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const r = await fire(spec, spec.duration, spec.amount);
  const cpu = process.cpuUsage(cpuBefore);
  const loadgenCpuPct = Math.round(((cpu.user + cpu.system) / 1000 / (performance.now() - wallBefore)) * 1000) / 10;
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = stat.count;
  await send({
    type: 'result',
    summary: {
      rps: r.requests.average,
      requests: r.requests.total,
      durationS: r.duration,
      latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, avg: r.latency.average, max: r.latency.max },
      ok2xx: r['2xx'],
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      statusCodes,
      loadgenCpuPct,
    },
  });
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  },
);
