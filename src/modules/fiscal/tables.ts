import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { SealedColumns } from '../../platform/secret-columns.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T = unknown> = ColumnType<T, string, string>;

export const RESOLUTION_STATUSES = ['draft', 'active', 'retired'] as const;
export type ResolutionStatus = (typeof RESOLUTION_STATUSES)[number];
export const DOCUMENT_TYPES = ['invoice', 'credit_note'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** DIAN numbering resolutions with their folio counter (migrations/0010_invoicing_setup.sql). */
export interface FiscalResolutionsTable {
  company_id: string;
  environment: Environment;
  id: string;
  number: string;
  prefix: string;
  document_type: DocumentType;
  from_folio: ColumnType<bigint, bigint | number, bigint | number>;
  to_folio: ColumnType<bigint, bigint | number, bigint | number>;
  valid_from: string;
  valid_until: string;
  technical_key: string | null;
  status: ResolutionStatus;
  next_folio: ColumnType<bigint, bigint | number, bigint | number>;
  is_default: ColumnType<boolean, boolean | undefined, boolean>;
  activated_at: Timestamp | null;
  retired_at: Timestamp | null;
  alerted_80_at: Timestamp | null;
  alerted_95_at: Timestamp | null;
  alerted_expiring_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Per-company DIAN web-service settings (docs/dian-webservice.md "Configuration"). */
export interface DianSettings {
  /** `habilitacion`, `produccion`, or an explicit https URL. */
  endpoint: string;
  mode: 'sync' | 'async' | 'test_set';
  test_set_id: string | null;
  timeout_ms: number;
}

export interface CertificateSummary {
  subject: string;
  issuer: string;
  serial: string;
  valid_from: string;
  valid_until: string;
}

/** The issuer data of a company per environment (the test environment also has a built-in default). */
export interface FiscalProfilesTable {
  company_id: string;
  environment: Environment;
  nit: string;
  dv: string;
  legal_name: string;
  trade_name: string | null;
  address_line: string;
  city_code: string;
  email: string | null;
  phone: string | null;
  responsibilities: Json<string[]>;
  tax_regime: string;
  software_id: string;
  software_pin: string;
  certificate_p12: string | null;
  certificate_password: string | null;
  certificate_summary: Json<CertificateSummary | null>;
  /** DIAN web-service settings (migrations/0012_dian_webservice.sql); null = defaults. */
  dian: ColumnType<DianSettings | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    fiscal_resolutions: FiscalResolutionsTable;
    fiscal_profiles: FiscalProfilesTable;
  }
}

/** The DIAN software PIN, the signing certificate (PKCS#12 as base64) and its password: sealed at rest (src/platform/secrets.ts; docs/operations.md "Secrets at rest"). */
export const SEALED_COLUMNS: SealedColumns[] = [
  { table: 'fiscal_profiles', key: ['company_id', 'environment'], columns: ['software_pin', 'certificate_p12', 'certificate_password'] },
];
