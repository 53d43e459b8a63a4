import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The layout's rules (docs/architecture.md), checked on every run from the import statements of
 * the source files: no import cycle between files (type-only imports included: a cycle of types
 * is still two files that cannot be understood apart), no `src/` file importing `test/`, the pure
 * document code free of the database, the modules and the rails, and the platform free of modules.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(full, out);
    else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

/** file (relative to the repository) → the files it imports (relative too). */
export function importGraph(dirs: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const dir of dirs) {
    for (const file of sourceFiles(path.join(ROOT, dir))) {
      const text = fs.readFileSync(file, 'utf8');
      const targets: string[] = [];
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] ?? m[2];
        targets.push(path.relative(ROOT, path.resolve(path.dirname(file), spec)));
      }
      graph.set(path.relative(ROOT, file), targets);
    }
  }
  return graph;
}

/** Every cycle of the graph (strongly connected components with more than one file, or a self-import). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  // Iterative Tarjan: the graph is a few hundred files, but recursion depth is not ours to bet on.
  for (const start of graph.keys()) {
    if (indexOf.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    indexOf.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const frame = work[work.length - 1];
      const edges = (graph.get(frame.node) ?? []).filter((t) => graph.has(t));
      if (frame.next < edges.length) {
        const to = edges[frame.next++];
        if (!indexOf.has(to)) {
          indexOf.set(to, index);
          low.set(to, index++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, indexOf.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === indexOf.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfImport = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfImport) found.push(component.sort());
      }
    }
  }
  return found;
}

const SDK_DIRS = ['packages/sdk/src', 'packages/sdk/test', 'packages/sdk/scripts'];
const graph = importGraph(['src', 'test', 'bench', 'scripts', ...SDK_DIRS].filter((d) => fs.existsSync(path.join(ROOT, d))));
const srcFiles = [...graph.keys()].filter((f) => f.startsWith('src/') && !f.endsWith('.test.ts'));

function violations(from: (file: string) => boolean, to: (target: string) => boolean): string[] {
  return [...graph].filter(([file]) => from(file)).flatMap(([file, targets]) => targets.filter(to).map((t) => `${file} → ${t}`));
}

test('the cycle finder finds a cycle of three files and a self-import, and nothing in a tree', () => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd']],
    ['d', []],
    ['e', ['e']],
    ['f', ['d']],
  ]);
  assert.deepEqual(
    cycles(g)
      .map((c) => c.join(' '))
      .sort(),
    ['a b c', 'e'],
  );
  assert.deepEqual(
    cycles(
      new Map([
        ['x', ['y']],
        ['y', []],
      ]),
    ),
    [],
  );
});

test('no import cycle between files', () => {
  assert.ok(graph.size > 200, `read ${graph.size} files`);
  const found = cycles(graph);
  assert.deepEqual(found, [], `import cycles:\n${found.map((c) => '  ' + c.join(' ↔ ')).join('\n')}`);
});

test('no application file imports test/ (helpers and fakes live under test/; colocated *.test.ts files may use them)', () => {
  assert.ok(srcFiles.length > 100);
  assert.deepEqual(
    violations(
      (f) => srcFiles.includes(f),
      (t) => t.startsWith('test/'),
    ),
    [],
  );
});

test('no cycle between modules (src/modules/<name>, application files)', () => {
  const moduleOf = (f: string) => /^src\/modules\/([^/]+)\//.exec(f)?.[1];
  const modules = new Map<string, string[]>();
  for (const file of srcFiles) {
    const from = moduleOf(file);
    if (!from) continue;
    const targets = modules.get(from) ?? [];
    for (const t of graph.get(file)!) {
      const to = moduleOf(t);
      if (to && to !== from && !targets.includes(to)) targets.push(to);
    }
    modules.set(from, targets);
  }
  const found = cycles(modules);
  assert.deepEqual(found, [], `module cycles:\n${found.map((c) => '  ' + c.join(' ↔ ')).join('\n')}`);
});

test('the DIAN document code is pure: no database, module, rail, page or runtime import', () => {
  const allowed = (t: string) => t.startsWith('src/documents/') || t.startsWith('src/data/');
  assert.deepEqual(
    violations(
      (f) => f.startsWith('src/documents/') && !f.endsWith('.test.ts'),
      (t) => t.startsWith('src/') && !allowed(t),
    ),
    [],
  );
});

test('the platform depends on no module, page or rail adapter; rails depend on no module', () => {
  const platform = violations(
    (f) => f.startsWith('src/platform/') && !f.endsWith('.test.ts'),
    (t) => /^src\/(modules|pages)\//.test(t),
  );
  assert.deepEqual(platform, []);
  const rails = violations(
    (f) => f.startsWith('src/rails/') && !f.endsWith('.test.ts'),
    (t) => /^src\/(modules|pages)\//.test(t),
  );
  assert.deepEqual(rails, []);
});

test('the payer pages run no SQL of their own: they call the owning modules', () => {
  const query = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql`/;
  const offenders = srcFiles.filter((f) => f.startsWith('src/pages/') && query.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
  assert.deepEqual(offenders, []);
});

test('no module commits a request early by hand: outside calls go through src/platform/outside-call.ts', () => {
  const offenders = srcFiles.filter((f) => /^src\/(modules|pages)\//.test(f) && /\.commitEarly\(/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
  assert.deepEqual(offenders, []);
});

test('tenant scoping is written once: no hand-written company_id + environment pair outside src/platform/scope.ts', () => {
  const pair = /\.where\('company_id', '=', [^)]*\)\s*\.where\('environment', '=', /;
  const offenders = srcFiles.filter((f) => f !== 'src/platform/scope.ts' && pair.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
  assert.deepEqual(offenders, []);
});

test('the SDK (packages/sdk/src) imports only its own files: it is published alone, without the service', () => {
  const sdkFiles = [...graph.keys()].filter((f) => f.startsWith('packages/sdk/src/'));
  assert.ok(sdkFiles.length >= 5, `read ${sdkFiles.length} SDK files`);
  assert.deepEqual(
    violations(
      (f) => sdkFiles.includes(f),
      (t) => !t.startsWith('packages/sdk/src/'),
    ),
    [],
  );
});
