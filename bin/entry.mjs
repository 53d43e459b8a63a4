// Which tree a launcher runs: the compiled build (dist/) or the TypeScript sources (src/, through
// tsx). dist/ when it is current; the sources when a file in src/ changed after the build started
// (scripts/build.mjs's stamp), so an edit or a pull is never run stale; dist/ anyway where tsx is
// not installed (a production install, which has no src/ either).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function buildStamp(dir) {
  try {
    return Number(fs.readFileSync(path.join(dir, 'dist', '.build-stamp'), 'utf8'));
  } catch {
    return null;
  }
}

/** True when a file under dir (tests aside) was modified, or a file added or removed, after `since`. */
function changedSince(dir, since) {
  if (fs.statSync(dir).mtimeMs > since) return true;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (changedSince(file, since)) return true;
    } else if (!entry.name.endsWith('.test.ts') && fs.statSync(file).mtimeMs > since) return true;
  }
  return false;
}

/** Whether dist/ (under `dir`, the project by default) was built after the last change in src/. */
export function buildIsCurrent(dir = root) {
  const stamp = buildStamp(dir);
  return stamp !== null && fs.existsSync(path.join(dir, 'dist', 'main.js')) && !changedSince(path.join(dir, 'src'), stamp);
}

/**
 * Imports `name` (e.g. 'main', 'cli/main') from dist/ or src/.
 * `announce` says on stderr when the sources are run instead of the build.
 */
export async function runEntry(name, { announce = false } = {}) {
  const built = path.join(root, 'dist', `${name}.js`);
  const source = path.join(root, 'src', `${name}.ts`);
  const hasBuild = fs.existsSync(built);
  if (!fs.existsSync(source) || (hasBuild && buildIsCurrent())) return import(pathToFileURL(built).href);

  let tsx = null;
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    // no dev dependencies: only dist/ can run
  }
  if (tsx) {
    if (announce) {
      const why = hasBuild ? 'src/ changed since the last build' : 'no build in dist/';
      process.stderr.write(`recaudo: ${why}; running the TypeScript sources through tsx (npm run build compiles dist/)\n`);
    }
    tsx.register();
    return import(pathToFileURL(source).href);
  }
  if (hasBuild) {
    if (announce) process.stderr.write('recaudo: src/ changed since the last build, and tsx is not installed: running dist/ as built\n');
    return import(pathToFileURL(built).href);
  }
  throw new Error('recaudo: no build in dist/ and tsx is not installed: run `npm install` (builds dist/) or `npm run build`');
}
