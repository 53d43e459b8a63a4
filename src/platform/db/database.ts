import { Kysely, PostgresDialect, PGliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { openPglite } from './embedded.ts';
import type { DB } from './schema.ts';
import { listenPostgres, type ListenOptions } from './listen.ts';
import { BatchingClient } from './pg-client.ts';

export type Engine = 'pglite' | 'postgres';
export type Executor = Kysely<DB> | Transaction<DB>;

/** A handle on one of the two engines; everything above this file speaks kysely and one SQL dialect. */
export interface Database {
  db: Kysely<DB>;
  engine: Engine;
  /** Runs fn on one dedicated session that accepts multi-statement scripts (migrations, locks). */
  scriptSession<T>(fn: (run: (script: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Pool usage for /metrics (PostgreSQL; the embedded engine has one session and no pool). */
  poolStats?(): { total: number; idle: number; waiting: number };
  /** Subscribes to NOTIFY on a dedicated session (PostgreSQL) that reconnects by itself (listen.ts); returns the unsubscribe. */
  listen(channel: string, onNotify: () => void, opts?: ListenOptions): Promise<() => Promise<void>>;
}

const INT8_OID = 20;
const parseInt8 = (value: string) => BigInt(value);

export interface OpenOptions {
  databaseUrl?: string;
  /**
   * LISTEN's own session (PostgreSQL). A transaction pooler (PgBouncer in transaction mode) cannot
   * keep a LISTEN: point this straight at PostgreSQL (DATABASE_DIRECT_URL, docs/scaling.md).
   * Default: databaseUrl.
   */
  listenUrl?: string;
  dataDir?: string;
  /** Pre-built PGlite (tests load one from a dumped template). */
  pglite?: PGlite;
  /** The embedded engine's buffer pool and first-start template (EMBEDDED_SHARED_BUFFERS, EMBEDDED_TEMPLATE_DIR). */
  embedded?: { sharedBuffers?: string; templateDir?: string };
  poolSize?: number;
  /** BEGIN and COMMIT ride with the statements next to them (pg-client.ts); default true. */
  batchBeginCommit?: boolean;
  applicationName?: string;
  /** PostgreSQL session bounds and the pool's acquire timeout (docs/operations.md); 0 = none. */
  limits?: Partial<SessionLimits>;
  /** Told about every connection a pooled client loses (the process carries on; the pool replaces it). */
  onConnectionError?: (error: Error) => void;
}

export interface SessionLimits {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  connectTimeoutMs: number;
}
export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  statementTimeoutMs: 30_000,
  lockTimeoutMs: 15_000,
  idleInTransactionTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
};

// SQLSTATE classes and driver messages that mean "the database went away or is overloaded", not a bug.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400', '57014', '55P03', '40P01', '40001', '25P03']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Client was closed|Cannot use a pool after calling end|driver has already been destroyed|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|the database system is (starting up|shutting down)/i;

/**
 * Is this error the database being away (terminated session, failover, timeout, exhausted pool)
 * rather than a bug? Such a request answers 503 service_unavailable and the process carries on.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08')) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(code)) return true;
  return typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message);
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts);
  let pglite = opts.pglite;
  if (!pglite) {
    if (!opts.dataDir) throw new Error('dataDir is required for the embedded engine');
    pglite = await openPglite(opts.dataDir, { parseInt8, ...opts.embedded });
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

function openPostgres(opts: OpenOptions): Database {
  const url = opts.databaseUrl!;
  const applicationName = opts.applicationName ?? 'recaudo';
  const limits = { ...DEFAULT_SESSION_LIMITS, ...opts.limits };
  const onConnectionError = opts.onConnectionError ?? (() => {});
  const batching = opts.batchBeginCommit !== false;
  const pool = new pg.Pool({
    // BEGIN and COMMIT ride with the statements next to them: two round trips fewer per transaction.
    ...(batching ? { Client: BatchingClient } : {}),
    connectionString: url,
    max: opts.poolSize ?? 20,
    application_name: applicationName,
    // Bounded everything: no statement, lock wait or forgotten transaction holds a session forever,
    // and a request waits at most connectTimeoutMs for a connection (then 503).
    statement_timeout: limits.statementTimeoutMs || undefined,
    lock_timeout: limits.lockTimeoutMs || undefined,
    idle_in_transaction_session_timeout: limits.idleInTransactionTimeoutMs || undefined,
    connectionTimeoutMillis: limits.connectTimeoutMs,
    keepAlive: true,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // pg removes the pool's listener while a client is checked out: a session terminated then would
  // emit 'error' with no listener and kill the process. Every client carries its own, for life.
  pool.on('connect', (client) => {
    client.on('error', (error) => onConnectionError(error));
  });
  pool.on('error', (error) => onConnectionError(error));
  if (batching) pool.on('release', (_error, client) => (client as unknown as BatchingClient).resetBatching());
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    engine: 'postgres',
    async scriptSession(fn) {
      const client = await pool.connect();
      let failure: Error | undefined;
      try {
        return await fn(async (script) => {
          const result = (await client.query(script)) as unknown as pg.QueryResult | pg.QueryResult[];
          const last = Array.isArray(result) ? result.at(-1) : result;
          return (last?.rows ?? []) as Record<string, unknown>[];
        });
      } catch (error) {
        // A session that failed mid-script may hold a lock or a half transaction: never reuse it.
        failure = error as Error;
        throw error;
      } finally {
        client.release(failure);
      }
    },
    async close() {
      await db.destroy();
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    listen: (channel, onNotify, options) => listenPostgres({ url: opts.listenUrl || url, applicationName }, channel, onNotify, options),
  };
}

/**
 * The executor of a request whose transaction was committed before an outside call
 * (runOutsideCall's step 2). It refuses every use, so code after the call cannot run on a finished
 * transaction or silently on the pool: it names its executor (its settle transaction, or the pool)
 * explicitly.
 */
export function committedExecutor(): Executor {
  const refuse = (): never => {
    throw new Error('the request transaction was committed before an outside call: pass the settle transaction or deps.database.db explicitly');
  };
  return new Proxy({} as Executor, { get: refuse, has: refuse, apply: refuse });
}

/** Runs fn in a transaction, joining the caller's transaction when there already is one. */
export async function inTransaction<T>(executor: Executor, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return fn(executor as Transaction<DB>);
  return (executor as Kysely<DB>).transaction().execute(fn);
}
