/**
 * Colombian business days (docs/cashouts.md "Arrival"): Monday to Friday except the national
 * holidays (festivos), whose rules live in the contact-policy module. Dates are Colombian
 * (UTC−5, no daylight time).
 */
import { BOGOTA_OFFSET_MINUTES, weekdayOf } from '../../platform/calendar-days.ts';
import { isHolidayDayNumber } from '../contact-policy/index.ts';

const BOGOTA_OFFSET_MS = BOGOTA_OFFSET_MINUTES * 60_000;
const DAY_MS = 86_400_000;

const SUNDAY = 0;
const SATURDAY = 6;

export function isBusinessDay(at: Date): boolean {
  const time = at.getTime();
  // An invalid Date has never been a business day (and addBusinessDays never counts one).
  if (Number.isNaN(time)) return false;
  // The Colombian calendar day of the instant, as days since 1970-01-01.
  const dayNumber = Math.floor((time + BOGOTA_OFFSET_MS) / DAY_MS);
  const weekday = weekdayOf(dayNumber);
  return weekday !== SUNDAY && weekday !== SATURDAY && !isHolidayDayNumber(dayNumber);
}

/** The instant `n` Colombian business days after `at` (the same time of day; n ≥ 1). */
export function addBusinessDays(at: Date, n: number): Date {
  let t = at.getTime();
  let left = n;
  while (left > 0) {
    t += DAY_MS;
    if (isBusinessDay(new Date(t))) left--;
  }
  return new Date(t);
}
