import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { makePrivate, makePrivateDir } from './private-dir.ts';

/**
 * The embedded engine's files (docs/operations.md "Embedded engine"): PGlite in DATA_DIR.
 *
 * - Memory: PostgreSQL's default shared buffer pool (128 MB) lives in the process's WebAssembly
 *   memory; one process with one session needs far less, so the pool is EMBEDDED_SHARED_BUFFERS
 *   (32 MB by default: about 130 MB less resident memory).
 * - First start: initdb inside WebAssembly plus every migration takes seconds (tens on a loaded
 *   machine). `npm run build` leaves a migrated, seeded data directory (the template) beside the
 *   build; a new DATA_DIR starts as a copy of it when it was made by the same PGlite version, and
 *   the normal start then applies whatever migration is newer. Without a template: initdb as before.
 */
export const TEMPLATE_STAMP = 'recaudo-template.json';
const INT8_OID = 20;

interface TemplateStamp {
  pglite: string;
  migrations: string[];
}

/** The installed PGlite's version (its package.json is not exported: found from its entry point). */
export function pgliteVersion(): string {
  let dir = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name === '@electric-sql/pglite') return pkg.version;
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

/** The template beside the build (dist/embedded-template), unless EMBEDDED_TEMPLATE_DIR says otherwise. */
export function defaultTemplateDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/embedded-template');
}

/**
 * Copies the template into a data directory that holds no database yet (it may hold the process
 * lock and the secrets key file) when the template fits this PGlite; says whether it did. PG_VERSION
 * goes last: a start killed halfway leaves a directory without it, which the next start copies again.
 */
export function seedFromTemplate(dataDir: string, templateDir: string): boolean {
  if (fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return false;
  const stampFile = path.join(templateDir, TEMPLATE_STAMP);
  if (!fs.existsSync(stampFile)) return false;
  const stamp = JSON.parse(fs.readFileSync(stampFile, 'utf8')) as TemplateStamp;
  if (stamp.pglite !== pgliteVersion()) return false;
  fs.mkdirSync(dataDir, { recursive: true });
  for (const entry of fs.readdirSync(templateDir)) {
    if (entry === TEMPLATE_STAMP || entry === 'PG_VERSION') continue;
    fs.cpSync(path.join(templateDir, entry), path.join(dataDir, entry), { recursive: true, force: true });
  }
  fs.copyFileSync(path.join(templateDir, 'PG_VERSION'), path.join(dataDir, 'PG_VERSION'));
  return true;
}

export interface EmbeddedOptions {
  sharedBuffers?: string;
  templateDir?: string;
  parseInt8: (value: string) => unknown;
}

export async function openPglite(dataDir: string, opts: EmbeddedOptions): Promise<PGlite> {
  seedFromTemplate(dataDir, opts.templateDir ?? defaultTemplateDir());
  makePrivateDir(dataDir);
  const pglite = await PGlite.create(dataDir, {
    parsers: { [INT8_OID]: opts.parseInt8 },
    postgresqlconf: [`shared_buffers=${opts.sharedBuffers ?? '32MB'}`],
  });
  makePrivate(dataDir);
  return pglite;
}

/**
 * Builds the template: a data directory prepared by `prepare` (migrations, catalogues), closed
 * cleanly, stamped with the PGlite version and the migrations it holds.
 */
export async function buildTemplate(dir: string, prepare: (pglite: PGlite) => Promise<string[]>): Promise<void> {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir, { parsers: { [INT8_OID]: (v: string) => BigInt(v) } });
  const migrations = await prepare(pglite);
  await pglite.close();
  const stamp: TemplateStamp = { pglite: pgliteVersion(), migrations };
  fs.writeFileSync(path.join(dir, TEMPLATE_STAMP), `${JSON.stringify(stamp)}\n`);
}
