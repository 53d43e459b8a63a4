import type { ColumnType, Selectable } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { FlowAction, FlowFilter } from './filters.ts';
import type { SealedColumns } from '../../platform/secret-columns.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export const FLOW_RUN_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type FlowRunStatus = (typeof FLOW_RUN_STATUSES)[number];

/** migrations/0033_flows_onboarding.sql */
export interface FlowsTable {
  company_id: string;
  environment: Environment;
  id: string;
  name: string;
  event_type: string;
  filters: Json<FlowFilter[]>;
  action: Json<FlowAction>;
  secret: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface FlowRunsTable {
  company_id: string;
  environment: Environment;
  id: string;
  flow_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: FlowRunStatus;
  attempts: ColumnType<number, number | undefined, number>;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type FlowRow = Selectable<FlowsTable>;
export type FlowRunRow = Selectable<FlowRunsTable>;

declare module '../../platform/db/schema.ts' {
  interface DB {
    flows: FlowsTable;
    flow_runs: FlowRunsTable;
  }
}

/** The call_url signing secret: sealed at rest (src/platform/secrets.ts; docs/operations.md "Secrets at rest"). */
export const SEALED_COLUMNS: SealedColumns[] = [{ table: 'flows', key: ['company_id', 'environment', 'id'], columns: ['secret'] }];
