/**
 * Billing-cycle calendar of subscriptions: when cycle n of a subscription is due, and how many
 * cycles are due by a given instant. Pure (no database, no other module).
 *
 * Everything is computed in Bogotá local time with a fixed −05:00 offset: Colombia has kept
 * UTC−5 without daylight saving since 1993, so a local day is always exactly 24 h and the fixed
 * offset agrees with America/Bogota for every date a subscription can have.
 *
 * Every due date is computed from the anchor (the local date of the first billing), never from
 * the previous due date: month-based cycles keep the anchor's day of month, clamped to the end of
 * shorter months, and return to it afterwards (Jan 31 → Feb 28 → Mar 31), so nothing drifts.
 */
import { BOGOTA_OFFSET_MINUTES, calendarDateOf, dayNumberOf, type CalendarDate } from '../../platform/calendar-days.ts';

export const FREQUENCIES = ['daily', 'weekly', 'biweekly', 'monthly', 'bimonthly', 'quarterly', 'semiannual', 'annual'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

/** A Bogotá calendar date; month is 1–12. */
export type LocalDate = CalendarDate;
/** A Bogotá time of day (hour 0–23, minute 0–59). */
export type LocalTime = { hour: number; minute: number };

export const MIDNIGHT: LocalTime = Object.freeze({ hour: 0, minute: 0 });

type Step = { unit: 'days' | 'months'; size: number };
const STEPS: Record<Frequency, Step> = {
  daily: { unit: 'days', size: 1 },
  weekly: { unit: 'days', size: 7 },
  biweekly: { unit: 'days', size: 14 },
  monthly: { unit: 'months', size: 1 },
  bimonthly: { unit: 'months', size: 2 },
  quarterly: { unit: 'months', size: 3 },
  semiannual: { unit: 'months', size: 6 },
  annual: { unit: 'months', size: 12 },
};

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const BOGOTA_OFFSET_MS = BOGOTA_OFFSET_MINUTES * MINUTE_MS; // local = UTC − 5 h
const MAX_INSTANT_MS = 8.64e15; // the range of a JS Date
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isFrequency(value: unknown): value is Frequency {
  return typeof value === 'string' && (FREQUENCIES as readonly string[]).includes(value);
}

/** Whether the frequency steps in calendar months (so due dates are clamped to the month's end). */
export function isMonthBased(frequency: Frequency): boolean {
  return STEPS[frequency].unit === 'months';
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** A real Gregorian date with a four-digit year (what `YYYY-MM-DD` can spell). */
export function isValidLocalDate(date: LocalDate): boolean {
  const { year, month, day } = date;
  return (
    Number.isInteger(year) &&
    Number.isInteger(month) &&
    Number.isInteger(day) &&
    year >= 0 &&
    year <= 9999 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month)
  );
}

/** `YYYY-MM-DD` → LocalDate; null when malformed or not a real date (2025-02-29), like the other parsers of the API. */
export function parseLocalDate(value: string): LocalDate | null {
  const m = DATE.exec(value);
  if (!m) return null;
  const date = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) };
  return isValidLocalDate(date) ? date : null;
}

export function formatLocalDate(date: LocalDate): string {
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  return `${pad(date.year, 4)}-${pad(date.month, 2)}-${pad(date.day, 2)}`;
}

/** Days since 1970-01-01 of a date (see platform/calendar-days.ts). */
function dayNumberOfDate({ year, month, day }: LocalDate): number {
  return dayNumberOf(year, month, day);
}

function assertDate(date: LocalDate, name: string): void {
  if (!isValidLocalDate(date)) throw new RangeError(`${name} is not a valid date: ${JSON.stringify(date)}`);
}

function assertTime(at: LocalTime): void {
  const ok = Number.isInteger(at.hour) && Number.isInteger(at.minute) && at.hour >= 0 && at.hour <= 23 && at.minute >= 0 && at.minute <= 59;
  if (!ok) throw new RangeError(`not a valid time of day: ${JSON.stringify(at)}`);
}

function assertInstant(instant: Date): number {
  const ms = instant.getTime();
  if (Number.isNaN(ms)) throw new RangeError('invalid instant');
  return ms;
}

