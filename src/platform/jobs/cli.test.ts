import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { ENGINE, eventually } from '../../../test/harness.ts';
import { loadConfig } from '../../config.ts';
import { createRuntime } from '../../runtime.ts';
import { jobsDb } from './tables.ts';

/**
 * `recaudo jobs list|retry` on the embedded engine: directly when no process owns the data
 * directory, and through the control socket of a running `recaudo worker` (which also shows a
 * worker-only process staying up). On PostgreSQL the CLI goes straight to the database
 * (worker-faults.test.ts).
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-jobs-cli-'));
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' };
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['bin/recaudo.mjs', ...args], { env: { ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

test(
  'recaudo jobs list --dead / retry: directly, then through a running worker',
  { skip: ENGINE !== 'pglite' && 'the embedded engine only' },
  async () => {
    // A dead reconcile job (the charge does not exist: once retried it finishes at once).
    const runtime = await createRuntime(loadConfig(env), { role: 'cli', logger: pino({ level: 'silent' }) });
    const { db } = runtime.deps.database;
    const id = await runtime.deps.jobs.enqueue(db, 'charges.reconcile', { company_id: 'cmp_none', environment: 'test', charge_id: 'ch_none' });
    const waiting = await runtime.deps.jobs.enqueue(
      db,
      'charges.reconcile',
      { company_id: 'cmp_none', environment: 'test', charge_id: 'ch_later' },
      new Date(Date.now() + 86_400_000),
    );
    await jobsDb(db)
      .updateTable('jobs')
      .set({ dead_at: new Date(), locked_until: new Date('9999-01-01T00:00:00Z'), attempts: 10, last_error: 'rail unavailable' })
      .where('id', '=', id)
      .execute();
    await runtime.close();

    const direct = await run(['jobs', 'list', '--dead', '--json']);
    assert.equal(direct.code, 0, direct.stderr);
    const listed = JSON.parse(direct.stdout).jobs;
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, id);
    assert.equal(listed[0].kind, 'charges.reconcile');
    assert.equal(listed[0].state, 'dead');
    assert.equal(listed[0].attempts, 10);
    assert.equal(listed[0].last_error, 'rail unavailable');
    const human = await run(['jobs', 'list']);
    assert.match(human.stdout, new RegExp(`${id}  charges\\.reconcile  dead  attempts 10/10`));
    assert.match(human.stdout, new RegExp(`${waiting}  charges\\.reconcile  scheduled`));

    const worker = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'worker'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    worker.stdout!.on('data', (c) => (out += c));
    try {
      await eventually(async () => out.includes('"recaudo started"'), 90_000);
      const notDead = await run(['jobs', 'retry', waiting, '--json']);
      assert.equal(notDead.code, 2, notDead.stderr);
      assert.match(notDead.stderr, /is not dead \(scheduled\)/);
      const retried = await run(['jobs', 'retry', id, '--json']);
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(JSON.parse(retried.stdout).job.id, id);
      await eventually(async () => {
        const now = await run(['jobs', 'list', '--json']);
        const ids = JSON.parse(now.stdout).jobs.map((j: { id: string }) => j.id);
        return !ids.includes(id) && ids.includes(waiting);
      }, 30_000);
      assert.equal(worker.exitCode, null, 'the worker process is still up');
      worker.kill('SIGTERM');
      const [code] = (await once(worker, 'exit')) as [number | null];
      assert.equal(code, 0);
    } finally {
      if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    }
  },
);
