import { sql } from 'kysely';
import type { Executor } from './database.ts';

/**
 * Where every table goes on a distributed PostgreSQL (Citus), and the rules that keep the schema
 * ready for it (docs/scaling.md). test/distribution.test.ts reads the catalog of the engine under
 * test and fails on any violation, so a new table or key has to be placed here on purpose.
 *
 * - distributed: every table with a NOT NULL `company_id` that is not listed below, sharded by
 *   company_id and colocated. Its primary key and every unique index lead with company_id; its
 *   foreign keys to other distributed tables carry company_id.
 * - reference: replicated to every node; read by everyone, written rarely.
 * - local: stays on the coordinator only (platform bookkeeping, the global queues).
 */
export const DISTRIBUTION_COLUMN = 'company_id';

export type Placement = 'distributed' | 'reference' | 'local';

/** Shared tables, replicated to every node. Value: why. */
export const REFERENCE_TABLES: Readonly<Record<string, string>> = {
  companies: 'the tenants themselves (the distribution key): every tenant table references it, the payer pages read its name',
  banks: 'code list of banks and wallets, seeded, the same for every company',
  message_templates: 'platform message templates, seeded, the same for every company',
  api_keys: 'read by key hash on every request before the company is known (auth); few rows, written only when keys rotate',
};

/** Tables kept on the coordinator only. Value: why. */
export const LOCAL_TABLES: Readonly<Record<string, string>> = {
  schema_migrations: 'migration bookkeeping of the database as a whole',
  jobs: 'the platform queue: inserted in the business transaction, claimed with FOR UPDATE SKIP LOCKED by any worker; a job carries its company in its payload and its handler works on that shard',
  rate_limit_windows: 'unlogged per-key counters shared by every API process; never joined with tenant rows',
  connector_events:
    'the inbox of provider callbacks, recorded before the company is known (company_id may be null); read by company for the connector log',
};

/**
 * Unique indexes of distributed tables that do not lead with company_id: global lookups, each with
 * how it routes once the tables are distributed. Keyed by index name.
 */
export const GLOBAL_UNIQUE_KEYS: Readonly<Record<string, string>> = {
  connect_links_token:
    'the public /connect/{token} page finds its link by token alone; under Citus the token moves to a reference routing table (token → company_id, environment, id)',
  subscriptions_page_token:
    'the public plan page finds the subscription its form created by token alone; under Citus the same routing table as connect_links_token',
  connector_settings_events_token:
    'the provider posts events to /v1/rails/{name}/events/{token}, found by token alone; under Citus the same routing table as connect_links_token',
  whatsapp_connectors_events_token:
    'Meta posts WhatsApp notifications to /v1/rails/whatsapp/events/{token}, found by token alone; under Citus the same routing table as connect_links_token',
  ledger_accounts_id:
    'target of ledger_entries.account_id, which may name another company\u2019s wallet account (splits, docs/ledger.md); see CROSS_TENANT_FOREIGN_KEYS',
};

/** Foreign keys between distributed tables without company_id. Keyed by constraint name. */
export const CROSS_TENANT_FOREIGN_KEYS: Readonly<Record<string, string>> = {
  ledger_entries_account_id_fkey:
    'a split posts an entry in the paying company\u2019s transaction on the receiving company\u2019s wallet account (docs/ledger.md "Where a split goes"); under Citus the split becomes one transaction in each company\u2019s books and the constraint is dropped',
};

export interface CatalogTable {
  name: string;
  /** null: no company_id column; otherwise whether it is NOT NULL. */
  companyIdNotNull: boolean | null;
}
export interface CatalogUnique {
  table: string;
  name: string;
  primary: boolean;
  /** Key columns in order; null for an expression. */
  columns: (string | null)[];
}
export interface CatalogForeignKey {
  table: string;
  name: string;
  references: string;
  columns: string[];
  referencedColumns: string[];
}
export interface Catalog {
  tables: CatalogTable[];
  uniques: CatalogUnique[];
  foreignKeys: CatalogForeignKey[];
}

