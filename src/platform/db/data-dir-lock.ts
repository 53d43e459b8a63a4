import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { createHash } from 'node:crypto';

/**
 * An embedded data directory belongs to one process (PGlite cannot share it). The owner writes a
 * lock file with its pid and, for a server, the control socket the CLI talks to instead.
 */
export interface LockInfo {
  pid: number;
  role: 'server' | 'cli';
  socket?: string;
}

export function lockPath(dataDir: string): string {
  return path.join(dataDir, 'recaudo.lock');
}

export function controlSocketPath(dataDir: string): string {
  const hash = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `recaudo-${hash}.sock`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readLock(dataDir: string): LockInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(lockPath(dataDir), 'utf8')) as LockInfo;
    return info.pid !== process.pid && alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/** Takes the lock or returns the live holder. A lock left by a dead process is replaced. */
export function acquireLock(dataDir: string, info: LockInfo): { ok: true; release: () => void } | { ok: false; holder: LockInfo } {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = lockPath(dataDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(info), { flag: 'wx' });
      return {
        ok: true,
        release: () => {
          try {
            const current = JSON.parse(fs.readFileSync(file, 'utf8')) as LockInfo;
            if (current.pid === info.pid) fs.unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = readLock(dataDir);
      if (holder) return { ok: false, holder };
      try {
        fs.unlinkSync(file); // stale
      } catch {
        /* raced with another cleaner */
      }
    }
  }
  throw new Error(`could not take the lock ${file}`);
}
