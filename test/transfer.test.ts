import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ENGINE } from './harness.ts';
import { freePort } from './fault-harness.ts';

/**
 * `recaudo export` / `recaudo import` between the two engines, through the real CLI and servers
 * (docs/deploy.md "Moving from the embedded engine to PostgreSQL"). On the PGlite pass the source
 * is an embedded data directory and the target a fresh PostgreSQL database; on the PostgreSQL pass
 * the other way round. The target, exported again, must hold exactly the source's rows.
 */

const postgresUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
const skip = !postgresUrl && 'needs a PostgreSQL server (DATABASE_URL) beside the embedded engine';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-transfer-'));
const databases: string[] = [];
// Both sides hold the same SECRETS_KEY, as a move between engines must (docs/deploy.md).
const secretsKey = randomBytes(32).toString('hex');

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The environment of a process on one side: a fresh PostgreSQL database or a fresh data directory. */
async function side(name: string, engine: 'pglite' | 'postgres'): Promise<NodeJS.ProcessEnv> {
  const base = { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', RATE_LIMIT_TEST: '100000', SECRETS_KEY: secretsKey };
  if (engine === 'pglite') return { ...base, DATABASE_URL: '', DATA_DIR: path.join(work, name) };
  const database = `recaudo_transfer_${process.pid}_${name}`;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${database}`);
  });
  databases.push(database);
  const url = new URL(postgresUrl!);
  url.pathname = `/${database}`;
  return { ...base, DATABASE_URL: url.toString(), DATA_DIR: path.join(work, `${name}-unused`) };
}

function cli(env: NodeJS.ProcessEnv, ...args: string[]) {
  const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], { env, encoding: 'utf8', timeout: 180_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

async function startServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).ok) return { child, base };
    } catch {
      /* starting */
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

function api(base: string, key: string, method: string, url: string, body?: unknown) {
  return fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body ? { 'content-type': 'application/json', 'x-idempotency': `${Math.random()}` } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
}

/** An export file as {table: sorted rows}, the header and the trailer. */
function readExport(file: string) {
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
  const tables: Record<string, string[]> = {};
  let current = '';
  for (const item of lines.slice(1, -1)) {
    if (Array.isArray(item)) tables[current].push(JSON.stringify(item));
    else {
      current = item.table;
      tables[current] = [];
    }
  }
  for (const rows of Object.values(tables)) rows.sort();
  return { header: lines[0], tables, trailer: lines.at(-1) };
}

describe(`recaudo export / import (${ENGINE} to the other engine)`, { skip }, () => {
  const sourceEngine = ENGINE;
  const targetEngine = ENGINE === 'pglite' ? 'postgres' : 'pglite';
  let source: NodeJS.ProcessEnv;
  let target: NodeJS.ProcessEnv;
  const made = { key: '', company: '', customer: '', charge: '' };
  const exported = path.join(work, 'source.jsonl');

  before(async () => {
    source = await side('source', sourceEngine);
    target = await side('target', targetEngine);
    // Rows of every kind that matters: a company and its keys, a customer (accents), a card, a paid
    // charge (ledger entries checked per statement), a webhook (a sealed secret), stored replays.
    const server = await startServer(source);
    try {
      const created = cli(source, 'companies', 'create', '--name', 'Traslado SAS', '--json');
      assert.equal(created.code, 0, created.stderr);
      made.key = JSON.parse(created.stdout).keys.test;
      made.company = JSON.parse(created.stdout).company.id;
      const customer = await api(server.base, made.key, 'POST', '/v1/customers', {
        first_name: 'Ana María',
        last_name: 'Gómez',
        email: 'ana@example.com',
      });
      assert.equal(customer.status, 200);
      made.customer = (await customer.json()).id;
      const card = await api(server.base, made.key, 'POST', '/v1/cards', {
        card_number: '4242424242424242',
        expiration_month: '12',
        expiration_year: String(new Date().getUTCFullYear() + 3),
        cvv: '123',
        holder_name: 'Ana Gómez',
        customer_id: made.customer,
        authorization: true,
      });
      assert.equal(card.status, 200);
      const charge = await api(server.base, made.key, 'POST', '/v1/charges', {
        amount: 150000,
        title: 'Cuota de octubre',
        customer_id: made.customer,
        card_id: (await card.json()).id,
      });
      assert.equal(charge.status, 200);
      const paid = await charge.json();
      assert.equal(paid.status, 'paid');
      made.charge = paid.id;
      const webhook = await api(server.base, made.key, 'POST', '/v1/webhooks', {
        name: 'ERP',
        url: 'https://example.com/hook',
        events: ['charge.paid'],
      });
      assert.equal(webhook.status, 200);
      const connector = cli(
        source,
        'connectors',
        'set',
        '--company',
        made.company,
        '--env',
        'test',
        '--public-key',
        'pub_test_public0042',
        '--private-key',
        'prv_test_secret0042',
        '--events-secret',
        'test_events_secret0042',
        '--integrity-secret',
        'test_integrity_secret0042',
      );
      assert.equal(connector.code, 0, connector.stderr);
    } finally {
      await stopServer(server.child);
    }
  });

  after(async () => {
    if (postgresUrl)
      for (const database of databases) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('export writes every table with its row count, and says where secrets are sealed', () => {
    const out = cli(source, 'export', '--out', exported);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stderr, /exported \d+ tables, [\d,]+ rows/);
    assert.equal(fs.statSync(exported).mode & 0o777, 0o600, 'an export holds keys and sealed secrets: owner only');
    assert.ok(!fs.existsSync(`${exported}.partial`));
    const { header, tables, trailer } = readExport(exported);
    assert.equal(header.recaudo_export, 1);
    assert.equal(header.engine, sourceEngine);
    assert.ok(header.migrations.includes('0001_platform'));
    for (const [table, rows] of Object.entries(trailer.tables)) assert.equal(tables[table].length, rows, table);
    assert.equal(trailer.tables.companies, 1);
    assert.equal(trailer.tables.customers, 1);
    assert.equal(trailer.tables.charges, 1);
    assert.equal(trailer.tables.webhooks, 1);
    assert.ok(trailer.tables.ledger_entries >= 2, 'a paid charge moved money');
    assert.ok(trailer.tables.banks > 0, 'the seeded catalogues travel too');
    assert.equal(trailer.sealed_key_ids.length, 1, 'the connector key is sealed under the one SECRETS_KEY');
    // Parents before children: the company before its customers, a charge before its refunds' table.
    const order = Object.keys(tables);
    assert.ok(order.indexOf('companies') < order.indexOf('customers'));
    assert.ok(order.indexOf('ledger_transactions') < order.indexOf('ledger_entries'));
  });

  test('import into the other engine holds exactly the same rows, and the service serves them', async () => {
    // A truncated file first: refused as a whole, so the full import below still finds no company.
    const truncated = path.join(work, 'truncated.jsonl');
    const lines = fs.readFileSync(exported, 'utf8').trimEnd().split('\n');
    fs.writeFileSync(truncated, `${lines.slice(0, -1).join('\n')}\n`);
    const refused = cli(target, 'import', '--in', truncated);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /incomplete \(nothing was imported\)/);
    // Another SECRETS_KEY on this side could not open the connector's keys: refused before the commit.
    const otherKey = cli({ ...target, SECRETS_KEY: randomBytes(32).toString('hex') }, 'import', '--in', exported);
    assert.equal(otherKey.code, 2, otherKey.stderr);
    assert.match(otherKey.stderr, /sealed under key [0-9a-f]{8}, which this process does not hold: set SECRETS_KEY .* nothing was imported/);

    const out = cli(target, 'import', '--in', exported);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stderr, new RegExp(`imported \\d+ tables, [\\d,]+ rows \\(exported from ${sourceEngine}`));

    const roundTrip = path.join(work, 'target.jsonl');
    const again = cli(target, 'export', '--out', roundTrip);
    assert.equal(again.code, 0, again.stderr);
    const before = readExport(exported);
    const after = readExport(roundTrip);
    assert.equal(after.header.engine, targetEngine);
    assert.deepEqual(after.header.migrations, before.header.migrations);
    assert.deepEqual(after.trailer.tables, before.trailer.tables, 'row counts per table');
    assert.deepEqual(after.trailer.sequences, before.trailer.sequences);
    for (const table of Object.keys(before.tables)) assert.deepEqual(after.tables[table], before.tables[table], `rows of ${table}`);

    // The same key, customer and paid charge through the API of a server on the target.
    const server = await startServer(target);
    try {
      const customer = await api(server.base, made.key, 'GET', `/v1/customers/${made.customer}`);
      assert.equal(customer.status, 200);
      assert.equal((await customer.json()).first_name, 'Ana María');
      const charge = await api(server.base, made.key, 'GET', `/v1/charges/${made.charge}`);
      assert.equal(charge.status, 200);
      assert.equal((await charge.json()).status, 'paid');
      const fresh = await api(server.base, made.key, 'POST', '/v1/customers', { first_name: 'Luis', email: 'luis@example.com' });
      assert.equal(fresh.status, 200, 'new rows go in after the imported ones');
    } finally {
      await stopServer(server.child);
    }
    // A sealed secret opens on the target: the same SECRETS_KEY.
    const shown = cli(target, 'connectors', 'show', '--company', made.company, '--env', 'test', '--json');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(JSON.parse(shown.stdout).connector.private_key, { set: true, last4: '0042' });
  });

  test('a database that already holds companies is refused, and so is an export taken at another migration', () => {
    const out = cli(target, 'import', '--in', exported);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /already holds 1 company: import only into a fresh database/);

    const lines = fs.readFileSync(exported, 'utf8').split('\n');
    const header = JSON.parse(lines[0]);
    header.migrations = header.migrations.slice(0, -1);
    const older = path.join(work, 'older.jsonl');
    fs.writeFileSync(older, [JSON.stringify(header), ...lines.slice(1)].join('\n'));
    // Checked first: the migration is the first thing an import compares.
    const other = cli(target, 'import', '--in', older);
    assert.equal(other.code, 2);
    assert.match(other.stderr, /another migration than this database's .* export again with this release/);
  });
});
