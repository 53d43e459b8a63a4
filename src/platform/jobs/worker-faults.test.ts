import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { ENGINE, eventually } from '../../../test/harness.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { systemClock } from '../clock.ts';
import { JobQueue } from './queue.ts';
import { jobsDb } from './tables.ts';

/**
 * The worker under lost connections (PostgreSQL): every session of the database terminated with
 * pg_terminate_backend, as a failover or a network reset would. Each test works in a database of
 * its own, created beside the test database, so terminating its sessions touches nobody else.
 */

const skip = ENGINE !== 'postgres' && 'needs PostgreSQL (sessions are terminated)';
const ADMIN_URL = process.env.TEST_DATABASE_URL ?? '';

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh, migrated database of this test; returns its URL. */
async function ownDatabase(tag: string): Promise<{ name: string; url: string }> {
  const name = `recaudo_jobs_${tag}_${process.pid}`;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), poolSize: 2 });
  await migrate(database);
  await database.close();
  return { name, url: url.toString() };
}

async function dropDatabase(name: string): Promise<void> {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
}

/** Terminates every session of that database (and only of it). */
async function terminateAll(name: string): Promise<number> {
  return admin(async (c) => {
    const r = await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    return r.rowCount ?? 0;
  });
}

async function listenSessions(name: string, applicationName: string): Promise<number> {
  return admin(async (c) => {
    const r = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [name, applicationName]);
    return r.rows[0].n as number;
  });
}

function captureLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

/** A worker process (`recaudo worker`) whose JSON log lines are collected. */
function startWorker(url: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'worker'], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, any>[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk) => {
    buffer += chunk;
    let i;
    while ((i = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      try {
        lines.push(JSON.parse(line));
      } catch {
        lines.push({ msg: line });
      }
    }
  });
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  return { child, lines, exited };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit').catch(() => {});
}

/** A job of a real kind that finishes at once: reconciling a charge that does not exist. */
const NOOP_RECONCILE = { company_id: 'cmp_none', environment: 'test', charge_id: 'ch_none' };

