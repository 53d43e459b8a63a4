#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ with tsc (tsconfig.build.json). The JSON data that src/
// imports is copied by tsc; the SQL migrations stay in migrations/, which src/platform/db/migrate.ts
// finds as ../../../migrations from either tree.
//
// dist/.build-stamp records when this build STARTED: bin/entry.mjs runs the sources instead of
// dist/ when a file in src/ changed after that (an edit or a pull without a rebuild).
//
// `--prepare` (the package's prepare script, run by `npm install` / `npm ci` in a checkout) never
// fails the install: without TypeScript (an install with --omit=dev) it leaves dist/ as it is,
// and a type error is reported but the emitted JavaScript is kept. `npm run build` and CI are strict.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const prepare = process.argv.includes('--prepare');

let tsc;
try {
  tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  if (prepare) {
    console.error('recaudo build: TypeScript is not installed (a production install); dist/ left as it is');
    process.exit(0);
  }
  console.error('recaudo build: TypeScript is not installed: run npm install first');
  process.exit(1);
}

const started = Date.now();
// A clean tree: a source file deleted since the last build must not survive in dist/.
fs.rmSync(dist, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
const emitted = fs.existsSync(path.join(dist, 'main.js')) && fs.existsSync(path.join(dist, 'cli', 'main.js'));
if (result.status !== 0 && !(prepare && emitted)) {
  console.error(`recaudo build: tsc failed (exit ${result.status ?? result.signal})`);
  process.exit(1);
}
if (result.status !== 0) console.error('recaudo build: tsc reported type errors; the emitted dist/ is kept (npm run build is strict)');
// The embedded engine's template (src/platform/db/embedded.ts): a new DATA_DIR starts as a copy
// of it instead of running initdb and every migration. Optional: without it a first start is slower.
const template = spawnSync(process.execPath, [path.join(dist, 'embedded-template.js'), path.join(dist, 'embedded-template')], {
  stdio: 'inherit',
  cwd: root,
});
if (template.status !== 0) {
  fs.rmSync(path.join(dist, 'embedded-template'), { recursive: true, force: true });
  console.error('recaudo build: the embedded template could not be built; a new data directory will be initialised at its first start');
  if (!prepare) process.exit(1);
}
fs.writeFileSync(path.join(dist, '.build-stamp'), `${started}\n`);
console.error(`recaudo build: dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
