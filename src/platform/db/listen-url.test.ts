import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openDatabase } from './database.ts';
import { loadConfig } from '../../config.ts';
import { ENGINE, eventually } from '../../../test/harness.ts';
import { freePort } from '../../../test/fault-harness.ts';

// docs/scaling.md: behind PgBouncer in transaction mode, LISTEN needs its own direct session.
describe('LISTEN on DATABASE_DIRECT_URL', { skip: ENGINE !== 'postgres' && 'PostgreSQL only' }, () => {
  test('the listener connects to listenUrl, not to the pooled URL, and hears a NOTIFY sent through the pool', async () => {
    const direct = process.env.TEST_DATABASE_DIRECT_URL || process.env.TEST_DATABASE_URL!;
    // Nothing listens on the pooled URL's port: a listener that used it would never connect.
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/none`;
    const database = await openDatabase({ databaseUrl: nowhere, listenUrl: direct, poolSize: 1, limits: { connectTimeoutMs: 500 } });
    const sender = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await sender.connect();
    let heard = 0;
    let listening = false;
    const stop = await database.listen('recaudo_listen_url_probe', () => heard++, { onListening: () => (listening = true), minBackoffMs: 10 });
    try {
      assert.equal(listening, true, 'LISTEN is in place after the first attempt');
      await assert.rejects(database.db.selectFrom('companies').select('id').execute(), 'the pooled URL really is unreachable');
      await sender.query(`NOTIFY recaudo_listen_url_probe`);
      await eventually(async () => heard > 0, 5_000);
    } finally {
      await stop();
      await database.close();
      await sender.end();
    }
  });
});

describe('DATABASE_DIRECT_URL', () => {
  test('is read and checked like DATABASE_URL', () => {
    assert.equal(loadConfig({ DATABASE_DIRECT_URL: 'postgres://db:5432/recaudo' }).databaseDirectUrl, 'postgres://db:5432/recaudo');
    assert.equal(loadConfig({}).databaseDirectUrl, undefined);
    assert.throws(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://db/recaudo' }), /DATABASE_DIRECT_URL must start with postgres/);
  });
});
