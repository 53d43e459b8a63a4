import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CompiledQuery, sql } from 'kysely';
import type pg from 'pg';
import { openDatabase, type Database } from './database.ts';
import { BatchingClient, COMMIT_AFTER } from './pg-client.ts';

const URL = process.env.TEST_DATABASE_URL;
const skip = URL ? false : 'PostgreSQL only: the embedded engine has no wire protocol';

/**
 * BEGIN with the first statement and COMMIT with the settle statement (pg-client.ts): each case
 * counts the server's ReadyForQuery messages (one per round trip) and checks what was committed.
 */
describe('PostgreSQL client: BEGIN and COMMIT batched with their statements', { skip }, () => {
  // In a schema of its own: the database is shared with the other test files, and
  // test/distribution.test.ts reads every table of the public schema.
  const schema = `batching_${randomBytes(4).toString('hex')}`;
  const table = `${schema}.t`;
  let client: BatchingClient;
  let trips = 0;
  let database: Database;

  const rows = async () => (await client.query(`SELECT v FROM ${table} ORDER BY v`, [])).rows.map((r: { v: number }) => r.v);
  const counted = async (fn: () => Promise<unknown>) => {
    const start = trips;
    await fn();
    return trips - start;
  };

  // A failed case must not leave the next one inside its transaction.
  afterEach(() => client.query('rollback', []));

  before(async () => {
    client = new BatchingClient({ connectionString: URL });
    await client.connect();
    (client as unknown as { connection: pg.Connection }).connection.on('readyForQuery', () => trips++);
    await client.query(`CREATE SCHEMA ${schema}`, []);
    await client.query(`CREATE TABLE ${table} (v int PRIMARY KEY)`, []);
    database = await openDatabase({ databaseUrl: URL!, poolSize: 2, applicationName: `recaudo-${schema}` });
  });
  after(async () => {
    try {
      await client.query('rollback', []);
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`, []);
    } finally {
      await client.end();
      await database?.close();
    }
  });

  test('begin, a statement, the settle statement with its commit: two round trips instead of four, all committed', async () => {
    const n = await counted(async () => {
      assert.equal((await client.query('begin', [])).command, 'BEGIN');
      const inserted = await client.query(`INSERT INTO ${table} VALUES ($1) RETURNING v`, [1]);
      assert.deepEqual(inserted.rows, [{ v: 1 }], 'the statement answers its own rows, not the BEGIN');
      const updated = await client.query(`${COMMIT_AFTER}UPDATE ${table} SET v = $1 WHERE v = $2`, [2, 1]);
      assert.equal(updated.command, 'UPDATE');
      assert.equal(updated.rowCount, 1);
      assert.equal((await client.query('commit', [])).command, 'COMMIT');
    });
    assert.equal(n, 2);
    assert.equal(client.getTransactionStatus(), 'I', 'the session is out of the transaction');
    assert.deepEqual(await rows(), [2]);
  });

  test('a statement without values carries the BEGIN too (pg would send it as a simple query)', async () => {
    await client.query('begin', []);
    await client.query(`INSERT INTO ${table} VALUES (6)`, []);
    assert.equal(client.getTransactionStatus(), 'T', 'inside the transaction');
    await client.query('rollback', []);
    assert.deepEqual(await rows(), [2]);
  });

  test('a transaction that runs no statement sends nothing', async () => {
    assert.equal(
      await counted(async () => {
        await client.query('begin', []);
        await client.query('commit', []);
        await client.query('begin', []);
        await client.query('rollback', []);
      }),
      0,
    );
  });

  test('the first statement fails: the BEGIN ran, the transaction is aborted, the rollback ends it, nothing stays', async () => {
    await client.query('begin', []);
    await assert.rejects(client.query(`INSERT INTO ${table} VALUES ($1), ($1)`, [7]), /duplicate key/);
    // pg answers an error before the server's ReadyForQuery: the next statement shows the state.
    await assert.rejects(client.query('SELECT 1', []), /current transaction is aborted/, 'inside the failed transaction');
    await client.query('rollback', []);
    assert.equal(client.getTransactionStatus(), 'I');
    assert.deepEqual(await rows(), [2]);
  });

  test('the settle statement fails: the COMMIT behind it never runs, the earlier write is rolled back', async () => {
    await client.query('begin', []);
    await client.query(`INSERT INTO ${table} VALUES ($1)`, [3]);
    await assert.rejects(client.query(`${COMMIT_AFTER}UPDATE ${table} SET v = $1 WHERE v = $2`, [2, 3]), /duplicate key/);
    // pg answers an error before the server's ReadyForQuery: the next statement shows the state.
    await assert.rejects(client.query('SELECT 1', []), /current transaction is aborted/, 'inside the failed transaction');
    // The commit that follows is a real one and says the transaction was rolled back.
    assert.equal((await client.query('commit', [])).command, 'ROLLBACK');
    assert.deepEqual(await rows(), [2]);
  });

  test('a value that cannot be sent closes the batch without the COMMIT', async () => {
    await client.query('begin', []);
    await client.query(`INSERT INTO ${table} VALUES ($1)`, [4]);
    const unsendable = {
      toPostgres() {
        throw new Error('cannot be sent');
      },
    };
    await assert.rejects(client.query(`${COMMIT_AFTER}UPDATE ${table} SET v = $1 WHERE v = $2`, [unsendable, 4]), /cannot be sent/);
    assert.deepEqual((await client.query('SELECT 1 AS one', [])).rows, [{ one: 1 }], 'the transaction is still usable');
    assert.equal(client.getTransactionStatus(), 'T', 'still inside the open transaction: nothing was committed');
    await client.query('rollback', []);
    assert.deepEqual(await rows(), [2]);
  });

  test('a query in a form not batched (a callback) after a held BEGIN runs inside the transaction', async () => {
    await client.query('begin', []);
    await new Promise<void>((resolve, reject) =>
      client.query(`INSERT INTO ${table} VALUES (5)`, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    assert.equal(client.getTransactionStatus(), 'T');
    await client.query('rollback', []);
    assert.deepEqual(await rows(), [2]);
  });

  test('through Kysely on the pool: a transaction commits, a failed one rolls back, the settle form commits once', async () => {
    const db = database.db;
    await db.transaction().execute(async (trx) => {
      await sql`INSERT INTO ${sql.table(table)} VALUES (10)`.execute(trx);
    });
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO ${sql.table(table)} VALUES (11)`.execute(trx);
        throw new Error('handler failed');
      }),
      /handler failed/,
    );
    const trx = await db.startTransaction().execute();
    await sql`INSERT INTO ${sql.table(table)} VALUES (12)`.execute(trx);
    await trx.executeQuery(CompiledQuery.raw(`${COMMIT_AFTER}UPDATE ${table} SET v = $1 WHERE v = $2`, [13, 12]));
    await trx.commit().execute();
    assert.deepEqual(await rows(), [2, 10, 13]);
  });
});
