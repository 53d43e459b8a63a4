import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE } from './harness.ts';
import { cliWithServer } from './support/cli.ts';
import { ensureBuilt } from './support/build.ts';
import { buildIsCurrent } from '../bin/entry.mjs';

/**
 * The compiled service (docs/deploy.md): what `npm run build` leaves in dist/, `node dist/main.js`
 * and the CLI from dist/ on this pass's engine, and which tree the launchers pick.
 */

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(file, out);
    else out.push(file);
  }
  return out;
}

describe('npm run build', () => {
  before(ensureBuilt);

  test('dist/ holds every module of src/ as JavaScript with .js specifiers, and the JSON data beside it', () => {
    const sources = filesUnder('src').filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    for (const source of sources) {
      const built = source.replace(/^src/, 'dist').replace(/\.ts$/, '.js');
      assert.ok(fs.existsSync(built), `${built} exists`);
    }
    for (const json of filesUnder('src').filter((f) => f.endsWith('.json'))) {
      if (!sources.some((s) => fs.readFileSync(s, 'utf8').includes(path.basename(json)))) continue; // not imported
      assert.ok(fs.existsSync(json.replace(/^src/, 'dist')), `${json} is copied`);
    }
    const built = filesUnder('dist').filter((f) => f.endsWith('.js'));
    assert.ok(!built.some((f) => f.endsWith('.test.js')), 'no tests in the build');
    for (const file of built) {
      // Relative specifiers were rewritten from .ts; a leftover would fail only at run time.
      assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /(?:from|import\()\s*["']\.{1,2}\/[^"']*\.ts["']/, file);
    }
  });

  test('launchers run dist/ while it is current and the sources once one changes', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-entry-'));
    try {
      fs.mkdirSync(path.join(root, 'src'));
      fs.mkdirSync(path.join(root, 'dist'));
      fs.writeFileSync(path.join(root, 'src', 'main.ts'), '');
      fs.writeFileSync(path.join(root, 'dist', 'main.js'), '');
      const past = new Date(Date.now() - 60_000);
      fs.utimesSync(path.join(root, 'src', 'main.ts'), past, past);
      fs.utimesSync(path.join(root, 'src'), past, past);
      assert.equal(buildIsCurrent(root), false, 'no stamp: never built by scripts/build.mjs');
      fs.writeFileSync(path.join(root, 'dist', '.build-stamp'), String(Date.now() - 30_000));
      assert.equal(buildIsCurrent(root), true);
      fs.writeFileSync(path.join(root, 'src', 'main.test.ts'), '');
      fs.utimesSync(path.join(root, 'src'), past, past);
      assert.equal(buildIsCurrent(root), true, 'a test file is not in the build');
      fs.utimesSync(path.join(root, 'src', 'main.ts'), new Date(), new Date());
      assert.equal(buildIsCurrent(root), false, 'an edit after the build');
      fs.utimesSync(path.join(root, 'src', 'main.ts'), past, past);
      fs.writeFileSync(path.join(root, 'src', 'new.ts'), '');
      fs.utimesSync(path.join(root, 'src', 'new.ts'), past, past);
      assert.equal(buildIsCurrent(root), false, 'a file added after the build (its folder changed)');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

const dist = await cliWithServer('dist', { RATE_LIMIT_TEST: '100000' });

describe(`node dist/main.js and the CLI from dist/ (${ENGINE})`, () => {
  const { base, env } = dist;
  let server: ChildProcess;

  before(async () => {
    await ensureBuilt();
    // No loader: dist/ must run on plain Node.
    server = await dist.start({ entry: ['dist/main.js'] });
  });

  after(() => dist.stop(server, 'SIGKILL'));

  test('serves the API to a key the compiled CLI made, and stops cleanly on SIGTERM', async () => {
    const created = spawnSync(process.execPath, ['dist/cli/main.js', 'companies', 'create', '--name', 'Compilada SAS', '--json'], {
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(created.status, 0, created.stderr);
    const key = JSON.parse(created.stdout).keys.test as string;

    const res = await fetch(`${base}/v1/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-idempotency': `dist-${Date.now()}` },
      body: JSON.stringify({ first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com', address: { city_code: '11001' } }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).last_name, 'Gómez');
    // The JSON catalogues load from dist/data: a DIVIPOLA city the validator does not know is refused.
    const bad = await fetch(`${base}/v1/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-idempotency': `dist-bad-${Date.now()}` },
      body: JSON.stringify({ first_name: 'Ana', email: 'ana@example.com', address: { city_code: '99999' } }),
    });
    assert.equal(bad.status, 422);
    assert.equal((await fetch(`${base}/v1/openapi.json`)).status, 200);

    server.kill('SIGTERM');
    const [code] = await once(server, 'exit');
    assert.equal(code, 0);
  });
});
