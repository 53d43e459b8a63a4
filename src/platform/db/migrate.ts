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
 * Applies pending migrations, each in its own transaction, on one session. On PostgreSQL each
 * transaction first takes a transaction-scoped advisory lock, so concurrent starters (several API
 * or worker processes) apply each migration exactly once: a starter that waited finds it recorded
 * and moves on. Nothing outlives its transaction (no session lock, no session SET), so migrating
 * through PgBouncer in transaction mode is as safe as migrating directly (docs/scaling.md).
 */
export async function migrate(database: Database, log: (msg: string) => void = () => {}): Promise<string[]> {
  return database.scriptSession(async (run) => {
    const postgres = database.engine === 'postgres';
    // Another starter may migrate for a while: this transaction waits for it however long it takes.
    const lock = postgres ? `SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0; SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY});` : '';
    const applied: string[] = [];
    for (;;) {
      let pending: { version: string; file: string } | undefined;
      try {
        await run(`BEGIN; ${lock}
          CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
        const done = new Set((await run('SELECT version FROM schema_migrations')).map((r) => String(r.version)));
        pending = listMigrations().find((m) => !done.has(m.version));
        if (!pending) {
          await run('COMMIT');
          return applied;
        }
        const body = fs.readFileSync(pending.file, 'utf8');
        await run(`${body}\n;INSERT INTO schema_migrations(version) VALUES ('${pending.version}');\nCOMMIT;`);
      } catch (error) {
        await run('ROLLBACK').catch(() => {});
        throw new Error(pending ? `migration ${pending.version} failed: ${(error as Error).message}` : `migrations: ${(error as Error).message}`);
      }
      applied.push(pending.version);
      log(`applied migration ${pending.version}`);
    }
  });
}
