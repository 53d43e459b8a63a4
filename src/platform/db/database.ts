import fs from 'node:fs';
import { Kysely, PostgresDialect, PGliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import type { DB } from './schema.ts';

export type Engine = 'pglite' | 'postgres';
export type Executor = Kysely<DB> | Transaction<DB>;

/** A handle on one of the two engines; everything above this file speaks kysely and one SQL dialect. */
export interface Database {
  db: Kysely<DB>;
  engine: Engine;
  /** Runs fn on one dedicated session that accepts multi-statement scripts (migrations, locks). */
  scriptSession<T>(fn: (run: (script: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Subscribes to NOTIFY on a dedicated session (PostgreSQL); returns the unsubscribe. */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
}

const INT8_OID = 20;
const parseInt8 = (value: string) => BigInt(value);

export interface OpenOptions {
  databaseUrl?: string;
  dataDir?: string;
  /** Pre-built PGlite (tests load one from a dumped template). */
  pglite?: PGlite;
  poolSize?: number;
  applicationName?: string;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolSize ?? 20, opts.applicationName ?? 'recaudo');
  let pglite = opts.pglite;
  if (!pglite) {
    if (!opts.dataDir) throw new Error('dataDir is required for the embedded engine');
    fs.mkdirSync(opts.dataDir, { recursive: true });
    pglite = await PGlite.create(opts.dataDir, { parsers: { [INT8_OID]: parseInt8 } });
  }
  return wrapPglite(pglite);
}

export function wrapPglite(pglite: PGlite): Database {
  const db = new Kysely<DB>({ dialect: new PGliteDialect({ pglite }) });
  return {
    db,
    engine: 'pglite',
    async scriptSession(fn) {
      return fn(async (script) => {
        const results = await pglite.exec(script);
        return (results.at(-1)?.rows ?? []) as Record<string, unknown>[];
      });
    },
    async close() {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
    // One process owns an embedded database: in-process wake-ups already cover it.
    async listen() {
      return async () => {};
    },
  };
}

function openPostgres(url: string, poolSize: number, applicationName: string): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    application_name: applicationName,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    engine: 'postgres',
    async scriptSession(fn) {
      const client = await pool.connect();
      try {
        return await fn(async (script) => {
          const result = (await client.query(script)) as unknown as pg.QueryResult | pg.QueryResult[];
          const last = Array.isArray(result) ? result.at(-1) : result;
          return (last?.rows ?? []) as Record<string, unknown>[];
        });
      } finally {
        client.release();
      }
    },
    async close() {
      await db.destroy();
    },
    async listen(channel, onNotify) {
      const client = new pg.Client({ connectionString: url, application_name: `${applicationName}-listen` });
      client.on('error', () => {});
      client.on('notification', () => onNotify());
      await client.connect();
      await client.query(`LISTEN ${channel}`);
      return async () => {
        await client.end().catch(() => {});
      };
    },
  };
}

/** Runs fn in a transaction, joining the caller's transaction when there already is one. */
export async function inTransaction<T>(executor: Executor, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return fn(executor as Transaction<DB>);
  return (executor as Kysely<DB>).transaction().execute(fn);
}
