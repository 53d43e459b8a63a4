import { runRetention, type RetentionDeps, type RetentionReport, type RetentionRule, type RuleReport } from './retention.ts';

export interface RetentionRunInput {
  /** Seconds; default RETENTION_RUN_SECONDS. */
  budget_seconds?: number;
}

export interface RetentionRunOutput extends RetentionReport {
  /** The lines the command printed as it went (through a server's control socket they come back with the answer). */
  progress: string[];
}

const ruleLine = (r: RuleReport) =>
  r.state === 'off'
    ? `${r.rule}: kept forever (its setting is 0)`
    : `${r.rule}: ${r.rows} row(s) from ${r.table} in ${r.batches} batch(es)${r.state === 'done' ? '' : ` (${r.state})`}`;

/**
 * `recaudo retention run`: every rule once, now, whatever RETENTION_ENABLED says (an operator asked).
 * Progress goes to `onProgress` as it happens: a line at most every second while a rule sweeps, and
 * one per rule when it is done with.
 */
export async function runRetentionOperator(
  deps: RetentionDeps,
  rules: readonly RetentionRule[],
  input: RetentionRunInput = {},
  onProgress: (line: string) => void = () => {},
): Promise<RetentionRunOutput> {
  const budget = input.budget_seconds;
  if (budget !== undefined && (!Number.isInteger(budget) || budget < 1))
    throw new RetentionInputError('--budget must be a whole number of seconds, at least 1');
  const progress: string[] = [];
  const say = (line: string) => {
    progress.push(line);
    onProgress(line);
  };
  let current: { rule: string; rows: number } | null = null;
  let lastSaid = Date.now();
  const report = await runRetention(deps, rules, {
    budgetMs: budget === undefined ? undefined : budget * 1000,
    onBatch: (rule, rows) => {
      if (current?.rule !== rule.name) current = { rule: rule.name, rows: 0 };
      current.rows += rows;
      if (Date.now() - lastSaid >= 1_000) {
        lastSaid = Date.now();
        onProgress(`${rule.name}: ${current.rows} row(s) so far`);
      }
    },
    onRule: (r) => say(ruleLine(r)),
  });
  if (report.busy) say('another process is sweeping now: this run stopped (its rows will be swept by that one)');
  else if (!report.complete) say('the time budget ran out before everything old was swept: run it again (or let the workers go on)');
  return { ...report, progress };
}

/** A bad command line (exit 2, not a stack trace). */
export class RetentionInputError extends Error {}
