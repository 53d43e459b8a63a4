import { sql, type Kysely, type Transaction } from 'kysely';

/**
 * Copies every table of one database into another, whatever the two engines (docs/deploy.md
 * "Moving from the embedded engine to PostgreSQL"): `recaudo export` writes a JSON-lines file,
 * `recaudo import` loads it into a database at the same migration.
 *
 * The file, one JSON value a line:
 *   {"recaudo_export":1, "engine", "exported_at", "migrations": [...]}    the header
 *   {"table": NAME, "columns": [...]}                                       then each table's rows,
 *   ["text", null, ...]                                                     one array each
 *   {"end": true, "tables": {NAME: rows}, "sequences": {NAME: [value, called]}, "sealed_key_ids": [...]}
 * Every value travels in PostgreSQL's own text form (`column::text`) and goes back in through the
 * column type's input function, so bigint, numeric, bytea, jsonb, arrays and timestamps come back
 * exactly. Tables come in foreign-key order (parents first); schema_migrations is the header.
 */

export const EXPORT_FORMAT = 1;

export interface TableInfo {
  name: string;
  /** Columns a row is written to (generated columns are left out: the database computes them). */
  columns: string[];
  /** Each column's SQL type (format_type), by name. */
  types: Record<string, string>;
  /** An identity column GENERATED ALWAYS: inserting it needs OVERRIDING SYSTEM VALUE. */
  identityAlways: boolean;
}

export interface ExportHeader {
  recaudo_export: number;
  engine: string;
  exported_at: string;
  migrations: string[];
}

export interface ExportTrailer {
  end: true;
  tables: Record<string, number>;
  sequences: Record<string, [string, boolean]>;
  /** Key ids (docs/operations.md "Secrets at rest") of the sealed values found: the target must hold those keys. */
  sealed_key_ids: string[];
}

export interface TransferProgress {
  /** Rows of a table copied so far (every ten thousand), and once more when it is done. */
  rows(table: string, done: number, finished: boolean): void;
}

export class TransferError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransferError';
  }
}

// A sealed secret's envelope names its key (src/platform/secrets.ts): v1.<key id>.<nonce>.<tag>.<data>
const SEALED_KEY_ID = /^v1\.([0-9a-f]{8})\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/;
const FETCH_ROWS = 1000;
// Parameters per INSERT stay well under the protocol's 65,535.
const PARAMS_PER_INSERT = 20_000;
const PROGRESS_EVERY = 10_000;

type Executor = Kysely<any> | Transaction<any>;

async function rowsOf<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T[]> {
  return (await query.execute(db)).rows as T[];
}

/** The tables of the current schema, parents before children, with their writable columns. */
export async function listTables(db: Executor): Promise<TableInfo[]> {
  const tables = await rowsOf<{ name: string }>(
    db,
    sql`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
           AND c.relname <> 'schema_migrations'
         ORDER BY c.relname`,
  );
  const columns = await rowsOf<{ table: string; name: string; type: string; generated: string; identity: string }>(
    db,
    sql`SELECT c.relname AS table, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
               a.attgenerated::text AS generated, a.attidentity::text AS identity
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
         ORDER BY c.relname, a.attnum`,
  );
  const references = await rowsOf<{ child: string; parent: string }>(
    db,
    sql`SELECT ch.relname AS child, pa.relname AS parent
          FROM pg_constraint k JOIN pg_class ch ON ch.oid = k.conrelid JOIN pg_class pa ON pa.oid = k.confrelid
          JOIN pg_namespace n ON n.oid = ch.relnamespace
         WHERE k.contype = 'f' AND n.nspname = current_schema()`,
  );

  const info = new Map<string, TableInfo>(tables.map((t) => [t.name, { name: t.name, columns: [], types: {}, identityAlways: false }]));
  for (const c of columns) {
    const table = info.get(c.table);
    if (!table) continue;
    if (c.generated !== '') continue;
    table.columns.push(c.name);
    table.types[c.name] = c.type;
    if (c.identity === 'a') table.identityAlways = true;
  }

  // Parents first (Kahn's algorithm, alphabetical among equals so two exports of one database
  // list tables alike). A table referencing itself is loaded in one statement, which PostgreSQL
  // checks at its end, so self references need no order.
  const parents = new Map<string, Set<string>>([...info.keys()].map((n) => [n, new Set<string>()]));
  for (const r of references) if (r.child !== r.parent && info.has(r.parent)) parents.get(r.child)?.add(r.parent);
  const ordered: TableInfo[] = [];
  const placed = new Set<string>();
  while (ordered.length < info.size) {
    const ready = [...info.keys()].filter((n) => !placed.has(n) && [...parents.get(n)!].every((p) => placed.has(p)));
    if (ready.length === 0) {
      const left = [...info.keys()].filter((n) => !placed.has(n));
      throw new TransferError(`foreign keys form a cycle among ${left.join(', ')}: no load order exists`);
    }
    for (const n of ready.sort()) {
      ordered.push(info.get(n)!);
      placed.add(n);
    }
  }
  return ordered;
}

