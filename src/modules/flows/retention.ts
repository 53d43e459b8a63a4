import { sql } from 'kysely';
import { afterCursor, onlyCompanies, type RetentionRule } from '../../platform/retention/retention.ts';

/**
 * Finished flow runs (succeeded or failed) older than RETENTION_FLOW_RUNS_DAYS. A pending run still
 * has its job and is never swept. Through flow_runs_finished (0037).
 */
export const flowRuns: RetentionRule = {
  name: 'flows.runs',
  table: 'flow_runs',
  order: 'created_at',
  setting: 'RETENTION_FLOW_RUNS_DAYS',
  age: (config) => (config.retention.flowRunsDays > 0 ? config.retention.flowRunsDays * 86_400_000 : null),
  select: (batch) => sql`
    SELECT ctid, created_at AS cursor FROM flow_runs
    WHERE status <> 'pending' AND created_at < ${batch.cutoff} ${afterCursor(batch, 'created_at', true)} ${onlyCompanies(batch)}
    ORDER BY created_at LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
};
