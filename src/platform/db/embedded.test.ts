import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildTemplate, openPglite, seedFromTemplate, TEMPLATE_STAMP } from './embedded.ts';

// The embedded engine's first start from a template (src/platform/db/embedded.ts). The template
// here holds one table instead of every migration, so the test needs a single initdb.
describe('embedded engine template', () => {
  let root: string;
  let template: string;
  const parseInt8 = (v: string) => BigInt(v);

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-embedded-'));
    template = path.join(root, 'template');
    await buildTemplate(template, async (pglite) => {
      await pglite.exec(`CREATE TABLE marker (v text); INSERT INTO marker VALUES ('from the template')`);
      return ['0001_marker'];
    });
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  test('a new data directory (holding only the lock and key files) starts as a copy, with a small buffer pool', async () => {
    const dataDir = path.join(root, 'new');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'secrets.key'), 'kept');
    const pglite = await openPglite(dataDir, { templateDir: template, parseInt8, sharedBuffers: '24MB' });
    try {
      assert.deepEqual((await pglite.query('SELECT v FROM marker')).rows, [{ v: 'from the template' }]);
      assert.deepEqual((await pglite.query(`SELECT current_setting('shared_buffers') AS s`)).rows, [{ s: '24MB' }]);
      await pglite.exec(`INSERT INTO marker VALUES ('written after')`);
    } finally {
      await pglite.close();
    }
    assert.equal(fs.readFileSync(path.join(dataDir, 'secrets.key'), 'utf8'), 'kept');
    assert.equal(fs.existsSync(path.join(dataDir, TEMPLATE_STAMP)), false);
    // A data directory that holds a database is never overwritten.
    assert.equal(seedFromTemplate(dataDir, template), false);
    const again = await openPglite(dataDir, { templateDir: template, parseInt8 });
    try {
      assert.equal((await again.query('SELECT v FROM marker')).rows.length, 2);
    } finally {
      await again.close();
    }
  });

  test('a template made by another PGlite version, or none at all, is not used', () => {
    const other = path.join(root, 'other-version');
    fs.cpSync(template, other, { recursive: true });
    fs.writeFileSync(path.join(other, TEMPLATE_STAMP), JSON.stringify({ pglite: '0.0.1', migrations: [] }));
    assert.equal(seedFromTemplate(path.join(root, 'a'), other), false);
    assert.equal(fs.existsSync(path.join(root, 'a', 'PG_VERSION')), false);
    assert.equal(seedFromTemplate(path.join(root, 'b'), path.join(root, 'missing')), false);
  });

  test('a copy killed before PG_VERSION is copied again at the next start', () => {
    const dataDir = path.join(root, 'half');
    assert.equal(seedFromTemplate(dataDir, template), true);
    fs.rmSync(path.join(dataDir, 'PG_VERSION'));
    fs.rmSync(path.join(dataDir, 'global'), { recursive: true });
    assert.equal(seedFromTemplate(dataDir, template), true);
    assert.ok(fs.existsSync(path.join(dataDir, 'global')));
    assert.ok(fs.existsSync(path.join(dataDir, 'PG_VERSION')));
  });
});