async function appliedMigrations(db: Executor): Promise<string[]> {
  const rows = await rowsOf<{ version: string }>(db, sql`SELECT version FROM schema_migrations ORDER BY version`);
  return rows.map((r) => r.version);
}

async function sequenceNames(db: Executor): Promise<string[]> {
  const rows = await rowsOf<{ name: string }>(
    db,
    sql`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY c.relname`,
  );
  return rows.map((r) => r.name);
}

/**
 * Writes the whole database to `write` (one line per call, without the newline), from one
 * snapshot: a REPEATABLE READ transaction, read through a cursor a thousand rows at a time.
 */
export async function exportDatabase(
  db: Kysely<any>,
  engine: string,
  write: (line: string) => Promise<void>,
  progress?: TransferProgress,
  now: Date = new Date(),
): Promise<ExportTrailer> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const header: ExportHeader = {
        recaudo_export: EXPORT_FORMAT,
        engine,
        exported_at: now.toISOString(),
        migrations: await appliedMigrations(trx),
      };
      await write(JSON.stringify(header));
      const trailer: ExportTrailer = { end: true, tables: {}, sequences: {}, sealed_key_ids: [] };
      const keyIds = new Set<string>();
      for (const table of await listTables(trx)) {
        const [{ count }] = await rowsOf<{ count: string }>(trx, sql`SELECT count(*)::text AS count FROM ${sql.table(table.name)}`);
        const total = Number(count);
        await write(JSON.stringify({ table: table.name, columns: table.columns }));
        const select = sql.join(table.columns.map((c, i) => sql`${sql.id(c)}::text AS ${sql.id(`c${i}`)}`));
        await sql`DECLARE recaudo_export NO SCROLL CURSOR FOR SELECT ${select} FROM ${sql.table(table.name)}`.execute(trx);
        let done = 0;
        for (;;) {
          const rows = (await sql<Record<string, string | null>>`FETCH ${sql.raw(String(FETCH_ROWS))} FROM recaudo_export`.execute(trx)).rows;
          for (const row of rows) {
            const values = Object.values(row);
            for (const v of values) {
              const id = v !== null && v.startsWith('v1.') ? SEALED_KEY_ID.exec(v)?.[1] : undefined;
              if (id) keyIds.add(id);
            }
            await write(JSON.stringify(values));
          }
          done += rows.length;
          if (rows.length < FETCH_ROWS) break;
          if (done % PROGRESS_EVERY < rows.length) progress?.rows(table.name, done, false);
        }
        progress?.rows(table.name, done, true);
        if (done !== total) throw new TransferError(`table ${table.name}: counted ${total} rows, read ${done}`);
        await sql`CLOSE recaudo_export`.execute(trx);
        trailer.tables[table.name] = done;
      }
      for (const name of await sequenceNames(trx)) {
        const [state] = await rowsOf<{ value: string; called: boolean }>(
          trx,
          sql`SELECT last_value::text AS value, is_called AS called FROM ${sql.table(name)}`,
        );
        trailer.sequences[name] = [state.value, state.called];
      }
      trailer.sealed_key_ids = [...keyIds].sort();
      await write(JSON.stringify(trailer));
      return trailer;
    });
}

export interface ImportResult {
  header: ExportHeader;
  trailer: ExportTrailer;
}

/**
 * Loads an export into `db`, in one transaction: all of it or nothing. The database must be at
 * exactly the export's migrations and hold no company yet (a fresh database that `recaudo migrate`
 * prepared); whatever its tables hold (seeded catalogues, scheduled jobs) is replaced by the
 * export's rows. Each table's rows are gathered as text in a temporary table and inserted in one
 * statement that casts every column to its type (the type's own input function, the same on both
 * engines), so statement-level checks (the ledger's balance per transaction) see whole sets.
 */
