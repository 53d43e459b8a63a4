import { performance } from 'node:perf_hooks';
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { prefixedId } from '../ids.ts';
import type { Counter, MetricsRegistry } from '../metrics.ts';

/**
 * Retention (docs/operations.md "Retention"): data that would otherwise grow forever is swept by
 * small declared rules, each owned by the module whose table it sweeps. A rule names its table,
 * its setting and which rows are old; the runner here does the rest the same way for all of them:
 * batches of RETENTION_BATCH_SIZE rows, each its own short transaction, rows another transaction
 * holds skipped (never waited for), a keyset cursor so no batch walks what the previous one swept,
 * a time budget per run, and one sweeper at a time across processes.
 */

/** One batch to sweep. */
export interface BatchInput {
  /** Rows older than this go (the rule's age before the clock's now). */
  cutoff: Date;
  limit: number;
  /** The `cursor` of the previous batch of this run (null: the first batch); rows at or before it were looked at. */
  after: unknown;
  /** Only these companies' rows (tests that share one PostgreSQL database); all when absent. */
  companies?: readonly string[];
}

export interface BatchResult {
  rows: number;
  /** Where the next batch starts: the largest `cursor` swept (null when nothing was). */
  cursor: unknown;
}

export interface RetentionRule {
  /** `module.what`, in logs, metrics and the CLI's progress. */
  name: string;
  /** The table whose rows go (or shrink). */
  table: string;
  /** The indexed column a batch is read in order of (an index leads with it; `cursor` is its value). */
  order: string;
  /** The environment variable that sets the age. */
  setting: string;
  /** How old a row must be to be swept (ms); null when the setting keeps it forever. */
  age(config: Config): number | null;
  /**
   * The rows of one batch, as a SELECT of their `ctid` and `cursor` (the value of `order`), oldest
   * first: `ORDER BY order LIMIT limit FOR UPDATE SKIP LOCKED`. It must read an index leading with
   * `order`, never the whole table (retention.test.ts checks the plans). The rows stay locked until
   * the batch commits, so their ctid finds them again (a TID scan, whatever the table's keys).
   */
  select(batch: BatchInput): RawBuilder<unknown>;
  /** Other tables the sweep deletes from (a delivery's attempts): vacuumed with `table` on the embedded engine. */
  children?: readonly string[];
  /**
   * A sweep other than deleting the selected rows (dropping a column's value, deleting children
   * too): one statement over `select`, answering one row `{n, cursor}` like sweepStatement's.
   */
  statement?(batch: BatchInput): RawBuilder<SweepRow>;
}

/** What a sweep statement answers: how many rows went and the largest cursor among them. */
export interface SweepRow {
  n: bigint | number;
  cursor: unknown;
}

/** What a run needs of the runtime (the CLI's runtime or a worker's). */
export interface RetentionDeps {
  config: Config;
  database: Database;
  clock: Clock;
  logger: Logger;
  metrics: MetricsRegistry;
}

export interface RuleReport {
  rule: string;
  table: string;
  rows: number;
  batches: number;
  /** done: nothing older is left; cut: the budget (or a stop) ended it first; off: its setting keeps everything; busy: another process is sweeping; skipped: not reached (busy earlier). */
  state: 'done' | 'cut' | 'off' | 'busy' | 'skipped';
}

export interface RetentionReport {
  rows: number;
  /** Every rule ran until nothing old was left. */
  complete: boolean;
  /** Another process held the sweep lock: this run stopped at once. */
  busy: boolean;
  ms: number;
  rules: RuleReport[];
}

export interface RunOptions {
  /** Default RETENTION_RUN_SECONDS. */
  budgetMs?: number;
  /** Default RETENTION_BATCH_SIZE. */
  batchSize?: number;
  companies?: readonly string[];
  /** Aborted: the run stops after the batch in flight (shutdown). */
  signal?: AbortSignal;
  /** Told after each committed batch (the CLI's progress, tests). */
  onBatch?: (rule: RetentionRule, rows: number) => void | Promise<void>;
  /** Told as each rule is done with (swept, cut, off, skipped). */
  onRule?: (report: RuleReport) => void;
  /** Milliseconds of a monotonic clock for the budget (tests replace it). */
  elapsed?: () => number;
}

