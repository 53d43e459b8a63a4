import type { ColumnType, Selectable } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { KybData } from './kyb.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type MaybeTime = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export const ONBOARDING_STATUSES = ['pending', 'in_review', 'active', 'rejected'] as const;
export type OnboardingStatus = (typeof ONBOARDING_STATUSES)[number];

/** migrations/0033_flows_onboarding.sql: a platform's (company_id) onboarding of company `id`. */
export interface CompanyOnboardingsTable {
  company_id: string;
  environment: Environment;
  id: string;
  status: OnboardingStatus;
  name: string;
  legal_name: string;
  nit: string;
  dv: string;
  data: ColumnType<KybData, string, string>;
  status_reason: string | null;
  live_keys_issued_at: MaybeTime;
  reviewed_at: MaybeTime;
  activated_at: MaybeTime;
  rejected_at: MaybeTime;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type OnboardingRow = Selectable<CompanyOnboardingsTable>;

declare module '../../platform/db/schema.ts' {
  interface DB {
    company_onboardings: CompanyOnboardingsTable;
  }
}