/** The tables, unique indexes and foreign keys of the public schema (partitions are checked through their parent). */
export async function readCatalog(db: Executor): Promise<Catalog> {
  const tables = await sql<{ name: string; company_id_not_null: boolean | null }>`
    SELECT c.relname AS name,
      (SELECT a.attnotnull FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = ${DISTRIBUTION_COLUMN} AND NOT a.attisdropped) AS company_id_not_null
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname`.execute(db);
  const uniques = await sql<{ table: string; name: string; primary: boolean; columns: (string | null)[] }>`
    SELECT t.relname AS table, ix.relname AS name, i.indisprimary AS primary,
      ARRAY(SELECT a.attname FROM unnest(i.indkey[0:i.indnkeyatts - 1]) WITH ORDINALITY k(attnum, ord)
            LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum <> 0
            ORDER BY k.ord) AS columns
    FROM pg_index i
    JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_class ix ON ix.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = 'public' AND i.indisunique AND NOT t.relispartition
    ORDER BY t.relname, ix.relname`.execute(db);
  const foreignKeys = await sql<{ table: string; name: string; references: string; columns: string[]; referenced_columns: string[] }>`
    SELECT t.relname AS table, co.conname AS name, r.relname AS references,
      ARRAY(SELECT a.attname FROM unnest(co.conkey) WITH ORDINALITY k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.attnum ORDER BY k.ord) AS columns,
      ARRAY(SELECT a.attname FROM unnest(co.confkey) WITH ORDINALITY k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = co.confrelid AND a.attnum = k.attnum ORDER BY k.ord) AS referenced_columns
    FROM pg_constraint co
    JOIN pg_class t ON t.oid = co.conrelid
    JOIN pg_class r ON r.oid = co.confrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = 'public' AND co.contype = 'f' AND NOT t.relispartition
    ORDER BY t.relname, co.conname`.execute(db);
  return {
    tables: tables.rows.map((r) => ({ name: r.name, companyIdNotNull: r.company_id_not_null })),
    uniques: uniques.rows.map((r) => ({ ...r, columns: arrayOf(r.columns) })),
    foreignKeys: foreignKeys.rows.map((r) => ({
      table: r.table,
      name: r.name,
      references: r.references,
      columns: arrayOf(r.columns) as string[],
      referencedColumns: arrayOf(r.referenced_columns) as string[],
    })),
  };
}

// A name[] may arrive as a JS array or as its text form ({a,b}) depending on the driver.
function arrayOf(value: unknown): (string | null)[] {
  if (Array.isArray(value)) return value as (string | null)[];
  const text = String(value ?? '');
  if (text === '{}' || text === '') return [];
  return text
    .replace(/^\{|\}$/g, '')
    .split(',')
    .map((s) => (s === 'NULL' ? null : s.replace(/^"|"$/g, '')));
}

/** Where a table goes; null when it has no company_id and is listed nowhere (unclassified). */
export function placementOf(table: CatalogTable): Placement | null {
  if (Object.hasOwn(REFERENCE_TABLES, table.name)) return 'reference';
  if (Object.hasOwn(LOCAL_TABLES, table.name)) return 'local';
  return table.companyIdNotNull === null ? null : 'distributed';
}

/** Foreign key targets each placement may have on Citus. */
const ALLOWED_TARGETS: Record<Placement, Placement[]> = {
  distributed: ['distributed', 'reference'],
  reference: ['reference'],
  local: ['local', 'reference'],
};

