import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DB } from './db/schema.ts';
import { isSealed, keyId, open, seal, SecretUnreadable, type Keyring } from './secrets.ts';

/**
 * Where sealed values live: each module declares its secret columns (src/modules/index.ts collects
 * them), and one pass re-seals them — clear values from before sealing existed, and values under
 * any key but the current one after a rotation (`recaudo secrets seal|rotate-key`, docs/operations.md).
 */
export interface SealedColumns {
  table: string;
  /** The row's identity (its primary key columns), for batches in key order and the update. */
  key: readonly string[];
  columns: readonly string[];
  /**
   * The pass at start looks only at rows this recent by this column (a large table whose older
   * rows are dropped by a migration or never read again: stored idempotent responses).
   */
  startWindow?: { column: string; ms: number };
}

/** The platform's own: stored idempotent responses (a webhook's secret, a new company's keys). */
export const PLATFORM_SEALED_COLUMNS: SealedColumns[] = [
  {
    table: 'idempotency_keys',
    key: ['company_id', 'environment', 'key'],
    columns: ['response_body'],
    startWindow: { column: 'completed_at', ms: 2 * 3_600_000 },
  },
];

export interface ColumnReport {
  column: string;
  /** Values sealed again under the target key (clear ones included). */
  sealed: number;
  /** Values no key given could open: left as they are (the report names them). */
  unreadable: number;
  /** Values still under another key or clear after the pass (changed concurrently, or unreadable). */
  remaining: number;
}

export interface ResealOptions {
  /** Only clear values (the pass at start); otherwise every value not under the target key. */
  onlyClear?: boolean;
  /** Rows per batch (one SELECT and its updates). */
  batchSize?: number;
  progress?: (line: string) => void;
  /** For startWindow (the pass at start). */
  now?: Date;
}

/**
 * Seals every value of the declared columns under `target.current`, opening with `target`'s keys.
 * Batches in primary-key order; each value is written only if it is still the one read (a
 * concurrent write of a new value wins), so the pass may run while the service runs.
 */
export async function resealColumns(
  db: Kysely<DB>,
  declarations: readonly SealedColumns[],
  target: Keyring,
  opts: ResealOptions = {},
): Promise<ColumnReport[]> {
  const batchSize = opts.batchSize ?? 500;
  const keys = [target.current, ...target.opening];
  const targetPrefix = `v1.${keyId(target.current)}.%`;
  const reports: ColumnReport[] = [];
  for (const d of declarations) {
    for (const column of d.columns) {
      const name = `${d.table}.${column}`;
      const report: ColumnReport = { column: name, sealed: 0, unreadable: 0, remaining: 0 };
      const pending = opts.onlyClear ? sql`${sql.ref(column)} NOT LIKE 'v1.%'` : sql`${sql.ref(column)} NOT LIKE ${targetPrefix}`;
      const windowed =
        opts.onlyClear && d.startWindow
          ? sql`AND ${sql.ref(d.startWindow.column)} >= ${new Date((opts.now ?? new Date()).getTime() - d.startWindow.ms)}`
          : sql``;
      const keyList = sql.join(d.key.map((k) => sql.ref(k)));
      let after: unknown[] | null = null;
      for (;;) {
        const cursor: RawBuilder<unknown> = after ? sql`AND (${keyList}) > (${sql.join(after)})` : sql``;
        const rows: { rows: Record<string, unknown>[] } = await sql<Record<string, unknown>>`
          SELECT ${keyList}, ${sql.ref(column)} AS value FROM ${sql.table(d.table)}
          WHERE ${sql.ref(column)} IS NOT NULL AND ${pending} ${windowed} ${cursor}
          ORDER BY ${keyList} LIMIT ${batchSize}`.execute(db);
        if (rows.rows.length === 0) break;
        for (const row of rows.rows) {
          const value = row.value as string;
          let plaintext: string;
          try {
            plaintext = isSealed(value) ? open(keys, value) : value;
          } catch (error) {
            if (!(error instanceof SecretUnreadable)) throw error;
            report.unreadable++;
            continue;
          }
          const match = sql.join(
            d.key.map((k) => sql`${sql.ref(k)} = ${row[k]}`),
            sql` AND `,
          );
          const updated = await sql`UPDATE ${sql.table(d.table)} SET ${sql.ref(column)} = ${seal(target.current, plaintext)}
            WHERE ${match} AND ${sql.ref(column)} = ${value}`.execute(db);
          if (Number(updated.numAffectedRows ?? 0n) > 0) report.sealed++;
        }
        const last: Record<string, unknown> = rows.rows[rows.rows.length - 1];
        after = d.key.map((k) => last[k]);
        opts.progress?.(`${name}: ${report.sealed} sealed${report.unreadable ? `, ${report.unreadable} unreadable` : ''}`);
      }
      const left = await sql<{ n: string }>`
        SELECT count(*) AS n FROM ${sql.table(d.table)} WHERE ${sql.ref(column)} IS NOT NULL AND ${pending} ${windowed}`.execute(db);
      report.remaining = Number(left.rows[0]?.n ?? 0);
      reports.push(report);
    }
  }
  return reports;
}

/** How many values of each column are clear, and under which key each sealed one is (`recaudo secrets status`). */
export async function sealedInventory(
  db: Kysely<DB>,
  declarations: readonly SealedColumns[],
): Promise<{ column: string; by: Record<string, number> }[]> {
  const out: { column: string; by: Record<string, number> }[] = [];
  for (const d of declarations) {
    for (const column of d.columns) {
      const rows = await sql<{ kid: string; n: string }>`
        SELECT CASE WHEN ${sql.ref(column)} LIKE 'v1.%' THEN substr(${sql.ref(column)}, 4, 8) ELSE 'clear' END AS kid, count(*) AS n
        FROM ${sql.table(d.table)} WHERE ${sql.ref(column)} IS NOT NULL GROUP BY 1 ORDER BY 1`.execute(db);
      out.push({ column: `${d.table}.${column}`, by: Object.fromEntries(rows.rows.map((r) => [r.kid, Number(r.n)])) });
    }
  }
  return out;
}
