import pg from 'pg';

/**
 * node-postgres' Client with two fewer round trips per transaction (docs/scaling.md "Round trips
 * per request"): under the bench, a quarter of the service's CPU-profile samples sat in the socket
 * write of pg's queries, and a request's transaction paid a round trip for BEGIN and one for COMMIT
 * on top of its statements.
 *
 * - `begin` (or `start transaction ...`) is not sent on its own: it is written in front of the
 *   transaction's first statement, in the same extended-protocol batch (Parse/Bind/Execute of the
 *   BEGIN, then the statement, then one Sync). The server runs them in order; an error in either
 *   skips the rest up to the Sync, exactly as two round trips would have failed. A transaction that
 *   ends before any statement sends nothing at all.
 * - A statement that starts with COMMIT_AFTER carries the COMMIT behind it the same way, and the
 *   `commit` that follows is answered here without a round trip. Only the idempotency settle uses it
 *   (the response stored, then the commit): if the statement fails, the COMMIT never runs and the
 *   transaction is left aborted for the caller's rollback, as before.
 *
 * Everything else (cursors, scripts, statements outside a transaction) passes through unchanged.
 */
export const COMMIT_AFTER = '/* commit after */ ';

type Callback = (error: Error | null, result?: pg.QueryResult | pg.QueryResult[]) => void;

interface ProtocolConnection {
  parse(msg: { text: string }): void;
  bind(msg: { values: unknown[] }): void;
  execute(msg: { portal: string; rows?: number }): void;
  sync(): void;
}
interface PgQueryInstance {
  portal: string;
  prepare(connection: ProtocolConnection): void;
  _getRows(connection: ProtocolConnection, rows?: number): void;
}
const PgQuery = (pg as unknown as { Query: new (config: object, values?: unknown, callback?: Callback) => PgQueryInstance }).Query;

/** A statement with a BEGIN written before it and/or a COMMIT after it, inside its one Sync. */
class BatchedQuery extends PgQuery {
  constructor(
    config: { text: string; values: unknown[] },
    callback: Callback,
    private readonly begin: string | null,
    private readonly commitAfter: boolean,
  ) {
    // Extended protocol even without values: pg would send a statement without values as a
    // simple Query message, and the BEGIN written in front of it would never go out.
    super({ ...config, queryMode: 'extended' }, undefined, callback);
  }
  override prepare(connection: ProtocolConnection): void {
    if (this.begin) writeStatement(connection, this.begin);
    super.prepare(connection);
  }
  // Called by prepare only once the statement is bound (a value that cannot be sent closes the
  // batch with a bare Sync instead, so no COMMIT follows a statement that never ran).
  override _getRows(connection: ProtocolConnection, rows?: number): void {
    if (!this.commitAfter) return super._getRows(connection, rows);
    connection.execute({ portal: this.portal, rows });
    writeStatement(connection, 'commit');
    connection.sync();
  }
}

function writeStatement(connection: ProtocolConnection, text: string): void {
  connection.parse({ text });
  connection.bind({ values: [] });
  connection.execute({ portal: '' });
}

/** What Kysely sends to open a transaction (PostgresDriver.beginTransaction), and nothing else. */
const BEGIN = /^(begin|start transaction( isolation level (serializable|repeatable read|read committed|read uncommitted))?( read (only|write))?)$/;
const done = (command: string) => ({ command, rowCount: null, rows: [], fields: [], oid: 0 }) as unknown as pg.QueryResult;

export class BatchingClient extends pg.Client {
  /** The BEGIN not sent yet: it goes out with the transaction's first statement. */
  private pendingBegin: string | null = null;
  /** The last statement carried the COMMIT: the `commit` right after it is already done. */
  private committed = false;

  /** Back in the pool: a BEGIN no statement followed was never sent, and is dropped. */
  resetBatching(): void {
    this.pendingBegin = null;
    this.committed = false;
  }

  // pg's overloads (callbacks, submittables, scripts without values) pass through super.query;
  // only Kysely's form, text plus an array of values answered by a promise, is batched.
  override query(config: any, values?: any, callback?: any): any {
    const committed = this.committed;
    this.committed = false;
    if (typeof config !== 'string' || !Array.isArray(values) || callback !== undefined) {
      if (this.pendingBegin) this.flushBegin();
      return super.query(config, values, callback);
    }
    const text = config;
    if (text === 'commit' && committed) return Promise.resolve(done('COMMIT'));
    if (BEGIN.test(text) && values.length === 0) {
      if (this.pendingBegin) this.flushBegin();
      this.pendingBegin = text;
      return Promise.resolve(done('BEGIN'));
    }
    const begin = this.pendingBegin;
    this.pendingBegin = null;
    // A transaction that ran no statement: nothing was sent, so nothing is to end.
    if (begin && (text === 'commit' || text === 'rollback')) return Promise.resolve(done(text.toUpperCase()));
    const commitAfter = text.startsWith(COMMIT_AFTER);
    if (!begin && !commitAfter) return super.query(text, values);
    return new Promise((resolve, reject) => {
      const query = new BatchedQuery(
        { text, values },
        (error, result) => {
          if (error) return reject(error);
          const results = Array.isArray(result) ? result : [result!];
          if (commitAfter) {
            // COMMIT answers ROLLBACK when the transaction had already failed (as Kysely checks).
            if (results.at(-1)!.command === 'ROLLBACK') return reject(new Error('the transaction was rolled back instead of committed'));
            this.committed = true;
            return resolve(results.at(-2)!);
          }
          resolve(results.at(-1)!);
        },
        begin,
        commitAfter,
      );
      super.query(query as unknown as pg.Submittable);
    });
  }

  /** Sends a held BEGIN by itself, ahead of a query this class does not batch. */
  private flushBegin(): void {
    const text = this.pendingBegin!;
    this.pendingBegin = null;
    // Queued ahead of the caller's query on this session: a failure shows on that query too.
    void super.query(text).catch(() => {});
  }
}
