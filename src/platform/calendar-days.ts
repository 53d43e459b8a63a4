/**
 * Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01), in integers:
 * no `Date` object, so no two-digit-year quirk of `Date.UTC` (years 0–99 → 1900–1999), no time
 * zone and no range limit in the intermediate steps. Valid for any integer year. Pure: no imports.
 */

export interface CalendarDate {
  year: number;
  /** 1–12 */
  month: number;
  /** 1–31 */
  day: number;
}

/**
 * Bogotá's offset from UTC (local = UTC + offset): a fixed −05:00. Colombia has kept UTC−5 without
 * daylight saving since 1993 (its one brief daylight-time period, in 1992–93, is not modelled), so
 * a local day is always exactly 24 h.
 */
export const BOGOTA_OFFSET_MINUTES = -5 * 60;

/** Days since 1970-01-01 of a proleptic Gregorian date (valid for any integer year). */
export function dayNumberOf(year: number, month: number, day: number): number {
  // Count years from March so the leap day is the last day of the counted year.
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The inverse of dayNumberOf. */
export function calendarDateOf(dayNumber: number): CalendarDate {
  const shifted = dayNumber + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return { year, month, day };
}

/** 0 = Sunday … 6 = Saturday; day 0 (1970-01-01) was a Thursday. */
export function weekdayOf(dayNumber: number): number {
  return (((dayNumber + 4) % 7) + 7) % 7;
}
