import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { createHttpApp } from '../src/server.ts';
import { createCompany } from '../src/modules/companies/service.ts';
import { loadFiscalIssuer } from '../src/modules/fiscal/profile.ts';
import { readConnectorSettings } from '../src/modules/connectors/settings.ts';
import type { DB } from '../src/platform/db/schema.ts';
import { keyFilePath, keyId, nextKeyFilePath, SecretUnreadable } from '../src/platform/secrets.ts';
import { createHarness, ENGINE, send, type Company, type Harness } from './harness.ts';
import { makeTestPkcs12 } from './support/fiscal.ts';
import { kybBody, makePlatform } from './support/companies.ts';

/**
 * Secrets at rest (docs/operations.md "Secrets at rest"): after a merchant gives us every kind of
 * secret (a webhook, a flow, a DIAN certificate with its password and PIN, connector keys, a
 * company onboarded with its keys), no text, JSON or bytea column of any table holds one of them in
 * clear; a replay still answers them. Key rotation through the CLI re-seals everything so the old
 * key is no longer needed; a wrong key is a clear error; the embedded default's key file is 0600
 * and reused.
 */

const tag = () => randomBytes(9).toString('hex');

/** Everything a merchant gives or is given, through the API, with the values to look for. */
async function giveSecrets(request: (opts: { method?: 'PUT' | 'POST'; url: string; body: unknown; idem?: string }) => Promise<any>) {
  const password = `pfx-${tag()}`;
  const pin = `pin-${tag()}`;
  const p12 = makeTestPkcs12(password).p12.toString('base64');
  const connector = {
    public_key: `pub_test_${tag()}`,
    private_key: `prv_test_${tag()}`,
    events_secret: `test_events_${tag()}`,
    integrity_secret: `test_integrity_${tag()}`,
  };
  const webhookHeader = `hdr-${tag()}`;
  const idem = randomUUID();
  const webhook = await request({
    url: '/v1/webhooks',
    body: { name: 'Sealed', url: 'http://127.0.0.1:9/hook', events: ['charge.paid'], header: webhookHeader },
    idem,
  });
  assert.equal(webhook.status, 200, webhook.raw);
  const replay = await request({
    url: '/v1/webhooks',
    body: { name: 'Sealed', url: 'http://127.0.0.1:9/hook', events: ['charge.paid'], header: webhookHeader },
    idem,
  });
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.equal(replay.body.data.secret, webhook.body.data.secret, 'a replay still answers the secret (opened from the sealed stored body)');
  const flow = await request({
    url: '/v1/flows',
    body: { name: 'Sealed flow', event: 'charge.paid', action: { type: 'call_url', url: 'http://127.0.0.1:9/flow' } },
  });
  assert.equal(flow.status, 200, flow.raw);
  const profile = await request({
    method: 'PUT',
    url: '/v1/fiscal-profile',
    body: { certificate: p12, certificate_password: password, software_pin: pin },
  });
  assert.equal(profile.status, 200, profile.raw);
  const connected = await request({ method: 'PUT', url: '/v1/connectors/wompi', body: { ...connector, provider_environment: 'sandbox' } });
  assert.equal(connected.status, 200, connected.raw);
  return {
    webhookId: webhook.body.data.id as string,
    webhookHeader,
    values: {
      'webhook secret': webhook.body.data.secret as string,
      'webhook token': webhookHeader,
      'flow secret': flow.body.secret as string,
      'certificate password': password,
      'software PIN': pin,
      // Any 60 characters of the PKCS#12's base64 would do: the start, the middle.
      'certificate (start)': p12.slice(0, 60),
      'certificate (middle)': p12.slice(600, 660),
      'connector private key': connector.private_key,
      'connector events secret': connector.events_secret,
      'connector integrity secret': connector.integrity_secret,
    } as Record<string, string>,
    pin,
    password,
    connector,
  };
}

