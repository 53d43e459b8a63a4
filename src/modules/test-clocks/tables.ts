import type { ColumnType, Selectable } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** migrations/0023_test_clocks.sql */
export interface TestClocksTable {
  company_id: string;
  environment: Environment;
  id: string;
  name: string | null;
  frozen_time: Timestamp;
  status: 'ready' | 'advancing';
  advance_to: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type TestClockRow = Selectable<TestClocksTable>;

declare module '../../platform/db/schema.ts' {
  interface DB {
    test_clocks: TestClocksTable;
  }
}