describe('worker under lost connections', { skip }, () => {
  let own: { name: string; url: string };
  before(async () => {
    own = await ownDatabase('faults');
  });
  after(async () => {
    await dropDatabase(own.name);
  });

  test('the LISTEN session reconnects after pg_terminate_backend and NOTIFY wakes the queue again', async () => {
    const { logger, lines } = captureLogger();
    const database = await openDatabase({ databaseUrl: own.url, poolSize: 2, applicationName: 'jobs-inproc' });
    const producer = await openDatabase({ databaseUrl: own.url, poolSize: 1, applicationName: 'jobs-producer' });
    // Polls once a minute: within this test only a notification can wake it.
    const queue = new JobQueue(database, systemClock, logger, { pollMs: 60_000 });
    const ran: string[] = [];
    queue.register('test.wake', async (_p, job) => void ran.push(job.id));
    try {
      queue.start({ keepAlive: true });
      await eventually(async () => (await listenSessions(own.name, 'jobs-inproc-listen')) === 1, 10_000);
      const first = await queue.enqueue(producer.db, 'test.wake', {});
      await eventually(async () => ran.includes(first), 5_000);

      assert.ok((await terminateAll(own.name)) >= 2, 'the pool and the LISTEN sessions were terminated');
      await eventually(async () => lines.some((l) => l.msg === 'LISTEN connection lost; reconnecting'), 5_000);
      await eventually(async () => lines.some((l) => l.msg === 'LISTEN reconnected'), 10_000);
      assert.equal(await listenSessions(own.name, 'jobs-inproc-listen'), 1);

      const second = await queue.enqueue(producer.db, 'test.wake', {});
      await eventually(async () => ran.includes(second), 5_000);
      assert.deepEqual(ran, [first, second]);
    } finally {
      await queue.stop();
      await database.close();
      await producer.close();
    }
  });

  test('a worker process survives its sessions being terminated, keeps working, and stops with 0', async () => {
    const w = startWorker(own.url, { JOBS_POLL_MS: '60000' });
    const producer: Database = await openDatabase({ databaseUrl: own.url, poolSize: 1, applicationName: 'jobs-producer' });
    const queue = new JobQueue(producer, systemClock, pino({ level: 'silent' }));
    const gone = async (id: string) => !(await jobsDb(producer.db).selectFrom('jobs').select('id').where('id', '=', id).executeTakeFirst());
    try {
      await eventually(async () => w.lines.some((l) => l.msg === 'recaudo started'), 60_000);
      await eventually(async () => (await listenSessions(own.name, 'recaudo-listen')) === 1, 10_000);

      for (let round = 0; round < 2; round++) {
        assert.ok((await terminateAll(own.name)) >= 1);
        await eventually(async () => w.lines.filter((l) => l.msg === 'LISTEN reconnected').length > round, 15_000);
        assert.equal(w.child.exitCode, null, 'the worker is still running');
        // Enqueued after the reconnect, due now: the notification wakes the worker (it polls once a minute).
        const id = await queue.enqueue(producer.db, 'charges.reconcile', NOOP_RECONCILE);
        await eventually(() => gone(id), 10_000);
      }

      // A dead job, retried by the operator CLI: the retry notifies the running worker.
      const dead = await queue.enqueue(producer.db, 'charges.reconcile', NOOP_RECONCILE, new Date(Date.now() + 3_600_000));
      await jobsDb(producer.db)
        .updateTable('jobs')
        .set({ dead_at: new Date(), locked_until: new Date('9999-01-01T00:00:00Z'), attempts: 10, last_error: 'gave up' })
        .where('id', '=', dead)
        .execute();
      const cliEnv = { ...process.env, DATABASE_URL: own.url, LOG_LEVEL: 'warn' };
      const list = await runCli(cliEnv, 'jobs', 'list', '--dead', '--json');
      assert.equal(list.code, 0, list.stderr);
      const listed = JSON.parse(list.stdout).jobs;
      assert.deepEqual(
        listed.map((j: any) => [j.id, j.state, j.last_error]),
        [[dead, 'dead', 'gave up']],
      );
      const retry = await runCli(cliEnv, 'jobs', 'retry', dead, '--json');
      assert.equal(retry.code, 0, retry.stderr);
      assert.equal(JSON.parse(retry.stdout).job.state, 'due');
      await eventually(() => gone(dead), 10_000);

      w.child.kill('SIGTERM');
      const [code] = await w.exited;
      assert.equal(code, 0);
      assert.ok(w.lines.some((l) => l.msg === 'stopped'));
    } finally {
      await stopChild(w.child);
      await producer.close();
    }
  });
});

describe('worker that cannot go on', { skip }, () => {
  test('a worker whose database stays unreachable longer than WORKER_MAX_OUTAGE_MS logs fatal and exits 1', async () => {
    const own = await ownDatabase('fatal');
    const w = startWorker(own.url, { WORKER_MAX_OUTAGE_MS: '1500', SHUTDOWN_TIMEOUT_MS: '5000' });
    try {
      await eventually(async () => w.lines.some((l) => l.msg === 'recaudo started'), 60_000);
      await admin((c) => c.query(`ALTER DATABASE ${own.name} ALLOW_CONNECTIONS false`));
      await terminateAll(own.name);
      const [code] = await Promise.race([
        w.exited,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the worker did not exit')), 30_000)),
      ]);
      assert.equal(code, 1);
      const fatal = w.lines.find((l) => l.level === 60);
      assert.ok(fatal, 'a fatal line was logged');
      assert.match(fatal.msg, /cannot reach the database/);
      assert.ok(fatal.down_ms >= 1500);
      assert.ok(
        w.lines.some((l) => l.msg === 'worker poll failed; retrying'),
        'the failed polls were logged before',
      );
    } finally {
      await stopChild(w.child);
      await dropDatabase(own.name);
    }
  });
});

async function runCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['bin/recaudo.mjs', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}
