import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { makePrivateDir } from './private-dir.ts';

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

/**
 * Where a server's control socket goes: inside its data directory (0700: no other user can reach
 * it, nor put anything in its place) when the path fits a Unix socket address (108 bytes on Linux,
 * 104 on macOS); otherwise in a fresh directory of the system's temp directory that only this user
 * can enter (mkdtemp, 0700, an unpredictable name). The lock file records it: the CLI reads it from
 * there and never guesses.
 */
export function controlSocketPath(dataDir: string): string {
  const inside = path.join(path.resolve(dataDir), 'control.sock');
  if (Buffer.byteLength(inside) <= 100) return inside;
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-')), 'control.sock');
}

/**
 * Removes this server's socket and, for one made in the temp directory, its private directory. A
 * start that found the data directory busy removes only the temp directory it made: the socket in
 * the data directory is the running server's.
 */
export function removeControlSocket(socket: string, dataDir: string, opts: { ours: boolean } = { ours: true }): void {
  const dir = path.dirname(socket);
  if (dir !== path.resolve(dataDir)) fs.rmSync(dir, { recursive: true, force: true });
  else if (opts.ours) fs.rmSync(socket, { force: true });
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
  makePrivateDir(dataDir);
  const file = lockPath(dataDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(info), { flag: 'wx', mode: 0o600 });
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