/** An id `prefixedId(prefix, t)` sorts before this exactly when t < at: the time part of such ids. */
export function idsBefore(prefix: string, at: Date): string {
  return prefixedId(prefix, Math.max(0, at.getTime())).slice(0, prefix.length + 11);
}

/** `AND company_id IN (…)` when the batch is limited to some companies. */
export function onlyCompanies(batch: BatchInput, column = 'company_id'): RawBuilder<unknown> {
  if (!batch.companies) return sql``;
  if (batch.companies.length === 0) return sql`AND false`;
  return sql`AND ${sql.ref(column)} IN (${sql.join(batch.companies)})`;
}

/** `AND column > after` (unique cursors) or `>=` (timestamps, where the next row may share the last one's). */
export function afterCursor(batch: BatchInput, column: string, inclusive = false): RawBuilder<unknown> {
  if (batch.after === null || batch.after === undefined) return sql``;
  return inclusive ? sql`AND ${sql.ref(column)} >= ${batch.after}` : sql`AND ${sql.ref(column)} > ${batch.after}`;
}

/**
 * The default sweep, one statement: the selected rows are deleted (or, with `set`, updated), and
 * it answers how many went and the largest cursor among them.
 */
export function sweepStatement(rule: Pick<RetentionRule, 'table' | 'select'>, batch: BatchInput, set?: RawBuilder<unknown>): RawBuilder<SweepRow> {
  const action = set
    ? sql`UPDATE ${sql.table(rule.table)} t SET ${set} FROM doomed d WHERE t.ctid = d.ctid RETURNING d.cursor`
    : sql`DELETE FROM ${sql.table(rule.table)} t USING doomed d WHERE t.ctid = d.ctid RETURNING d.cursor`;
  return sql<SweepRow>`
    WITH doomed AS (${rule.select(batch)}), swept AS (${action})
    SELECT count(*) AS n, max(cursor) AS cursor FROM swept`;
}

/** The statement a rule sweeps one batch with. */
export function ruleStatement(rule: RetentionRule, batch: BatchInput): RawBuilder<SweepRow> {
  return rule.statement ? rule.statement(batch) : sweepStatement(rule, batch);
}

async function sweepBatch(trx: Transaction<DB>, rule: RetentionRule, batch: BatchInput): Promise<BatchResult> {
  const { rows } = await ruleStatement(rule, batch).execute(trx);
  return { rows: Number(rows[0]?.n ?? 0), cursor: rows[0]?.cursor ?? null };
}

/** One sweeper at a time in the whole installation: every batch takes this transaction lock first. */
const SWEEP_LOCK = sql`hashtextextended('recaudo:retention', 0)`;

/**
 * The plan every batch runs with: an ordered index scan that stops after the batch, the rows found
 * again by ctid. Pinned for the batch's transaction because the planner cannot be trusted to find it alone:
 * the embedded engine never gathers statistics (no autovacuum), and a PostgreSQL table has none
 * until autovacuum's first ANALYZE; without them it seq-scans and sorts the whole old range on
 * every batch (measured: 1.5–4 s a batch of 500 on 20,000 rows, instead of milliseconds).
 */
export const PINNED_PLAN = sql.join(
  ['enable_seqscan', 'enable_bitmapscan', 'enable_sort', 'enable_hashjoin', 'enable_mergejoin'].map((name) => sql`set_config(${name}, 'off', true)`),
);

const counters = new WeakMap<MetricsRegistry, { rows: Counter; runs: Counter }>();
function metricsOf(registry: MetricsRegistry) {
  let m = counters.get(registry);
  if (!m) {
    m = {
      rows: registry.counter('recaudo_retention_rows_total', 'Rows swept (deleted, or stripped of a stored body) by retention, by rule'),
      runs: registry.counter(
        'recaudo_retention_runs_total',
        'Retention runs by outcome: complete, cut (budget or stop), busy (another process sweeping), failed',
      ),
    };
    counters.set(registry, m);
  }
  return m;
}

/**
 * Runs every rule once, in order (a rule that depends on another one's sweep comes after it), each
 * until nothing older than its age is left or its share of the budget is spent: the budget left
 * divided by the rules left, so a rule with a backlog cannot starve the ones after it.
 */
