import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createHarness, ENGINE, eventually, type Harness } from './harness.ts';
import { freePort } from './fault-harness.ts';

/**
 * Operations (docs/operations.md "Metrics", "Tracing"): /metrics keeps its own series and adds
 * prom-client's process and runtime metrics and the pool, job and stamping gauges; OpenTelemetry is
 * loaded only with OTEL_EXPORTER_OTLP_ENDPOINT, and then spans reach an OTLP/HTTP receiver.
 */

describe('GET /metrics', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness({ METRICS_TOKEN: 'scrape' });
  });
  after(() => h.close());

  test('process and runtime metrics, jobs by kind and state, stampings, the pool; the existing series unchanged', async () => {
    const co = await h.company();
    await co.req({ url: '/v1/customers' });
    const kind = `test.metrics.${Math.random().toString(36).slice(2, 8)}`;
    const db = h.runtime.deps.database.db;
    await h.runtime.deps.jobs.enqueue(db, kind, {}, new Date(h.clock.now().getTime() + 3_600_000));
    await h.runtime.deps.jobs.enqueue(db, kind, {}, new Date(h.clock.now().getTime() + 3_600_000));
    const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape' } });
    assert.equal(res.statusCode, 200);
    const text = res.body;
    // Ours, as before.
    assert.match(text, /recaudo_http_requests_total\{method="GET",route="\/v1\/customers",status="2xx"\} 1/);
    assert.match(text, /# TYPE recaudo_webhook_queue_depth gauge/);
    assert.match(text, /# TYPE recaudo_jobs_dead gauge/);
    // prom-client's defaults.
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ])
      assert.match(text, new RegExp(`# TYPE ${name} `), name);
    // The new gauges.
    assert.match(text, new RegExp(`recaudo_jobs\\{kind="${kind.replace(/\./g, '\\.')}",state="queued"\\} 2`));
    assert.match(text, /recaudo_jobs\{kind="[^"]+",state="failed"\} \d+/);
    assert.match(text, /recaudo_stampings\{status="pending"\} \d+/);
    assert.match(text, /recaudo_stampings\{status="rejected"\} \d+/);
    if (ENGINE === 'postgres') {
      assert.match(text, /recaudo_db_pool_connections\{state="in_use"\} \d+/);
      assert.match(text, /recaudo_db_pool_connections\{state="waiting"\} 0/);
    } else assert.doesNotMatch(text, /recaudo_db_pool_connections/, 'the embedded engine has no pool');
    // Every sample line is well-formed Prometheus text.
    for (const line of text.trim().split('\n'))
      if (!line.startsWith('#')) assert.match(line, /^[a-z_:][a-z0-9_:]*(\{.*\})? -?[0-9.e+-]+|NaN|[+-]Inf$/i, line);
    await db.deleteFrom('jobs').where('kind', '=', kind).execute();
  });
});

/** The real start command, recording every module it imports; OTLP/HTTP (JSON) to a local receiver when given. */
async function startServer(
  extra: Record<string, string>,
): Promise<{ child: ChildProcess; base: string; imports: () => string[]; stop: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-otel-'));
  const importsFile = path.join(dir, 'imports.txt');
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: ENGINE === 'postgres' ? process.env.TEST_DATABASE_URL : '',
    LOG_LEVEL: 'warn',
    RECORD_IMPORTS_FILE: importsFile,
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
    ...extra,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/support/record-imports.mjs', 'src/main.ts'], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {
      /* starting */
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    base,
    imports: () => (fs.existsSync(importsFile) ? fs.readFileSync(importsFile, 'utf8').trim().split('\n') : []),
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('OpenTelemetry tracing', () => {
  test('without OTEL_EXPORTER_OTLP_ENDPOINT not one OpenTelemetry module is loaded', async () => {
    const server = await startServer({});
    try {
      await fetch(`${server.base}/v1/customers`);
      const imports = await eventually(async () => {
        const list = server.imports();
        return list.some((u) => u.includes('/node_modules/fastify/')) && list;
      });
      assert.ok(imports.length > 50, `recorded ${imports.length} imports (the recorder works)`);
      const otel = imports.filter((u) => /@opentelemetry|@fastify\/otel/.test(u));
      assert.deepEqual(otel, []);
    } finally {
      await server.stop();
    }
  });

  test('with it, spans of the HTTP request and its Fastify route reach an OTLP/HTTP receiver', async () => {
    const bodies: any[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const server = await startServer({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as { port: number }).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'recaudo-test',
    });
    try {
      await fetch(`${server.base}/v1/customers`, { headers: { authorization: 'Bearer sk_test_unknown' } });
      const spans = await eventually(async () => {
        const all = bodies.flatMap((b) =>
          b.resourceSpans.flatMap((rs: any) =>
            rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ scope: ss.scope.name, name: s.name, service: rs.resource.attributes }))),
          ),
        );
        return all.some((s: any) => s.name === 'GET /v1/customers') && all;
      }, 30_000);
      const scopes = new Set(spans.map((s: any) => s.scope));
      assert.ok(scopes.has('@opentelemetry/instrumentation-http'), [...scopes].join(', '));
      assert.ok(scopes.has('@fastify/otel'), [...scopes].join(', '));
      assert.ok(
        spans[0].service.some((a: any) => a.key === 'service.name' && a.value.stringValue === 'recaudo-test'),
        'OTEL_SERVICE_NAME is the service name',
      );
      assert.ok(server.imports().some((u) => u.includes('@opentelemetry/sdk-node')));
    } finally {
      await server.stop();
      receiver.close();
    }
  });
});
