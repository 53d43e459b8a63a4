import { iso } from '../../platform/scope.ts';
import { BILLING_STATUSES, dueAt } from './cycles.ts';
import { billingTermsOf } from './plans.ts';
import type { SubscriptionResponse } from './schemas.ts';
import type { SubscriptionRow } from './tables.ts';

const due = (row: SubscriptionRow, cycle: number) => dueAt(row, cycle).toISOString();

export function toSubscriptionResponse(row: SubscriptionRow): SubscriptionResponse {
  const next = row.current_cycle + 1;
  const ahead = BILLING_STATUSES.includes(row.status) && (row.cycles === null || next <= row.cycles);
  return {
    id: row.id,
    status: row.status,
    version: row.version,
    name: row.name,
    description: row.description,
    internal_id: row.internal_id,
    plan_id: row.plan_id,
    customer_id: row.customer_id,
    ...billingTermsOf(row),
    current_cicle: row.current_cycle,
    next_due_date: ahead ? due(row, next) : null,
    payment_mode: row.payment_mode,
    start_date: row.start_date,
    end_date: row.cycles === null ? null : due(row, row.cycles),
    remember_to_pay_before: row.remember_to_pay_before,
    cancel_after_no_payment_before: row.cancel_after_no_payment_before,
    unpaid_cycles: row.unpaid_cycles,
    test_clock: row.test_clock ?? null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    canceled_at: row.canceled_at ? iso(row.canceled_at) : null,
    finished_at: row.finished_at ? iso(row.finished_at) : null,
    frozen_at: row.frozen_at ? iso(row.frozen_at) : null,
  };
}
