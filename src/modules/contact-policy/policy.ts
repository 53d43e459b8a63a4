/**
 * When a debtor may be contacted about a collection (Ley 2300 de 2023, "Ley Dejen de Fregar"):
 * Monday to Friday 07:00–19:00 and Saturday 08:00–15:00, Colombian time; never on Sundays or
 * festivos. Windows are half-open: 07:00:00 is inside, 19:00:00 is not.
 */
import { isHolidayDayNumber, weekdayOf } from './holidays.ts';

/** [first minute of the day inside, first minute after it], both in local minutes since midnight. */
export type ContactWindow = readonly [startMinute: number, endMinute: number];

/** Allowed contact window per weekday (0 = Sunday … 6 = Saturday); null = no contact that day. */
export const CONTACT_WINDOWS: Readonly<Record<0 | 1 | 2 | 3 | 4 | 5 | 6, ContactWindow | null>> = Object.freeze({
  0: null,
  1: [7 * 60, 19 * 60],
  2: [7 * 60, 19 * 60],
  3: [7 * 60, 19 * 60],
  4: [7 * 60, 19 * 60],
  5: [7 * 60, 19 * 60],
  6: [8 * 60, 15 * 60],
} as const);

/**
 * America/Bogota as a fixed UTC−05:00: Colombia keeps that offset all year with no daylight time
 * (its one brief daylight-time period, in 1992–93, is not modelled).
 */
const BOGOTA_OFFSET_MS = -5 * 3_600_000;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** Far more than the longest gap between windows (a Saturday afternoon to a Tuesday after a Monday festivo, or Holy Thursday's). */
const MAX_LOOKAHEAD_DAYS = 15;

/** The allowed window of a Bogotá day, or null on Sundays and festivos. */
function windowOfDay(dayNumber: number): ContactWindow | null {
  const window = CONTACT_WINDOWS[weekdayOf(dayNumber) as keyof typeof CONTACT_WINDOWS];
  return window && !isHolidayDayNumber(dayNumber) ? window : null;
}

/** The instant split into its Bogotá day (days since 1970-01-01) and milliseconds into that day. */
function bogotaDayAndTime(at: Date): { dayNumber: number; msOfDay: number } {
  const time = at.getTime();
  if (Number.isNaN(time)) throw new RangeError('invalid date');
  const localMs = time + BOGOTA_OFFSET_MS;
  const dayNumber = Math.floor(localMs / DAY_MS);
  return { dayNumber, msOfDay: localMs - dayNumber * DAY_MS };
}

/** Whether a collection contact is allowed at this instant. */
export function mayContactAt(at: Date): boolean {
  const { dayNumber, msOfDay } = bogotaDayAndTime(at);
  const window = windowOfDay(dayNumber);
  return window !== null && msOfDay >= window[0] * MINUTE_MS && msOfDay < window[1] * MINUTE_MS;
}

/** The instant itself (as a new Date) when contact is allowed then, else the start of the next allowed window. */
export function nextContactWindow(at: Date): Date {
  if (mayContactAt(at)) return new Date(at.getTime());
  const { dayNumber, msOfDay } = bogotaDayAndTime(at);
  for (let ahead = 0; ahead <= MAX_LOOKAHEAD_DAYS; ahead++) {
    const window = windowOfDay(dayNumber + ahead);
    if (window === null) continue;
    const startMs = window[0] * MINUTE_MS;
    // Today's window counts only if it has not started yet (it has not ended: `at` is outside it).
    if (ahead === 0 && msOfDay >= startMs) continue;
    return new Date((dayNumber + ahead) * DAY_MS + startMs - BOGOTA_OFFSET_MS);
  }
  throw new Error(`no contact window within ${MAX_LOOKAHEAD_DAYS} days of ${at.toISOString()}`);
}
