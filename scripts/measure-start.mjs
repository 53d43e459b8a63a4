#!/usr/bin/env node
// Start time and memory of the service, built against the TypeScript sources through tsx
// (docs/deploy.md "Start time and memory"): for each way of starting, the time from spawn to the
// first 200 from /health and the process's resident memory then, on a fresh data directory (the
// first start migrates it) and again on the same directory (a restart). Medians of --runs (3).
//   npm run build && node scripts/measure-start.mjs [--runs N] [--database-url postgres://...]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, 'database-url': { type: 'string' } } });
const runs = Number(values.runs);
const ways = {
  'node dist/main.js': ['dist/main.js'],
  'node --import tsx src/main.ts': ['--import', 'tsx', 'src/main.ts'],
};
if (!fs.existsSync('dist/main.js')) {
  console.error('no dist/main.js: run npm run build first');
  process.exit(1);
}

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// CPU seconds the process used (user + system): unlike the wall time, barely moved by other load.
const TICKS = 100; // USER_HZ on Linux
function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}

async function startOnce(args, dataDir) {
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    DATABASE_URL: values['database-url'] ?? '',
  };
  const started = performance.now();
  const child = spawn(process.execPath, args, { env, stdio: 'ignore' });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = performance.now() - started;
  const rss = rssMb(child.pid);
  const cpu = cpuSeconds(child.pid);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { ms, rss, cpu };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
for (const [name, args] of Object.entries(ways)) {
  const first = [];
  const again = [];
  for (let i = 0; i < runs; i++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-measure-'));
    try {
      first.push(await startOnce(args, dir));
      again.push(await startOnce(args, dir));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  rows.push({ name, first, again });
}
const engine = values['database-url'] ? 'PostgreSQL (already migrated after the first run: both columns are restarts)' : 'embedded PGlite';
console.log(`node ${process.version}, ${engine}, median of ${runs} runs\n`);
console.log('| start | first start (migrates): to /health, CPU, RSS | restart: to /health, CPU, RSS |');
console.log('|---|---|---|');
for (const { name, first, again } of rows) {
  const f = (xs, k) => median(xs.map((x) => x[k]));
  console.log(
    `| \`${name}\` | ${(f(first, 'ms') / 1000).toFixed(2)} s, ${f(first, 'cpu').toFixed(2)} s, ${f(first, 'rss').toFixed(0)} MB ` +
      `| ${(f(again, 'ms') / 1000).toFixed(2)} s, ${f(again, 'cpu').toFixed(2)} s, ${f(again, 'rss').toFixed(0)} MB |`,
  );
}