export async function runRetention(deps: RetentionDeps, rules: readonly RetentionRule[], opts: RunOptions = {}): Promise<RetentionReport> {
  const settings = deps.config.retention;
  const budgetMs = opts.budgetMs ?? settings.runBudgetMs;
  const limit = Math.max(1, opts.batchSize ?? settings.batchSize);
  const elapsed = opts.elapsed ?? (() => performance.now());
  const metrics = metricsOf(deps.metrics);
  const started = elapsed();
  const reports: RuleReport[] = [];
  let busy = false;
  let stopped = false;
  try {
    for (const [index, rule] of rules.entries()) {
      const report: RuleReport = { rule: rule.name, table: rule.table, rows: 0, batches: 0, state: 'done' };
      reports.push(report);
      const ageMs = rule.age(deps.config);
      if (ageMs === null) {
        report.state = 'off';
        opts.onRule?.(report);
        continue;
      }
      if (busy || stopped) {
        report.state = busy ? 'skipped' : 'cut';
        opts.onRule?.(report);
        continue;
      }
      const ruleStarted = elapsed();
      const share = (budgetMs - (ruleStarted - started)) / (rules.length - index);
      const cutoff = new Date(deps.clock.now().getTime() - ageMs);
      let after: unknown = null;
      for (;;) {
        const batch: BatchInput = { cutoff, limit, after, companies: opts.companies };
        const result = await deps.database.db.transaction().execute(async (trx) => {
          const { rows } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${SWEEP_LOCK}) AS ok, ${PINNED_PLAN}`.execute(trx);
          if (!rows[0]?.ok) return null;
          return sweepBatch(trx, rule, batch);
        });
        if (result === null) {
          busy = true;
          report.state = 'busy';
          break;
        }
        report.rows += result.rows;
        report.batches++;
        if (result.rows > 0) metrics.rows.inc({ rule: rule.name }, result.rows);
        await opts.onBatch?.(rule, result.rows);
        if (result.rows < limit || result.cursor === null) break;
        after = result.cursor;
        if (opts.signal?.aborted) {
          stopped = true;
          report.state = 'cut';
          break;
        }
        if (elapsed() - ruleStarted >= share) {
          report.state = 'cut';
          break;
        }
        // Between batches, whatever else waits for the database (the embedded engine's one session) goes first.
        await new Promise((resolve) => setImmediate(resolve));
      }
      opts.onRule?.(report);
    }
    if (deps.database.engine === 'pglite') await vacuumSwept(deps, rules, reports);
  } catch (error) {
    metrics.runs.inc({ outcome: 'failed' });
    throw error;
  }
  const rows = reports.reduce((n, r) => n + r.rows, 0);
  const complete = reports.every((r) => r.state === 'done' || r.state === 'off');
  const ms = Math.round(elapsed() - started);
  metrics.runs.inc({ outcome: busy ? 'busy' : complete ? 'complete' : 'cut' });
  const swept = Object.fromEntries(reports.filter((r) => r.rows > 0).map((r) => [r.rule, r.rows]));
  if (rows > 0) deps.logger.info({ swept, rows, ms, complete }, 'retention swept old rows');
  else deps.logger.debug({ ms, busy }, 'retention: nothing to sweep');
  return { rows, complete, busy, ms, rules: reports };
}

/**
 * The embedded engine has no autovacuum: the space of deleted rows is reused only once VACUUM has
 * run, so without it the data directory would keep growing however much is swept. The tables that
 * lost rows in this run are vacuumed (and analyzed) at its end: tens of milliseconds per 50,000
 * dead rows. PostgreSQL's autovacuum does this by itself.
 */
async function vacuumSwept(deps: RetentionDeps, rules: readonly RetentionRule[], reports: RuleReport[]): Promise<void> {
  const tables = new Set<string>();
  for (const [i, rule] of rules.entries()) {
    if ((reports[i]?.rows ?? 0) > 0) for (const table of [rule.table, ...(rule.children ?? [])]) tables.add(table);
  }
  for (const table of tables) await sql`VACUUM (ANALYZE) ${sql.table(table)}`.execute(deps.database.db);
}
