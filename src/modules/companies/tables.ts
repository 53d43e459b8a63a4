import type { ColumnType } from 'kysely';

/** Columns migrations/0033_flows_onboarding.sql adds to `companies` (docs/companies.md). */
declare module '../../platform/db/schema.ts' {
  interface CompaniesTable {
    /** Set by the operator (`recaudo companies set --platform true`): its keys may onboard companies. */
    platform: ColumnType<boolean, boolean | undefined, boolean>;
    /** The platform that onboarded this company (POST /v1/companies), if any. */
    parent_company_id: ColumnType<string | null, string | null | undefined, string | null>;
  }
}