/** Epoch milliseconds of a Bogotá local date and time. */
function localMs(date: LocalDate, at: LocalTime): number {
  return dayNumberOfDate(date) * DAY_MS + (at.hour * 60 + at.minute) * MINUTE_MS - BOGOTA_OFFSET_MS;
}

/** The UTC instant of a Bogotá local date and time of day. */
export function localInstant(date: LocalDate, at: LocalTime = MIDNIGHT): Date {
  assertDate(date, 'date');
  assertTime(at);
  return new Date(localMs(date, at));
}

/** The Bogotá calendar date of an instant. */
export function localDateOf(instant: Date): LocalDate {
  const ms = assertInstant(instant) + BOGOTA_OFFSET_MS;
  return calendarDateOf(Math.floor(ms / DAY_MS));
}

/**
 * The date n periods after (or before, n < 0) a date. Month-based steps keep the day of month,
 * clamped to the target month's last day; since clamping loses the original day, chaining calls
 * drifts (Jan 31 → Feb 28 → Mar 28): cycles always add n periods to the anchor instead.
 */
export function addPeriod(date: LocalDate, frequency: Frequency, n: number): LocalDate {
  assertDate(date, 'date');
  if (!Number.isSafeInteger(n)) throw new RangeError(`period count must be an integer: ${n}`);
  return shift(date, STEPS[frequency], n);
}

function shift(date: LocalDate, step: Step, n: number): LocalDate {
  if (step.unit === 'days') return calendarDateOf(dayNumberOfDate(date) + n * step.size);
  const months = date.year * 12 + (date.month - 1) + n * step.size;
  const year = Math.floor(months / 12);
  const month = months - year * 12 + 1;
  return { year, month, day: Math.min(date.day, daysInMonth(year, month)) };
}

/** Due instant (epoch ms) of cycle n; unchecked, for the search in cycleIndexAt. */
function dueMs(anchor: LocalDate, step: Step, n: number, at: LocalTime): number {
  return localMs(shift(anchor, step, n), at);
}

/** The UTC instant at which cycle `cycleIndex` (0 = the first billing, on the anchor) is due. */
export function cycleDueDate(anchor: LocalDate, frequency: Frequency, cycleIndex: number, at: LocalTime = MIDNIGHT): Date {
  assertDate(anchor, 'anchor');
  assertTime(at);
  if (!Number.isSafeInteger(cycleIndex) || cycleIndex < 0) throw new RangeError(`cycle index must be a non-negative integer: ${cycleIndex}`);
  const ms = dueMs(anchor, STEPS[frequency], cycleIndex, at);
  if (!(Math.abs(ms) <= MAX_INSTANT_MS)) throw new RangeError(`cycle ${cycleIndex} is due beyond the representable dates`);
  return new Date(ms);
}

/** The end of the period paid by cycle `cycleIndex`: the instant the next cycle is due. */
export function periodEnd(anchor: LocalDate, frequency: Frequency, cycleIndex: number, at: LocalTime = MIDNIGHT): Date {
  return cycleDueDate(anchor, frequency, cycleIndex + 1, at);
}

/**
 * How many cycles are due by `instant` (due date ≤ instant): 0 before the first billing, n + 1
 * from the instant cycle n is due. Estimated from the elapsed local days or months, then corrected
 * by comparing with the neighbouring due dates, so it is O(1) whatever the number of cycles.
 */
export function cycleIndexAt(anchor: LocalDate, frequency: Frequency, instant: Date, at: LocalTime = MIDNIGHT): number {
  assertDate(anchor, 'anchor');
  assertTime(at);
  const ms = assertInstant(instant);
  const step = STEPS[frequency];
  const local = localDateOf(instant);
  const elapsed =
    step.unit === 'days' ? dayNumberOfDate(local) - dayNumberOfDate(anchor) : local.year * 12 + local.month - (anchor.year * 12 + anchor.month);
  // k is the last cycle whose due date may be ≤ instant; the loops run at most once or twice
  // (the time of day and the clamped day of month can push the estimate past the instant).
  let k = Math.floor(elapsed / step.size);
  if (k < 0) return 0;
  while (k >= 0 && dueMs(anchor, step, k, at) > ms) k--;
  while (dueMs(anchor, step, k + 1, at) <= ms) k++;
  return k + 1;
}
