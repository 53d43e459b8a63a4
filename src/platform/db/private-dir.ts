import fs from 'node:fs';
import path from 'node:path';

/** Creates the directory (and its parents) if missing; the directory itself is left 0700. */
export function makePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mode = fs.statSync(dir).mode & 0o7777;
  // A shared directory such as /tmp is never narrowed: the data needs a directory of its own.
  if (mode & 0o1000) throw new Error(`${dir} is a shared directory (sticky bit): point DATA_DIR at a directory of its own`);
  if (mode & 0o077) fs.chmodSync(dir, mode & 0o700);
}

/**
 * The data directory holds keys' hashes, sealed secrets and the ledger: only this user may read or
 * write it. The directory and every directory in it become 0700 and every file loses its group and
 * other bits (PostgreSQL insists on the same for its own data directory). PGlite's initdb, and a
 * template copied with `cp`, leave files 0666; the files PGlite creates while running are 0600
 * already, and they sit inside 0700 directories anyway. Runs at every open: cheap (about 1,500
 * files), and it also mends a directory left by an earlier release.
 */
export function makePrivate(dir: string): void {
  makePrivateDir(dir);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) makePrivate(file);
    else if (entry.isFile()) {
      const mode = fs.statSync(file).mode & 0o777;
      if (mode & 0o077) fs.chmodSync(file, mode & 0o700);
    }
  }
}
