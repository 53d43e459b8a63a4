/**
 * Micro-benchmark of the ledger's hot accounts (docs/ledger.md "Hot accounts"): concurrent
 * collections of ONE company on PostgreSQL, each in its own transaction shaped like a charge's
 * final save — the posting, then a few more statements before the commit (events, outbox, the
 * idempotency answer), during which the old ledger held the company's balance rows locked.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/ledger-contention.ts \
 *     [--root /path/to/a/checkout] [--concurrency 1,8,32] [--seconds 5] [--after 3] [--splits]
 *
 * --root: the checkout whose ledger is measured (default: this one), e.g. a `git worktree` of an
 * older commit, to compare before/after on the same machine. A fresh database is created next to
 * DATABASE_URL's, migrated with that checkout's migrations, and dropped at the end. Once a second a
 * background loop does what the balance.updated job does to the ledger (closes the notice, and
 * rolls up when the checkout has roll-up.ts), so openers of notices and roll-ups are in the
 * measure. "baseline" runs the same transaction with one INSERT instead of the posting: the
 * ceiling for this shape on this machine.
 */
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';

const args = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const ROOT = path.resolve(opt('root', path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')));
const LEVELS = opt('concurrency', '1,8,32')
  .split(',')
  .map((n) => Number(n));
const SECONDS = Number(opt('seconds', '5'));
const AFTER = Number(opt('after', '3'));
const SPLITS = args.includes('--splits');
const ADMIN_URL = process.env.DATABASE_URL ?? '';
if (!ADMIN_URL) throw new Error('DATABASE_URL (a PostgreSQL to create the bench database next to) is required');

const load = (rel: string) => import(pathToFileURL(path.join(ROOT, rel)).href);

async function main(): Promise<void> {
  const { openDatabase } = await load('src/platform/db/database.ts');
  const { migrate } = await load('src/platform/db/migrate.ts');
  const { createCompany } = await load('src/modules/companies/service.ts');
  const ledger = await load('src/modules/ledger/service.ts');
  const hasRollUp = fs.existsSync(path.join(ROOT, 'src/modules/ledger/roll-up.ts'));
  const rollUp = hasRollUp ? (await load('src/modules/ledger/roll-up.ts')).rollUp : null;

  const name = `ledger_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), poolSize: Math.max(...LEVELS) + 2 });
  const db = database.db;
  try {
    await migrate(database);
    await sql`CREATE TABLE bench_baseline (id text PRIMARY KEY, at timestamptz NOT NULL)`.execute(db);
    const clock = { now: () => new Date() };
    const jobs = { enqueue: async () => 'job' };
    const company = await createCompany(db, { name: 'Bench Caliente SAS' }, clock.now());
    const partner = await createCompany(db, { name: 'Bench Socio SAS' }, clock.now());
    const scope = { companyId: company.company.id, environment: 'test', deps: { clock, jobs } };
    const tenant = { companyId: company.company.id, environment: 'test' };

    async function charge(): Promise<void> {
      await db.transaction().execute(async (trx: any) => {
        await ledger.recordCollection(trx, scope, {
          currency: 'COP',
          amount: 10_000_00n,
          source: { type: 'bench', id: randomUUID() },
          splits: SPLITS ? [{ walletCompanyId: partner.company.id, amount: 1_000_00n }] : [],
        });
        for (let i = 0; i < AFTER; i++) await sql`SELECT 1`.execute(trx);
      });
    }
    async function baseline(): Promise<void> {
      await db.transaction().execute(async (trx: any) => {
        await sql`INSERT INTO bench_baseline (id, at) VALUES (${randomUUID()}, now())`.execute(trx);
        for (let i = 0; i < AFTER; i++) await sql`SELECT 1`.execute(trx);
      });
    }

    // What the balance.updated job does to the ledger, once a second.
    let stop = false;
    const background = (async () => {
      while (!stop) {
        await new Promise((r) => setTimeout(r, 1000));
        await sql`DELETE FROM balance_notices WHERE company_id = ANY(${[company.company.id, partner.company.id]}::text[])`.execute(db);
        if (rollUp)
          for (const companyId of [company.company.id, partner.company.id]) await rollUp(db, { ...tenant, companyId }, { now: clock.now() });
      }
    })();

    async function run(label: string, fn: () => Promise<void>, concurrency: number) {
      const latencies: number[] = [];
      const end = Date.now() + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (Date.now() < end) {
            const t = performance.now();
            await fn();
            latencies.push(performance.now() - t);
          }
        }),
      );
      latencies.sort((a, b) => a - b);
      const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))].toFixed(1);
      return { label, concurrency, committed: latencies.length, per_second: Math.round(latencies.length / SECONDS), p50_ms: q(0.5), p99_ms: q(0.99) };
    }

    await run('warm-up', charge, 4);
    const rows = [];
    for (const c of LEVELS) {
      rows.push(await run('baseline', baseline, c));
      rows.push(await run(SPLITS ? 'collections+split' : 'collections', charge, c));
    }
    stop = true;
    await background;
    const audit = await ledger.auditLedger(db, [company.company.id, partner.company.id]);
    const [cop] = await ledger.getBalances(db, tenant);
    console.log(`ledger-contention root=${ROOT} roll-up=${hasRollUp} after=${AFTER} seconds=${SECONDS}`);
    console.table(rows);
    for (const c of LEVELS) {
      const b = rows.find((r) => r.label === 'baseline' && r.concurrency === c)!;
      const l = rows.find((r) => r.label !== 'baseline' && r.concurrency === c)!;
      console.log(`concurrency ${c}: ${l.per_second}/s vs baseline ${b.per_second}/s = ${(l.per_second / b.per_second).toFixed(2)}`);
    }
    console.log('audit', JSON.stringify(audit), 'available', cop.available.toString());
  } finally {
    await database.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
