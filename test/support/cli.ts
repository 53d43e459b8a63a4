import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE } from '../harness.ts';

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
