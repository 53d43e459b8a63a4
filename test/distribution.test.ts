import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { createHarness, ENGINE, type Harness } from './harness.ts';
import { listMigrations } from '../src/platform/db/migrate.ts';
import {
  CROSS_TENANT_FOREIGN_KEYS,
  GLOBAL_UNIQUE_KEYS,
  LOCAL_TABLES,
  REFERENCE_TABLES,
  citusPlan,
  distributionViolations,
  placementOf,
  readCatalog,
} from '../src/platform/db/distribution.ts';

// docs/scaling.md: tenant tables shard by company_id; every table is placed on purpose.
describe('ready to distribute', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('every table is classified, tenant keys lead with company_id, tenant foreign keys carry it', async () => {
    const catalog = await readCatalog(h.runtime.deps.database.db);
    assert.ok(
      catalog.tables.some((t) => t.name === 'charges'),
      'the catalog was read',
    );
    assert.deepEqual(distributionViolations(catalog), []);
  });

  test('every allowlisted exception says why', () => {
    for (const [name, reason] of Object.entries({ ...REFERENCE_TABLES, ...LOCAL_TABLES, ...GLOBAL_UNIQUE_KEYS, ...CROSS_TENANT_FOREIGN_KEYS })) {
      assert.ok(reason.length >= 30, `${name} needs a reason`);
    }
  });

  test('the check reports each kind of violation (probe tables in a rolled-back transaction)', async () => {
    const sentinel = new Error('rollback');
    let found: string[] = [];
    await h.runtime.deps.database.db
      .transaction()
      .execute(async (trx) => {
        await sql`CREATE TABLE dist_probe_unclassified (x integer)`.execute(trx);
        await sql`CREATE TABLE dist_probe_nullable (company_id text, id text)`.execute(trx);
        await sql`CREATE TABLE dist_probe_parent (company_id text NOT NULL, environment text NOT NULL, id text NOT NULL,
          PRIMARY KEY (company_id, environment, id))`.execute(trx);
        await sql`CREATE UNIQUE INDEX dist_probe_parent_id ON dist_probe_parent (id)`.execute(trx);
        await sql`CREATE TABLE dist_probe_child (company_id text NOT NULL, environment text NOT NULL, id text PRIMARY KEY,
          parent_id text REFERENCES dist_probe_parent (id),
          other_company text NOT NULL, other_environment text NOT NULL, other_id text NOT NULL,
          FOREIGN KEY (other_company, other_environment, other_id) REFERENCES dist_probe_parent (company_id, environment, id))`.execute(trx);
        await sql`CREATE TABLE dist_probe_good (company_id text NOT NULL, environment text NOT NULL, id text NOT NULL, parent_id text NOT NULL,
          PRIMARY KEY (company_id, environment, id),
          FOREIGN KEY (company_id, environment, parent_id) REFERENCES dist_probe_parent (company_id, environment, id))`.execute(trx);
        await sql`CREATE UNIQUE INDEX dist_probe_good_expr ON dist_probe_good (lower(id))`.execute(trx);
        found = distributionViolations(await readCatalog(trx)).filter((v) => v.startsWith('dist_probe'));
        throw sentinel;
      })
      .catch((error) => {
        if (error !== sentinel) throw error;
      });
    assert.deepEqual(found.sort(), [
      'dist_probe_child: foreign key dist_probe_child_other_company_other_environment_other_id_fkey (other_company, other_environment, other_id) → dist_probe_parent (company_id, environment, id) does not carry company_id to company_id',
      'dist_probe_child: foreign key dist_probe_child_parent_id_fkey (parent_id) → dist_probe_parent (id) does not carry company_id to company_id',
      'dist_probe_child: primary key dist_probe_child_pkey (id) does not lead with company_id',
      'dist_probe_good: unique index dist_probe_good_expr (<expression>) does not lead with company_id',
      'dist_probe_nullable: company_id is nullable (a distribution column cannot be null)',
      'dist_probe_parent: unique index dist_probe_parent_id (id) does not lead with company_id',
      'dist_probe_unclassified: unclassified (no company_id: add it to REFERENCE_TABLES or LOCAL_TABLES with a reason)',
    ]);
    const after = await readCatalog(h.runtime.deps.database.db);
    assert.ok(!after.tables.some((t) => t.name.startsWith('dist_probe')), 'the probes were rolled back');
  });

  test('a stale allowlist entry is a violation too', async () => {
    const catalog = await readCatalog(h.runtime.deps.database.db);
    const withoutToken = { ...catalog, uniques: catalog.uniques.filter((u) => u.name !== 'connect_links_token') };
    assert.deepEqual(distributionViolations(withoutToken), ['connect_links_token: in GLOBAL_UNIQUE_KEYS but no such unique index']);
    const withoutBanks = { ...catalog, tables: catalog.tables.filter((t) => t.name !== 'banks') };
    assert.deepEqual(distributionViolations(withoutBanks), ['banks: classified but no such table (remove it from distribution.ts)']);
  });

  test('the Citus plan places every table exactly once, distributed ones by company_id', async () => {
    const catalog = await readCatalog(h.runtime.deps.database.db);
    const plan = citusPlan(catalog);
    for (const t of catalog.tables) {
      const lines = plan.filter((line) => line.includes(`('${t.name}'`));
      assert.equal(lines.length, 1, `${t.name}: ${lines.join(' | ')}`);
      if (placementOf(t) === 'distributed') assert.match(lines[0], /create_distributed_table\('[a-z_0-9]+', 'company_id'/);
    }
    assert.match(plan[0], /create_reference_table/, 'reference tables first: the foreign keys point at them');
    assert.ok(plan.includes("SELECT create_distributed_table('charges', 'company_id', colocate_with => 'customers');"));
    assert.ok(plan.includes("SELECT citus_add_local_table_to_metadata('jobs');"));
  });
});

