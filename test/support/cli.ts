import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE } from '../harness.ts';
import { freePort } from '../fault-harness.ts';

/**
 * The operator CLI run as an operator runs it, on its own data directory (or the run's PostgreSQL):
 * `run(...args)` spawns `bin/recaudo.mjs`; `remove()` deletes the directory.
 */
export function operatorCli(tag: string): {
  run: (...args: string[]) => { code: number | null; stdout: string; stderr: string };
  remove: () => void;
} {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `recaudo-${tag}-cli-`));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    DATABASE_URL: ENGINE === 'postgres' ? process.env.TEST_DATABASE_URL : '',
    LOG_LEVEL: 'warn',
  };
  return {
    run: (...args) => {
      const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], { env, encoding: 'utf8', timeout: 120_000 });
      return { code: res.status, stdout: res.stdout, stderr: res.stderr };
    },
    remove: () => fs.rmSync(dataDir, { recursive: true, force: true }),
  };
}

export interface CliOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A server started with the real start command on its own data directory (or the run's
 * PostgreSQL) and a free port, and the CLI pointed at the same place: for the tests of the commands
 * that talk to a running server. `start()` waits for /health; `stop()` ends it and removes the
 * directory.
 */
export async function cliWithServer(
  tag: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{
  base: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  cli: (...args: string[]) => CliOutput;
  /** Without blocking this process (a receiver or fake it runs must answer meanwhile). */
  cliAsync: (...args: string[]) => { child: ChildProcess; done: Promise<CliOutput> };
  /** The start command (the sources through tsx unless `entry` says, e.g. ['dist/main.js']); waits for /health. */
  start: (opts?: { stderr?: 'inherit' | 'ignore'; entry?: string[] }) => Promise<ChildProcess>;
  stop: (server: ChildProcess | undefined, signal?: NodeJS.Signals) => Promise<void>;
}> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `recaudo-${tag}-cli-`));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: ENGINE === 'postgres' ? process.env.TEST_DATABASE_URL : '',
    LOG_LEVEL: 'warn',
    RECAUDO_API_URL: base,
    ALLOW_PRIVATE_WEBHOOKS: 'true', // receivers on 127.0.0.1: the local-development opt-in
    ...extraEnv,
  };
  return {
    base,
    dataDir,
    env,
    cli: (...args) => {
      const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], { env, encoding: 'utf8', timeout: 120_000 });
      return { code: res.status, stdout: res.stdout, stderr: res.stderr };
    },
    cliAsync: (...args) => {
      const child = spawn(process.execPath, ['bin/recaudo.mjs', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (c) => (stdout += c));
      child.stderr!.on('data', (c) => (stderr += c));
      return { child, done: once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr })) };
    },
    start: async ({ stderr = 'ignore', entry = ['--import', 'tsx', 'src/main.ts'] } = {}) => {
      const child = spawn(process.execPath, entry, { env, stdio: ['ignore', 'ignore', stderr === 'inherit' ? 'inherit' : 'pipe'] });
      let output = '';
      child.stderr?.on('data', (c) => (output += c));
      const deadline = Date.now() + 120_000; // a fresh embedded data directory migrates first
      for (;;) {
        try {
          if ((await fetch(`${base}/health`)).ok) return child;
        } catch {
          /* starting */
        }
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${entry.join(' ')} did not start: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop: async (server, signal = 'SIGTERM') => {
      if (server && server.exitCode === null && server.signalCode === null) {
        server.kill(signal);
        await once(server, 'exit');
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