export async function importDatabase(
  db: Kysely<any>,
  lines: AsyncIterable<string>,
  progress?: TransferProgress,
  opts: { beforeCommit?: (trailer: ExportTrailer) => void } = {},
): Promise<ImportResult> {
  const input = lines[Symbol.asyncIterator]();
  const next = async (): Promise<unknown> => {
    for (;;) {
      const { value, done } = await input.next();
      if (done) return undefined;
      if (value.trim() === '') continue;
      try {
        return JSON.parse(value);
      } catch {
        throw new TransferError('the export file has a line that is not JSON (damaged or not an export)');
      }
    }
  };

  const header = (await next()) as ExportHeader | undefined;
  if (!header || typeof header !== 'object' || header.recaudo_export !== EXPORT_FORMAT) {
    throw new TransferError(`not a recaudo export (format ${EXPORT_FORMAT} expected on its first line)`);
  }

  return db.transaction().execute(async (trx) => {
    // One long transaction by design: the session bounds of the service do not apply to it.
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    await sql`SET LOCAL lock_timeout = 0`.execute(trx);
    await sql`SET LOCAL idle_in_transaction_session_timeout = 0`.execute(trx);

    const here = await appliedMigrations(trx);
    if (here.join() !== header.migrations.join()) {
      const missing = header.migrations.filter((m) => !here.includes(m));
      const extra = here.filter((m) => !header.migrations.includes(m));
      throw new TransferError(
        `the export was taken at another migration than this database's (export has ${missing.join(', ') || 'nothing'} more, ` +
          `this database ${extra.join(', ') || 'nothing'} more): export again with this release, after \`recaudo migrate\` on the source`,
      );
    }
    const [{ companies }] = await rowsOf<{ companies: string }>(trx, sql`SELECT count(*)::text AS companies FROM companies`);
    if (Number(companies) > 0) {
      throw new TransferError(`this database already holds ${companies} compan${companies === '1' ? 'y' : 'ies'}: import only into a fresh database`);
    }

    const tables = await listTables(trx);
    const byName = new Map(tables.map((t) => [t.name, t]));
    // Children before parents, so foreign keys never block the clearing.
    for (const table of [...tables].reverse()) await sql`DELETE FROM ${sql.table(table.name)}`.execute(trx);

    const counts: Record<string, number> = {};
    let current: { table: TableInfo; columns: string[]; batch: (string | null)[][]; done: number; reported: number } | null = null;

    const flush = async () => {
      if (!current || current.batch.length === 0) return;
      const { batch } = current;
      const values = sql.join(batch.map((row) => sql`(${sql.join(row.map((v) => sql`${v}`))})`));
      await sql`INSERT INTO recaudo_import_stage VALUES ${values}`.execute(trx);
      current.done += batch.length;
      current.batch = [];
      if (current.done - current.reported >= PROGRESS_EVERY) {
        current.reported = current.done;
        progress?.rows(current.table.name, current.done, false);
      }
    };
    const finish = async () => {
      if (!current) return;
      await flush();
      const { table, columns } = current;
      const list = sql.join(columns.map((c) => sql.id(c)));
      const casts = sql.join(columns.map((c, i) => sql`${sql.id(`c${i}`)}::${sql.raw(table.types[c])}`));
      const overriding = table.identityAlways ? sql`OVERRIDING SYSTEM VALUE` : sql``;
      await sql`INSERT INTO ${sql.table(table.name)} (${list}) ${overriding} SELECT ${casts} FROM recaudo_import_stage`.execute(trx);
      await sql`DROP TABLE recaudo_import_stage`.execute(trx);
      counts[table.name] = current.done;
      progress?.rows(table.name, current.done, true);
      current = null;
    };

    let trailer: ExportTrailer | undefined;
    for (;;) {
      const item = await next();
      if (item === undefined) break;
      if (Array.isArray(item)) {
        if (!current) throw new TransferError('the export file has rows before any table');
        if (item.length !== current.columns.length)
          throw new TransferError(`a row of ${current.table.name} has ${item.length} values, not ${current.columns.length}`);
        current.batch.push(item as (string | null)[]);
        if ((current.batch.length + 1) * current.columns.length > PARAMS_PER_INSERT) await flush();
        continue;
      }
      const entry = item as { table?: string; columns?: string[]; end?: boolean };
      await finish();
      if (entry.end) {
        trailer = item as ExportTrailer;
        break;
      }
      const table = entry.table ? byName.get(entry.table) : undefined;
      if (!table || !Array.isArray(entry.columns)) throw new TransferError(`the export has a table this database lacks: ${entry.table}`);
      const unknown = entry.columns.filter((c) => !table.columns.includes(c));
      const absent = table.columns.filter((c) => !entry.columns!.includes(c));
      if (unknown.length || absent.length) {
        throw new TransferError(`table ${table.name}: the export's columns differ from this database's (${[...unknown, ...absent].join(', ')})`);
      }
      // Text columns c0, c1, ... in the export's column order: no key, foreign key, trigger or default.
      const stage = sql.join(entry.columns.map((_, i) => sql`${sql.id(`c${i}`)} text`));
      await sql`CREATE TEMPORARY TABLE recaudo_import_stage (${stage})`.execute(trx);
      current = { table, columns: entry.columns, batch: [], done: 0, reported: 0 };
    }
    if (!trailer) throw new TransferError('the export file ends before its last line: it is incomplete (nothing was imported)');
    for (const [name, rows] of Object.entries(trailer.tables)) {
      if (counts[name] !== rows) throw new TransferError(`table ${name}: the export says ${rows} rows, ${counts[name] ?? 0} were read`);
    }
    const sequences = new Set(await sequenceNames(trx));
    for (const [name, [value, called]] of Object.entries(trailer.sequences)) {
      if (!sequences.has(name)) throw new TransferError(`the export has a sequence this database lacks: ${name}`);
      await sql`SELECT setval(quote_ident(${name})::regclass, ${value}::bigint, ${called})`.execute(trx);
    }
    opts.beforeCommit?.(trailer);
    return { header, trailer };
  });
}
