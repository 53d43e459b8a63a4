import type { ColumnType, Selectable } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';
import type { FiscalResolutionData } from '../../documents/dian/model.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;
type Money = ColumnType<bigint, bigint, bigint>;

export const INVOICE_STATUSES = ['CREATED', 'PAID', 'CANCELED', 'REFUNDED'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];
export const FISCAL_STATUSES = ['pending', 'stamped', 'rejected'] as const;
export type FiscalStatus = (typeof FISCAL_STATUSES)[number];
export const STAMP_POLICIES = ['none', 'on_payment', 'on_issue', 'manual'] as const;
export type StampPolicy = (typeof STAMP_POLICIES)[number];

/** A resolved line as stored: cents as decimal strings (JSON has no bigint). */
export interface StoredLine {
  price_id: string | null;
  description: string;
  quantity: number;
  unit_amount: string;
  subtotal: string;
  tax_code: '01' | '04';
  tax_rate_bp: number;
  tax_behavior: 'exclusive' | 'inclusive';
  tax_amount: string;
  total: string;
}

export interface InvoiceCustomerSnapshot {
  id: string;
  name: string;
  document_number: string | null;
}

export interface InvoicesTable {
  company_id: string;
  environment: Environment;
  id: string;
  mode: 'issued' | 'imported';
  status: InvoiceStatus;
  fiscal_status: FiscalStatus | null;
  stamp_policy: StampPolicy;
  currency: string;
  customer_id: string | null;
  customer: Json<InvoiceCustomerSnapshot | null> | null;
  items: Json<StoredLine[]>;
  subtotal: Money;
  tax_amount: Money;
  total: Money;
  credited: ColumnType<bigint, bigint | undefined, bigint>;
  name: string | null;
  reference: string | null;
  due_date: ColumnType<string | null, string | null, string | null>;
  metadata: Json<Record<string, string> | null> | null;
  provider: string | null;
  provider_id: string | null;
  payment_id: string;
  test_scenario: string | null;
  number: string | null;
  cufe: string | null;
  issue_date: ColumnType<string | null, string | null, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export const CREDIT_NOTE_STATUSES = ['pending', 'issued', 'rejected'] as const;
export type CreditNoteStatus = (typeof CREDIT_NOTE_STATUSES)[number];

export interface CreditNotesTable {
  company_id: string;
  environment: Environment;
  id: string;
  invoice_id: string;
  amount: Money;
  subtotal: Money;
  tax_amount: Money;
  reason: string;
  discrepancy_code: '1' | '2';
  items: Json<StoredLine[]>;
  status: CreditNoteStatus;
  origin: 'api' | 'refund';
  number: string | null;
  cude: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type StampingStatus = 'submitting' | 'pending' | 'accepted' | 'rejected';

export interface StampingsTable {
  company_id: string;
  environment: Environment;
  id: string;
  invoice_id: string;
  credit_note_id: string | null;
  kind: 'invoice' | 'credit_note';
  status: StampingStatus;
  resolution_id: string | null;
  resolution: Json<FiscalResolutionData | null> | null;
  prefix: string | null;
  folio: ColumnType<bigint | null, bigint | number | null, bigint | number | null>;
  number: string | null;
  issue_date: string | null;
  issue_time: string | null;
  identity_code: string | null;
  qr_text: string | null;
  xml: string | null;
  pdf: string | null;
  track_id: string | null;
  submitted_at: Timestamp | null;
  rejection_reason: string | null;
  messages: Json<string[] | null> | null;
  /** The authority's signed ApplicationResponse (accepted submissions that carried one). */
  application_response: ColumnType<string | null, string | null | undefined, string | null>;
  /** The signed AttachedDocument e-mailed to the customer (the document + the ApplicationResponse). */
  attached_document: ColumnType<string | null, string | null | undefined, string | null>;
  total: Money;
  created_at: Timestamp;
  updated_at: Timestamp;
  settled_at: Timestamp | null;
}

export type InvoiceRow = Selectable<InvoicesTable>;
export type CreditNoteRow = Selectable<CreditNotesTable>;
export type StampingRow = Selectable<StampingsTable>;

declare module '../../platform/db/schema.ts' {
  interface DB {
    invoices: InvoicesTable;
    credit_notes: CreditNotesTable;
    stampings: StampingsTable;
  }
}
