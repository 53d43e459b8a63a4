import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIsCurrent } from '../../bin/entry.mjs';

/** Helpers for tests of the compiled service (not a test file itself). */

const ROOT = path.resolve(import.meta.dirname, '../..');
const LOCK = path.join(os.tmpdir(), `recaudo-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes sure dist/ holds a build of the current sources: CI builds before the tests, so this only
 * builds on a developer's checkout with edits since the last build. Test files that do it at the
 * same time take turns (a lock file), so none runs a dist/ another is rewriting.
 */
export async function ensureBuilt(): Promise<void> {
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch {
      const holder = Number(fs.readFileSync(LOCK, 'utf8') || '0');
      if (holder && !alive(holder)) fs.rmSync(LOCK, { force: true });
      else if (Date.now() > deadline) throw new Error(`another build holds ${LOCK} for too long`);
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    if (buildIsCurrent(ROOT)) return;
    const res = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
    if (res.status !== 0) throw new Error(`npm run build failed:\n${res.stdout}${res.stderr}`);
  } finally {
    fs.rmSync(LOCK, { force: true });
  }
}
