import type { ColumnType, Selectable } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Money = ColumnType<bigint, bigint, bigint>;
type Json<T> = ColumnType<T, string, string>;

export const SUBSCRIPTION_STATUSES = ['created', 'active', 'pass_due', 'unpaid', 'canceled', 'finished', 'frozen'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
export type PaymentMode = 'request' | 'auto_debit';

/** A price override for some cycles (OnePay's `complex_payments`), in cents. */
export interface ComplexPayment {
  amount_in_cents: number;
  apply_on_cicle: number;
  for_cicles: number;
  label: string | null;
}

/** migrations/0021_subscriptions.sql */
export interface PlansTable {
  company_id: string;
  environment: Environment;
  id: string;
  name: string;
  description: string | null;
  internal_id: string | null;
  currency: string;
  amount: Money;
  reference_price: ColumnType<bigint | null, bigint | null, bigint | null>;
  frequency: string;
  cycles: number | null;
  trial_days: number;
  complex_payments: Json<ComplexPayment[]>;
  allows: Json<string[] | null> | null;
  metadata: Json<Record<string, string> | null> | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SubscriptionsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  plan_id: string | null;
  status: SubscriptionStatus;
  version: ColumnType<number, number | undefined, number>;
  name: string;
  description: string | null;
  internal_id: string | null;
  currency: string;
  amount: Money;
  reference_price: ColumnType<bigint | null, bigint | null, bigint | null>;
  frequency: string;
  cycles: number | null;
  payment_mode: PaymentMode;
  anchor_date: string;
  start_date: string;
  trial_days: number;
  trial_ends_at: NullableTimestamp;
  remember_to_pay_before: number;
  cancel_after_no_payment_before: number;
  complex_payments: Json<ComplexPayment[]>;
  allows: Json<string[] | null> | null;
  metadata: Json<Record<string, string> | null> | null;
  current_cycle: ColumnType<number, number | undefined, number>;
  unpaid_cycles: ColumnType<number, number | undefined, number>;
  period_offset: ColumnType<number, number | undefined, number>;
  /** The customer's test clock (0023): its jobs run in that clock's simulated time. */
  test_clock: ColumnType<string | null, string | null | undefined, string | null>;
  /** The plan page's form token of a subscription a payer made there (0025). */
  page_token: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  canceled_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  frozen_at: NullableTimestamp;
}

export interface SubscriptionCyclesTable {
  company_id: string;
  environment: Environment;
  subscription_id: string;
  cycle: number;
  due_at: Timestamp;
  amount: Money;
  payment_id: string | null;
  /** auto_debit: the charge of the current debit attempt, and the attempts made (0024). */
  charge_id: ColumnType<string | null, string | null | undefined, string | null>;
  debit_attempts: ColumnType<number, number | undefined, number>;
  status: 'open' | 'paid' | 'void';
  paid_at: NullableTimestamp;
  created_at: Timestamp;
}

export type PlanRow = Selectable<PlansTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type CycleRow = Selectable<SubscriptionCyclesTable>;

declare module '../../platform/db/schema.ts' {
  interface DB {
    plans: PlansTable;
    subscriptions: SubscriptionsTable;
    subscription_cycles: SubscriptionCyclesTable;
  }
}