/** Every breach of the rules above, one line each (empty: ready to distribute). */
export function distributionViolations(catalog: Catalog): string[] {
  const out: string[] = [];
  const placement = new Map<string, Placement | null>();
  for (const t of catalog.tables) {
    const p = placementOf(t);
    placement.set(t.name, p);
    if (p === null) out.push(`${t.name}: unclassified (no ${DISTRIBUTION_COLUMN}: add it to REFERENCE_TABLES or LOCAL_TABLES with a reason)`);
    if (p === 'distributed' && t.companyIdNotNull === false)
      out.push(`${t.name}: ${DISTRIBUTION_COLUMN} is nullable (a distribution column cannot be null)`);
  }
  for (const name of [...Object.keys(REFERENCE_TABLES), ...Object.keys(LOCAL_TABLES)]) {
    if (!placement.has(name)) out.push(`${name}: classified but no such table (remove it from distribution.ts)`);
  }
  const distributed = (table: string) => placement.get(table) === 'distributed';

  for (const u of catalog.uniques) {
    if (!distributed(u.table)) continue;
    const leads = u.columns[0] === DISTRIBUTION_COLUMN;
    const allowed = Object.hasOwn(GLOBAL_UNIQUE_KEYS, u.name);
    const what = `${u.table}: ${u.primary ? 'primary key' : 'unique index'} ${u.name} (${u.columns.map((c) => c ?? '<expression>').join(', ')})`;
    if (!leads && !allowed) out.push(`${what} does not lead with ${DISTRIBUTION_COLUMN}`);
    if (leads && allowed) out.push(`${what} leads with ${DISTRIBUTION_COLUMN}: remove it from GLOBAL_UNIQUE_KEYS`);
  }
  for (const name of Object.keys(GLOBAL_UNIQUE_KEYS)) {
    if (!catalog.uniques.some((u) => u.name === name)) out.push(`${name}: in GLOBAL_UNIQUE_KEYS but no such unique index`);
  }

  for (const fk of catalog.foreignKeys) {
    const from = placement.get(fk.table);
    const to = placement.get(fk.references);
    if (!from || !to) continue; // an unclassified table is reported above
    const what = `${fk.table}: foreign key ${fk.name} (${fk.columns.join(', ')}) → ${fk.references} (${fk.referencedColumns.join(', ')})`;
    if (!ALLOWED_TARGETS[from].includes(to)) {
      out.push(`${what}: a ${from} table cannot reference a ${to} table`);
      continue;
    }
    if (from !== 'distributed' || to !== 'distributed') continue;
    const i = fk.columns.indexOf(DISTRIBUTION_COLUMN);
    const carries = i >= 0 && fk.referencedColumns[i] === DISTRIBUTION_COLUMN;
    const allowed = Object.hasOwn(CROSS_TENANT_FOREIGN_KEYS, fk.name);
    if (!carries && !allowed) out.push(`${what} does not carry ${DISTRIBUTION_COLUMN} to ${DISTRIBUTION_COLUMN}`);
    if (carries && allowed) out.push(`${what} carries ${DISTRIBUTION_COLUMN}: remove it from CROSS_TENANT_FOREIGN_KEYS`);
  }
  for (const name of Object.keys(CROSS_TENANT_FOREIGN_KEYS)) {
    if (!catalog.foreignKeys.some((fk) => fk.name === name)) out.push(`${name}: in CROSS_TENANT_FOREIGN_KEYS but no such foreign key`);
  }
  return out;
}

/**
 * The Citus statements that place every table (docs/scaling.md "Step 3"): reference tables first
 * (foreign keys point at them), then the distributed tables colocated with `companies`' tenants,
 * then the coordinator-local ones. Printed by scripts/citus-plan.ts.
 */
export function citusPlan(catalog: Catalog): string[] {
  const byPlacement = (p: Placement) => catalog.tables.filter((t) => placementOf(t) === p).map((t) => t.name);
  const distributed = byPlacement('distributed');
  const anchor = distributed.includes('customers') ? 'customers' : distributed[0];
  const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
  return [
    ...byPlacement('reference').map((t) => `SELECT create_reference_table(${lit(t)});`),
    ...(anchor ? [`SELECT create_distributed_table(${lit(anchor)}, ${lit(DISTRIBUTION_COLUMN)});`] : []),
    ...distributed
      .filter((t) => t !== anchor)
      .map((t) => `SELECT create_distributed_table(${lit(t)}, ${lit(DISTRIBUTION_COLUMN)}, colocate_with => ${lit(anchor)});`),
    ...byPlacement('local').map((t) => `SELECT citus_add_local_table_to_metadata(${lit(t)});`),
  ];
}
