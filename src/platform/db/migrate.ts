import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.ts';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../migrations');

// Any constant works; it only has to be the same in every process that migrates this database.
const MIGRATION_LOCK_KEY = 727_384_001;

export function listMigrations(dir = MIGRATIONS_DIR): { version: string; file: string }[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({ version: file.replace(/\.sql$/, ''), file: path.join(dir, file) }));
}

/**
 * Applies pending migrations, each in its own transaction, on one session. On PostgreSQL a session
 * advisory lock makes concurrent starters (several API or worker processes) apply them exactly once.
 */
export async function migrate(database: Database, log: (msg: string) => void = () => {}): Promise<string[]> {
  return database.scriptSession(async (run) => {
    const postgres = database.engine === 'postgres';
    // Another starter may migrate for a while: this session waits for it however long it takes.
    if (postgres) await run(`SET lock_timeout = 0; SET statement_timeout = 0; SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await run('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      const done = new Set((await run('SELECT version FROM schema_migrations')).map((r) => String(r.version)));
      const applied: string[] = [];
      for (const m of listMigrations()) {
        if (done.has(m.version)) continue;
        const body = fs.readFileSync(m.file, 'utf8');
        try {
          await run(`BEGIN;\n${body}\n;INSERT INTO schema_migrations(version) VALUES ('${m.version}');\nCOMMIT;`);
        } catch (error) {
          await run('ROLLBACK').catch(() => {});
          throw new Error(`migration ${m.version} failed: ${(error as Error).message}`);
        }
        applied.push(m.version);
        log(`applied migration ${m.version}`);
      }
      return applied;
    } finally {
      if (postgres) await run(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  });
}