/**
 * A scratch database in one transaction that is rolled back: a fresh in-memory PGlite, or a fresh
 * schema of the PostgreSQL test database (nothing outlives the test, even through a pooler).
 */
async function scratch(): Promise<{ run: (script: string) => Promise<Record<string, unknown>[]>; close: () => Promise<void> }> {
  if (ENGINE === 'pglite') {
    const lite = await PGlite.create();
    const run = async (script: string) => ((await lite.exec(script)).at(-1)?.rows ?? []) as Record<string, unknown>[];
    await run('BEGIN');
    return { run, close: () => lite.close() };
  }
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
  const run = async (script: string) => {
    const result = (await client.query(script)) as unknown as pg.QueryResult | pg.QueryResult[];
    return ((Array.isArray(result) ? result.at(-1) : result)?.rows ?? []) as Record<string, unknown>[];
  };
  const schema = `dist_scratch_${randomBytes(6).toString('hex')}`;
  await run(`BEGIN; CREATE SCHEMA ${schema}; SET LOCAL search_path TO ${schema}`);
  return {
    run,
    close: async () => {
      await run('ROLLBACK').catch(() => {});
      await client.end();
    },
  };
}

describe('migration 0038 on existing rows', () => {
  test('keeps every row, re-keys by tenant, and the cycle → subscription key now checks the tenant', async () => {
    const db = await scratch();
    try {
      const all = listMigrations();
      const mine = all.findIndex((m) => m.version === '0038_distribution_keys');
      assert.ok(mine > 0, 'migration 0038 is listed');
      for (const m of all.slice(0, mine)) await db.run(fs.readFileSync(m.file, 'utf8'));
      await db.run(`
        INSERT INTO companies (id, name) VALUES ('co_a', 'A'), ('co_b', 'B');
        INSERT INTO plans (company_id, environment, id, name, currency, amount, frequency, created_at, updated_at)
          VALUES ('co_a', 'test', 'plan_1', 'Plan', 'COP', 1000, 'monthly', now(), now());
        INSERT INTO subscriptions (company_id, environment, id, customer_id, status, name, currency, amount, frequency, payment_mode,
            anchor_date, start_date, remember_to_pay_before, cancel_after_no_payment_before, created_at, updated_at, page_token)
          VALUES ('co_a', 'test', 'sub_1', 'cus_1', 'active', 'S', 'COP', 1000, 'monthly', 'request', '2026-01-01', '2026-01-01', 3, 3, now(), now(), 'tok_1');
        INSERT INTO subscription_cycles (company_id, environment, subscription_id, cycle, due_at, amount, status, created_at, payment_id, charge_id)
          VALUES ('co_a', 'test', 'sub_1', 1, now(), 1000, 'paid', now(), 'pay_1', 'ch_1'),
                 ('co_a', 'test', 'sub_1', 2, now(), 1000, 'open', now(), NULL, NULL);
        INSERT INTO test_clocks (company_id, environment, id, frozen_time, status, created_at, updated_at)
          VALUES ('co_a', 'test', 'clock_1', now(), 'ready', now(), now());
        INSERT INTO customer_sessions (company_id, environment, id, customer_id, key_id, token_hash, expires_at, created_at)
          VALUES ('co_a', 'test', 'cs_1', 'cus_1', 'key_1', 'hash_1', now(), now()), ('co_b', 'live', 'cs_2', 'cus_2', 'key_2', 'hash_2', now(), now());
        INSERT INTO customer_login_codes (company_id, environment, id, customer_id, phone, code_hash, expires_at, created_at)
          VALUES ('co_a', 'test', 'clc_1', 'cus_1', '+573001112233', 'h', now(), now());
        INSERT INTO session_approval_requests (company_id, environment, charge_id, customer_id, phone, created_at)
          VALUES ('co_a', 'test', 'ch_9', 'cus_1', '+573001112233', now());
        INSERT INTO customers (company_id, environment, id, type, created_at, updated_at)
          VALUES ('co_a', 'test', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'natural', now(), now());`);
      const tables = [
        'plans',
        'subscriptions',
        'subscription_cycles',
        'test_clocks',
        'customer_sessions',
        'customer_login_codes',
        'session_approval_requests',
        'customers',
      ];
      const count = async () => {
        const counts: Record<string, number> = {};
        for (const t of tables) counts[t] = Number((await db.run(`SELECT count(*) AS n FROM ${t}`))[0].n);
        return counts;
      };
      const before = await count();
      assert.deepEqual(Object.values(before), [1, 1, 2, 1, 2, 1, 1, 1]);

      await db.run(fs.readFileSync(all[mine].file, 'utf8'));

      assert.deepEqual(await count(), before, 'no row lost');
      const pk = await db.run(`
        SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns
        FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(attnum, ord), pg_attribute a
        WHERE i.indrelid = 'subscription_cycles'::regclass AND i.indisprimary AND a.attrelid = i.indrelid AND a.attnum = k.attnum`);
      assert.equal(pk[0].columns, 'company_id,environment,subscription_id,cycle');
      // Before 0038 a cycle could name another company's subscription; now the key carries the tenant.
      await db.run('SAVEPOINT probe');
      await assert.rejects(
        db.run(`INSERT INTO subscription_cycles (company_id, environment, subscription_id, cycle, due_at, amount, status, created_at)
                VALUES ('co_b', 'test', 'sub_1', 3, now(), 1000, 'open', now())`),
        /foreign key/,
      );
      await db.run('ROLLBACK TO SAVEPOINT probe');
      // Lookups by id alone stay indexed.
      const plain = await db.run(
        `SELECT count(*) AS n FROM pg_indexes WHERE schemaname = current_schema() AND indexname IN ('charges_id', 'plans_id', 'subscriptions_id', 'subscription_cycles_charge_id')`,
      );
      assert.equal(Number(plain[0].n), 4);
    } finally {
      await db.close();
    }
  });
});
