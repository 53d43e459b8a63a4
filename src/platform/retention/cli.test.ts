import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { ENGINE } from '../../../test/harness.ts';
import { loadConfig } from '../../config.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import { startControlSocket } from '../../server.ts';
import { KeyResolver } from '../auth/api-keys.ts';
import { controlSocketPath } from '../db/data-dir-lock.ts';
import { prefixedId } from '../ids.ts';
import '../../modules/connectors/tables.ts';

/**
 * `recaudo retention run` on the embedded engine: straight on the data directory when no process
 * owns it, and through the control socket of the server that does. (On PostgreSQL the command runs
 * the same sweeps on the database directly; a whole-database sweep has no place in the shared test
 * database, and retention.test.ts covers the sweeps on both engines.)
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-retention-cli-'));
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn' };
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['bin/recaudo.mjs', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** Provider events refused 40 days ago (nobody's company: anyone may post them), and one from today. */
async function oldEvents(runtime: Runtime, n: number): Promise<void> {
  const now = Date.now();
  const row = (at: number) => ({
    id: prefixedId('cev', at),
    connector: 'wompi',
    company_id: null,
    environment: null,
    event: null,
    reference: null,
    provider_id: null,
    provider_status: null,
    verified: false,
    problem: 'bad checksum',
    received_at: new Date(at),
  });
  await runtime.deps.database.db
    .insertInto('connector_events')
    .values([...Array.from({ length: n }, (_, i) => row(now - 40 * 86_400_000 + i)), row(now)])
    .execute();
}

async function eventsLeft(runtime: Runtime): Promise<number> {
  return (await runtime.deps.database.db.selectFrom('connector_events').select('id').execute()).length;
}

test(
  'recaudo retention run: directly, then through the server that owns the data directory',
  { skip: ENGINE !== 'pglite' && 'the embedded engine only' },
  async () => {
    const logger = pino({ level: 'silent' });
    let runtime = await createRuntime(loadConfig(env), { role: 'cli', logger });
    await oldEvents(runtime, 3);
    await runtime.close();

    const direct = await cli(['retention', 'run']);
    assert.equal(direct.code, 0, direct.stderr);
    assert.match(direct.stderr, /^connectors\.events: 3 row\(s\) from connector_events in 1 batch\(es\)$/m);
    assert.match(direct.stderr, /^idempotency\.response_bodies: 0 row\(s\) from idempotency_keys/m);
    assert.match(direct.stdout, /^swept 3 row\(s\) in \d+ ms\n$/);

    const bad = await cli(['retention', 'run', '--budget', 'soon']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--budget must be a number of seconds/);

    // A server owns the directory: the command goes through its control socket and runs there.
    const socket = controlSocketPath(dataDir);
    runtime = await createRuntime(loadConfig(env), { role: 'server', socket, logger });
    const control = startControlSocket(runtime, socket, new KeyResolver(runtime.deps.database.db));
    try {
      await oldEvents(runtime, 2);
      assert.equal(await eventsLeft(runtime), 4);
      const through = await cli(['retention', 'run', '--budget', '5']);
      assert.equal(through.code, 0, through.stderr);
      assert.match(through.stderr, /^connectors\.events: 2 row\(s\) from connector_events/m);
      assert.match(through.stdout, /^swept 2 row\(s\)/);
      assert.equal(await eventsLeft(runtime), 2, "today's events stay");

      const json = await cli(['retention', 'run', '--json']);
      assert.equal(json.code, 0, json.stderr);
      const report = JSON.parse(json.stdout);
      assert.equal(report.rows, 0);
      assert.equal(report.complete, true);
      assert.ok(report.rules.some((r: { rule: string; table: string }) => r.rule === 'events' && r.table === 'events'));
    } finally {
      control.close();
      await runtime.close();
    }
  },
);
