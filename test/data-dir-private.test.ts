import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliWithServer } from './support/cli.ts';
import { lockPath } from '../src/platform/db/data-dir-lock.ts';

/**
 * Issue 29 item 2: the embedded engine's files are this user's alone, and the control socket cannot
 * be squatted. Both engines run this (DATABASE_URL is emptied): it is about the embedded data
 * directory only.
 */

/** Every file and directory under `dir` whose mode lets group or others in. */
function openToOthers(dir: string): { files: number; open: string[] } {
  let files = 0;
  const open: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const mode = fs.lstatSync(p).mode & 0o777;
      if (e.isDirectory()) {
        if (mode !== 0o700) open.push(`${p} ${mode.toString(8)}`);
        walk(p);
      } else if (e.isFile()) {
        files++;
        if (mode & 0o077) open.push(`${p} ${mode.toString(8)}`);
      }
    }
  };
  walk(dir);
  return { files, open };
}

/** The start command run under umask 000, the most permissive an operator's shell could have. */
async function startUnderUmask000(s: Awaited<ReturnType<typeof cliWithServer>>) {
  const old = process.umask(0);
  try {
    return await s.start();
  } finally {
    process.umask(old);
  }
}

describe('embedded data directory: private files, a control socket nobody else can take', () => {
  test('after start and writes (under umask 000): the directory tree 0700, no file open to group or others; the socket inside it, 0600', async () => {
    const s = await cliWithServer('private', { DATABASE_URL: '' });
    let server;
    try {
      server = await startUnderUmask000(s);
      const created = s.cli('companies', 'create', '--name', 'Archivos Privados SAS', '--json');
      assert.equal(created.code, 0, created.stderr);
      const company = JSON.parse(created.stdout);
      const key = company.keys.test;
      const res = await fetch(`${s.base}/v1/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'private-files-1' },
        body: JSON.stringify({ first_name: 'Ana', last_name: 'Díaz', email: 'ana@example.co' }),
      });
      assert.equal(res.status, 200, await res.clone().text());

      assert.equal(fs.statSync(s.dataDir).mode & 0o777, 0o700, 'the data directory');
      const { files, open } = openToOthers(s.dataDir);
      assert.ok(files > 500, `the database's files are there (${files})`);
      assert.deepEqual(open, [], 'nothing readable or writable by group or others');

      const lock = JSON.parse(fs.readFileSync(lockPath(s.dataDir), 'utf8'));
      assert.equal(path.dirname(lock.socket), fs.realpathSync(s.dataDir), 'the socket is inside the private data directory');
      assert.equal(fs.statSync(lock.socket).mode & 0o777, 0o600);
    } finally {
      await s.stop(server);
    }
  });

  test('a squatter on the old predictable socket path, or a stale socket left by a crash, does not stop the start; the CLI reaches the server', async () => {
    const s = await cliWithServer('squat', { DATABASE_URL: '' });
    // Where the socket used to be: the temp directory, named after the data directory's path.
    const hash = createHash('sha256').update(path.resolve(s.dataDir)).digest('hex').slice(0, 16);
    const squatted = path.join(os.tmpdir(), `recaudo-${hash}.sock`);
    // Another local user's entry there cannot be removed (the temp directory is sticky); a directory
    // stands in for it, since this test's user could remove a file of its own.
    fs.rmSync(squatted, { recursive: true, force: true });
    fs.mkdirSync(squatted);
    // A regular file where the socket goes (as a SIGKILLed server or anyone with access could leave).
    fs.writeFileSync(path.join(s.dataDir, 'control.sock'), 'stale');
    let server;
    try {
      server = await s.start();
      const created = s.cli('companies', 'create', '--name', 'Sin Okupas SAS', '--json');
      assert.equal(created.code, 0, created.stderr);
      assert.equal(JSON.parse(created.stdout).company.name, 'Sin Okupas SAS');
      assert.equal((await fetch(`${s.base}/health`)).status, 200);
    } finally {
      await s.stop(server);
      fs.rmSync(squatted, { recursive: true, force: true });
    }
  });

  test('a data directory too deep for a socket address: the socket goes to a fresh 0700 directory, removed at shutdown', async () => {
    const s = await cliWithServer('deep', { DATABASE_URL: '' });
    const deep = path.join(s.dataDir, 'a'.repeat(60), 'b'.repeat(60));
    s.env.DATA_DIR = deep;
    let server;
    try {
      server = await s.start();
      const lock = JSON.parse(fs.readFileSync(lockPath(deep), 'utf8'));
      const dir = path.dirname(lock.socket);
      assert.ok(Buffer.byteLength(lock.socket) < 104, lock.socket);
      assert.notEqual(dir, deep);
      assert.equal(fs.statSync(dir).mode & 0o777, 0o700, 'only this user can enter it');
      const created = s.cli('companies', 'create', '--name', 'Ruta Larga SAS', '--json');
      assert.equal(created.code, 0, created.stderr);
      server.kill('SIGTERM');
      await new Promise((resolve) => server!.once('exit', resolve));
      assert.equal(fs.existsSync(dir), false, 'removed at shutdown');
    } finally {
      await s.stop(server);
    }
  });
});
