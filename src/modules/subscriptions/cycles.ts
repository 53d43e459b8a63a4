import { cycleDueDate, parseLocalDate, type Frequency, type LocalDate } from './calendar.ts';
import type { SubscriptionRow, SubscriptionStatus } from './tables.ts';

/** The statuses in which cycles are still billed (frozen, canceled and finished bill nothing). */
export const BILLING_STATUSES: readonly SubscriptionStatus[] = ['created', 'active', 'pass_due', 'unpaid'];

export function anchorOf(sub: Pick<SubscriptionRow, 'anchor_date'>): LocalDate {
  const anchor = parseLocalDate(sub.anchor_date);
  if (!anchor) throw new Error(`subscription anchor ${sub.anchor_date} is not a date`);
  return anchor;
}

/** When cycle `cycle` (1-based) is due: from the anchor, skipping the periods spent frozen. */
export function dueAt(sub: Pick<SubscriptionRow, 'anchor_date' | 'frequency' | 'period_offset'>, cycle: number): Date {
  return cycleDueDate(anchorOf(sub), sub.frequency as Frequency, cycle - 1 + sub.period_offset);
}

/** The amount of a cycle: a complex payment covering it, else the subscription's amount. */
export function cycleAmount(sub: Pick<SubscriptionRow, 'amount' | 'complex_payments'>, cycle: number): bigint {
  const override = sub.complex_payments.find((c) => cycle >= c.apply_on_cicle && cycle < c.apply_on_cicle + c.for_cicles);
  return override ? BigInt(override.amount_in_cents) : sub.amount;
}

/** The next cycle ahead, or null when the bounded cycles are all billed. */
export function nextCycle(sub: Pick<SubscriptionRow, 'current_cycle' | 'cycles'>): number | null {
  const next = sub.current_cycle + 1;
  return sub.cycles !== null && next > sub.cycles ? null : next;
}
