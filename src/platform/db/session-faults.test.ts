import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { toApiError } from '../http/errors.ts';
import { isDatabaseUnavailable, openDatabase, type Database, type SessionLimits } from './database.ts';

const URL = process.env.TEST_DATABASE_URL;
const skip = URL ? false : 'PostgreSQL only: PGlite has one in-process session, nothing to lose or time out';

/**
 * Issue 11: no process dies because PostgreSQL went away, and nothing waits forever. Each database
 * here has its own application_name, so only its own sessions are terminated (never the server's
 * or other tests').
 */
describe('PostgreSQL sessions: lost, timed out, exhausted', { skip }, () => {
  const opened: Database[] = [];
  const lost: Error[] = [];
  let admin: pg.Client;

  async function open(limits: Partial<SessionLimits>, poolSize = 4) {
    const applicationName = `recaudo-faults-${randomBytes(4).toString('hex')}`;
    const database = await openDatabase({ databaseUrl: URL!, poolSize, applicationName, limits, onConnectionError: (e) => lost.push(e) });
    opened.push(database);
    return { database, applicationName };
  }
  const terminate = (applicationName: string) =>
    admin.query('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [applicationName]);

  before(async () => {
    admin = new pg.Client({ connectionString: URL });
    await admin.connect();
  });
  after(async () => {
    await admin.end();
    for (const d of opened) await d.close().catch(() => {});
  });

  test('a session terminated while checked out (inside a transaction) neither kills the process nor the pool', async () => {
    const { database, applicationName } = await open({});
    const before = lost.length;
    const trx = await database.db.startTransaction().execute();
    await sql`select 1`.execute(trx);
    const { rows } = await terminate(applicationName);
    assert.ok(rows[0].n >= 1, 'the checked-out session was terminated');
    // The 'error' event arrives on the checked-out client: without a listener Node would exit here.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const failure = await sql`select 1`.execute(trx).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(failure, 'the transaction cannot go on');
    assert.ok(isDatabaseUnavailable(failure), `a lost session is "unavailable": ${String(failure)}`);
    assert.equal(toApiError(failure).status, 503);
    assert.equal(toApiError(failure).def.codeName, 'service_unavailable');
    await trx
      .rollback()
      .execute()
      .catch(() => {});
    assert.ok(lost.length > before, 'the loss was reported (logged by the runtime)');
    const again = await sql<{ ok: number }>`select 1 as ok`.execute(database.db);
    assert.equal(again.rows[0].ok, 1, 'the pool carries on with a new session');
  });

  test('a forgotten transaction is ended by idle_in_transaction_session_timeout, without killing the process', async () => {
    const { database } = await open({ idleInTransactionTimeoutMs: 200 });
    const trx = await database.db.startTransaction().execute();
    await sql`select 1`.execute(trx);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const failure = await sql`select 1`.execute(trx).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(failure && isDatabaseUnavailable(failure), String(failure));
    await trx
      .rollback()
      .execute()
      .catch(() => {});
    assert.equal((await sql<{ ok: number }>`select 1 as ok`.execute(database.db)).rows[0].ok, 1);
  });

  test('a statement and a lock wait are bounded (statement_timeout, lock_timeout): 503, not a hang', async () => {
    const { database } = await open({ statementTimeoutMs: 300, lockTimeoutMs: 200 });
    const slow = await sql`select pg_sleep(2)`.execute(database.db).then(
      () => null,
      (e: unknown) => e,
    );
    assert.equal((slow as { code?: string })?.code, '57014', String(slow));
    assert.equal(toApiError(slow).status, 503);

    const key = 917_000 + Math.floor(Math.random() * 1000);
    const holder = await database.db.startTransaction().execute();
    await sql`select pg_advisory_xact_lock(${key})`.execute(holder);
    const waited = Date.now();
    const blocked = await sql`select pg_advisory_xact_lock(${key})`.execute(database.db).then(
      () => null,
      (e: unknown) => e,
    );
    assert.equal((blocked as { code?: string })?.code, '55P03', String(blocked));
    assert.ok(Date.now() - waited < 2_000);
    assert.equal(toApiError(blocked).status, 503);
    await holder.rollback().execute();
  });

  test('an exhausted pool answers within DB_CONNECT_TIMEOUT_MS (503), not never', async () => {
    const { database } = await open({ connectTimeoutMs: 200 }, 1);
    const holder = await database.db.startTransaction().execute();
    await sql`select 1`.execute(holder);
    const started = Date.now();
    const starved = await sql`select 1`.execute(database.db).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(starved, 'no connection was free');
    assert.ok(Date.now() - started < 2_000);
    assert.ok(isDatabaseUnavailable(starved), String(starved));
    assert.equal(toApiError(starved).status, 503);
    await holder.commit().execute();
  });
});

describe('which errors mean "the database is away"', () => {
  test('SQLSTATEs and driver messages of a lost or overloaded database; a bug is not one of them', () => {
    for (const code of ['57P01', '57P02', '57P03', '08006', '08003', '53300', '57014', '55P03', '40P01'])
      assert.ok(isDatabaseUnavailable({ code, message: 'x' }), code);
    assert.ok(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')));
    assert.ok(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect')));
    assert.ok(isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })));
    for (const code of ['23505', '42601', '22P02']) assert.equal(isDatabaseUnavailable({ code, message: 'x' }), false, code);
    assert.equal(isDatabaseUnavailable(new TypeError('x is undefined')), false);
    assert.equal(toApiError(new TypeError('x is undefined')).status, 500);
  });
});
