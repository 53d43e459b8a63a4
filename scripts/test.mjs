#!/usr/bin/env node
// `npm test`: the whole suite on the embedded engine (PGlite), then again on PostgreSQL when
// DATABASE_URL is set (in a fresh database created next to the one it names).
// Extra arguments are test files or folders to run instead of all.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const roots = process.argv.slice(2).length ? process.argv.slice(2) : ['src', 'test', 'packages'];
function collect(p, out) {
  const stat = fs.statSync(p);
  if (stat.isFile()) {
    if (p.endsWith('.test.ts')) out.push(p);
    return out;
  }
  for (const entry of fs.readdirSync(p)) if (entry !== 'node_modules') collect(path.join(p, entry), out);
  return out;
}
const files = roots.flatMap((r) => collect(r, [])).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

function run(label, env) {
  console.log(`\n=== tests on ${label} (${files.length} files) ===`);
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', '--test-reporter=spec', ...files],
    { stdio: 'inherit', env: { ...process.env, ...env } },
  );
  console.log(`=== ${label}: ${result.status === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(1)} s ===`);
  return result.status === 0;
}

const template = spawnSync(process.execPath, ['--import', 'tsx', 'test/template.ts'], { stdio: 'inherit' });
if (template.status !== 0) process.exit(1);

let ok = run('embedded PGlite', { TEST_DATABASE_URL: '' });

if (process.env.DATABASE_URL) {
  const url = new URL(process.env.DATABASE_URL);
  const testDb = `recaudo_test_${process.pid}`;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${testDb}`);
  await admin.query(`CREATE DATABASE ${testDb}`);
  await admin.end();
  url.pathname = `/${testDb}`;
  try {
    ok = run('PostgreSQL', { TEST_DATABASE_URL: url.toString() }) && ok;
  } finally {
    const cleanup = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${testDb} WITH (FORCE)`).catch(() => {});
    await cleanup.end();
  }
} else {
  console.log('\nDATABASE_URL is not set: PostgreSQL run skipped.');
}
process.exit(ok ? 0 : 1);