/** Every text, character, JSON and bytea column of every table, searched for each value (and its hex). */
async function assertNowhereInClear(db: Kysely<DB>, values: Record<string, string>): Promise<number> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    SELECT c.table_name, c.column_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = current_schema() AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea')
    ORDER BY c.table_name, c.ordinal_position`.execute(db);
  const byTable = new Map<string, string[]>();
  for (const c of columns.rows) byTable.set(c.table_name, [...(byTable.get(c.table_name) ?? []), c.column_name]);
  assert.ok(
    ['webhooks', 'flows', 'fiscal_profiles', 'connector_settings', 'idempotency_keys'].every((t) => byTable.has(t)),
    'the dump covers the secret tables',
  );
  const needles = Object.entries(values).flatMap(([what, v]) => [
    [what, v],
    [`${what} (hex)`, Buffer.from(v).toString('hex')],
  ]);
  let searched = 0;
  for (const [table, cols] of byTable) {
    const rows = await sql<
      Record<string, string | null>
    >`SELECT ${sql.join(cols.map((c) => sql`${sql.ref(c)}::text`))} FROM ${sql.table(table)}`.execute(db);
    for (const row of rows.rows) {
      for (const [col, value] of Object.entries(row)) {
        if (value === null) continue;
        searched++;
        for (const [what, needle] of needles) assert.ok(!value.includes(needle), `${table}.${col} holds the ${what} in clear`);
      }
    }
  }
  return searched;
}

describe('secrets at rest: nothing in clear', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Secretos SAS');
  });
  after(() => h.close());

  test('after a webhook, a flow, a certificate with password and PIN, connector keys and an onboarded company, no column holds one in clear', async () => {
    const given = await giveSecrets((opts) => co.req({ ...opts, idem: opts.idem }));
    // A platform onboards a company: the answer (stored for a replay) carries the new company's test keys.
    await makePlatform(h, co);
    const onboarded = await co.req({ url: '/v1/companies', body: kybBody({ name: 'Hija Sellada' }) });
    assert.equal(onboarded.status, 200, onboarded.raw);
    const values = { ...given.values, 'onboarded test secret key': onboarded.body.keys.test.secret as string };

    // The service still works with them: the webhook's token is answered, the issuer signs with the PIN.
    const got = await co.req({ url: `/v1/webhooks/${given.webhookId}` });
    assert.equal(got.body.data.header, given.webhookHeader);
    const issuer = await loadFiscalIssuer(h.runtime.deps.database.db, h.runtime.deps.secrets, { companyId: co.company.id, environment: 'test' });
    assert.equal(issuer?.softwarePin, given.pin);
    assert.equal(issuer?.certificate?.password, given.password);
    const settings = await readConnectorSettings(h.runtime.deps, h.runtime.deps.database.db, { companyId: co.company.id, environment: 'test' });
    assert.equal(settings?.privateKey, given.connector.private_key);

    const searched = await assertNowhereInClear(h.runtime.deps.database.db, values);
    assert.ok(searched > 100, `searched ${searched} values`);
  });
});

/** A database of its own: the passes below re-seal every row, which must not touch other test files' rows. */
async function isolatedDatabase(): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  if (ENGINE === 'pglite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-secrets-'));
    return { env: { DATA_DIR: dir, DATABASE_URL: '' }, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const base = new URL(process.env.TEST_DATABASE_URL!);
  const name = `recaudo_secrets_${tag()}`;
  const admin = new pg.Client({ connectionString: base.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-secrets-'));
  return {
    env: { DATABASE_URL: url.toString(), DATA_DIR: dir },
    drop: async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      const client = new pg.Client({ connectionString: base.toString() });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A server's runtime on that database (a company and its test key made at the first start). */
async function start(
  env: Record<string, string>,
  knownKey?: string,
): Promise<{ runtime: Runtime; request: (opts: any) => Promise<any>; key: string; close: () => Promise<void> }> {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://recaudo.test',
    RATE_LIMIT_TEST: '100000',
    ALLOW_PRIVATE_WEBHOOKS: 'true',
    ...env,
  });
  const runtime = await createRuntime(config, { role: 'server', logger: pino({ level: 'silent' }) });
  const { app } = await createHttpApp(runtime);
  const key = knownKey ?? (await createCompany(runtime.deps.database.db, { name: 'Rotación SAS' }, new Date())).keys.test;
  return {
    runtime,
    key,
    request: (opts) => send(app, { ...opts, key: opts.key ?? key }),
    close: async () => {
      await app.close();
      await runtime.close();
    },
  };
}

function cli(env: Record<string, string>, ...args: string[]) {
  const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Under which key (or clear) each stored secret is, across every sealed column. */
async function keyIdsInUse(db: Kysely<DB>): Promise<Set<string>> {
  const rows = await sql<{ v: string }>`
    SELECT secret AS v FROM webhooks UNION ALL SELECT header FROM webhooks UNION ALL SELECT secret FROM flows
    UNION ALL SELECT software_pin FROM fiscal_profiles UNION ALL SELECT certificate_p12 FROM fiscal_profiles
    UNION ALL SELECT certificate_password FROM fiscal_profiles UNION ALL SELECT private_key_sealed FROM connector_settings
    UNION ALL SELECT events_secret_sealed FROM connector_settings UNION ALL SELECT response_body FROM idempotency_keys`.execute(db);
  return new Set(rows.rows.filter((r) => r.v !== null).map((r) => (/^v1\.[0-9a-f]{8}\./.test(r.v) ? r.v.slice(3, 11) : 'clear')));
}

describe('key rotation and the key file', () => {
  test('SECRETS_KEY: clear values of an earlier release sealed at start; rotate-key re-seals all under SECRETS_KEY_NEW, the old key no longer needed; a wrong key is a clear error', async () => {
    const db0 = await isolatedDatabase();
    const k1 = randomBytes(32).toString('base64');
    const k2 = randomBytes(32).toString('hex');
    const id1 = keyId(Buffer.from(k1, 'base64'));
    const id2 = keyId(Buffer.from(k2, 'hex'));
    try {
      let s = await start({ ...db0.env, SECRETS_KEY: k1 });
      const given = await giveSecrets(s.request);
      // An earlier release wrote these in clear.
      await s.runtime.deps.database.db.updateTable('webhooks').set({ header: 'hdr-from-before' }).where('id', '=', given.webhookId).execute();
      await s.close();

      const key = s.key;
      s = await start({ ...db0.env, SECRETS_KEY: k1 }, key);
      assert.deepEqual([...(await keyIdsInUse(s.runtime.deps.database.db))], [id1], 'sealed at start: nothing clear is left');
      assert.equal((await s.request({ url: `/v1/webhooks/${given.webhookId}` })).body.data.header, 'hdr-from-before');
      await s.close();

      const rotated = cli({ ...db0.env, SECRETS_KEY: k1, SECRETS_KEY_NEW: k2 }, 'secrets', 'rotate-key', '--batch-size', '2', '--json');
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stderr, /re-sealing every secret under key/);
      assert.match(rotated.stderr, /webhooks\.secret: 1 sealed/, 'progress on stderr');
      const report = JSON.parse(rotated.stdout);
      assert.equal(report.key_id, id2);
      assert.equal(report.unreadable, 0);
      assert.ok(report.sealed >= 10, `sealed ${report.sealed}`);

      // Only the new key from now on: no SECRETS_KEY_PREVIOUS.
      s = await start({ ...db0.env, SECRETS_KEY: k2 }, key);
      try {
        assert.deepEqual([...(await keyIdsInUse(s.runtime.deps.database.db))], [id2]);
        assert.equal((await s.request({ url: `/v1/webhooks/${given.webhookId}` })).body.data.header, 'hdr-from-before');
        const issuer = await loadFiscalIssuer(s.runtime.deps.database.db, s.runtime.deps.secrets, {
          companyId: await companyId(s),
          environment: 'test',
        });
        assert.equal(issuer?.softwarePin, given.pin);
        assert.equal(issuer?.certificate?.password, given.password);
        const settings = await readConnectorSettings(s.runtime.deps, s.runtime.deps.database.db, {
          companyId: await companyId(s),
          environment: 'test',
        });
        assert.equal(settings?.integritySecret, given.connector.integrity_secret);
        const status = cli({ ...db0.env, SECRETS_KEY: k2 }, 'secrets', 'status', '--json');
        // The embedded directory is held by this test's runtime: status refuses, it never opens it twice.
        if (ENGINE === 'pglite') assert.match(status.stderr, /in use by a Recaudo server/);
        else assert.equal(JSON.parse(status.stdout).key_id, id2, status.stderr);
      } finally {
        await s.close();
      }

      // The old key alone opens nothing: a clear error naming the key, not garbage.
      s = await start({ ...db0.env, SECRETS_KEY: k1 }, key);
      try {
        await assert.rejects(
          loadFiscalIssuer(s.runtime.deps.database.db, s.runtime.deps.secrets, { companyId: await companyId(s), environment: 'test' }),
          (e: unknown) => e instanceof SecretUnreadable && e.message.includes(id2),
        );
        assert.equal((await s.request({ url: `/v1/webhooks/${given.webhookId}` })).status, 500);
      } finally {
        await s.close();
      }
      const seal = cli({ ...db0.env, SECRETS_KEY: k1 }, 'secrets', 'seal', '--json');
      assert.equal(seal.code, 1, 'values no key opens are reported, and the command fails');
      assert.ok(JSON.parse(seal.stdout).unreadable >= 10);
    } finally {
      await db0.drop();
    }
  });

  test('embedded default: the key file is created 0600 once and reused across restarts; rotate-key replaces it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-keyfile-'));
    const env = { DATA_DIR: dir, DATABASE_URL: '', SECRETS_KEY: '', NODE_ENV: 'production', ALLOW_PRIVATE_WEBHOOKS: 'true' };
    try {
      const first = cli(env, 'secrets', 'status', '--json');
      assert.equal(first.code, 0, first.stderr);
      const status = JSON.parse(first.stdout);
      assert.equal(status.source, 'file');
      assert.equal(status.key_file, keyFilePath(dir));
      assert.equal(fs.statSync(keyFilePath(dir)).mode & 0o777, 0o600);
      assert.match(first.stderr, /generated a secrets key/);
      const keyBefore = fs.readFileSync(keyFilePath(dir), 'utf8');

      let s = await start(env);
      assert.equal(keyId(s.runtime.deps.secrets.current), status.key_id, 'the server uses the same key');
      const given = await giveSecrets(s.request);
      const key = s.key;
      await s.close();
      const again = cli(env, 'secrets', 'status', '--json');
      assert.equal(JSON.parse(again.stdout).key_id, status.key_id, 'reused, not regenerated');
      assert.doesNotMatch(again.stderr, /generated a secrets key/);
      assert.equal(fs.readFileSync(keyFilePath(dir), 'utf8'), keyBefore);

      const rotated = cli(env, 'secrets', 'rotate-key');
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stderr, /now holds the new key/);
      assert.equal(fs.existsSync(nextKeyFilePath(dir)), false);
      assert.notEqual(fs.readFileSync(keyFilePath(dir), 'utf8'), keyBefore);
      assert.equal(fs.statSync(keyFilePath(dir)).mode & 0o777, 0o600);

      s = await start(env, key);
      try {
        const newId = keyId(s.runtime.deps.secrets.current);
        assert.notEqual(newId, status.key_id);
        assert.deepEqual([...(await keyIdsInUse(s.runtime.deps.database.db))], [newId]);
        assert.equal((await s.request({ url: `/v1/webhooks/${given.webhookId}` })).body.data.header, given.webhookHeader);
      } finally {
        await s.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function companyId(s: { runtime: Runtime }): Promise<string> {
  return (await s.runtime.deps.database.db.selectFrom('companies').select('id').executeTakeFirstOrThrow()).id;
}
