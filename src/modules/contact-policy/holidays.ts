/**
 * Colombian public holidays (festivos) of Ley 51 de 1983 ("Ley Emiliani"), for any year:
 * six fixed dates, seven dates moved to the following Monday, and five tied to Easter.
 *
 * Dates are handled as day numbers (days since 1970-01-01 in the proleptic Gregorian calendar,
 * see src/platform/calendar-days.ts) instead of `Date` objects: `Date.UTC` maps years 0–99 to
 * 1900–1999, and no time zone is involved.
 */
import { calendarDateOf, dayNumberOf, weekdayOf, type CalendarDate } from '../../platform/calendar-days.ts';

export { weekdayOf, type CalendarDate };

export interface Holiday {
  /** 'YYYY-MM-DD' */
  date: string;
  name: string;
}

/** Celebrated on their own date whatever the weekday. */
const FIXED_HOLIDAYS: readonly (readonly [month: number, day: number, name: string])[] = [
  [1, 1, 'Año Nuevo'],
  [5, 1, 'Día del Trabajo'],
  [7, 20, 'Día de la Independencia'],
  [8, 7, 'Batalla de Boyacá'],
  [12, 8, 'Inmaculada Concepción'],
  [12, 25, 'Navidad'],
];

/** Moved to the following Monday unless they already fall on one (Ley 51 de 1983). */
const MONDAY_MOVED_HOLIDAYS: readonly (readonly [month: number, day: number, name: string])[] = [
  [1, 6, 'Día de los Reyes Magos'],
  [3, 19, 'Día de San José'],
  [6, 29, 'San Pedro y San Pablo'],
  [8, 15, 'Asunción de la Virgen'],
  [10, 12, 'Día de la Raza'],
  [11, 1, 'Todos los Santos'],
  [11, 11, 'Independencia de Cartagena'],
];

/**
 * Offsets in days from Easter Sunday. The three feasts that fall on a Thursday or Friday after
 * Easter (Ascension E+39, Corpus Christi E+60, Sacred Heart E+68) are observed on the following
 * Monday, so their observed offsets are listed directly.
 */
const EASTER_HOLIDAYS: readonly (readonly [offsetDays: number, name: string])[] = [
  [-3, 'Jueves Santo'],
  [-2, 'Viernes Santo'],
  [43, 'Ascensión del Señor'],
  [64, 'Corpus Christi'],
  [71, 'Sagrado Corazón de Jesús'],
];

const MONDAY = 1;

/** Gregorian Easter dates repeat every 5,700,000 years; used to bring years before 1 into range. */
const EASTER_CYCLE_YEARS = 5_700_000;

/** Western (Gregorian) Easter Sunday: the anonymous Gregorian algorithm (Meeus/Jones/Butcher). */
export function easterSunday(year: number): CalendarDate {
  assertYear(year);
  // The algorithm's `%` and divisions assume a positive year.
  const y = year >= 1 ? year : year + EASTER_CYCLE_YEARS * Math.ceil((1 - year) / EASTER_CYCLE_YEARS);
  const a = y % 19;
  const century = Math.floor(y / 100);
  const yearOfCentury = y % 100;
  const d = Math.floor(century / 4);
  const e = century % 4;
  const f = Math.floor((century + 8) / 25);
  const g = Math.floor((century - f + 1) / 3);
  const h = (19 * a + century - d - g + 15) % 30;
  const i = Math.floor(yearOfCentury / 4);
  const k = yearOfCentury % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  return { year, month, day };
}

/** The date itself when it is a Monday, else the next Monday. */
function onOrNextMonday(dayNumber: number): number {
  return dayNumber + ((MONDAY - weekdayOf(dayNumber) + 7) % 7);
}

function isoDate(dayNumber: number): string {
  const { year, month, day } = calendarDateOf(dayNumber);
  // Years outside 0000–9999 take ISO 8601's expanded form, as Date#toISOString writes them.
  const yearText = year >= 0 && year <= 9999 ? String(year).padStart(4, '0') : `${year < 0 ? '-' : '+'}${String(Math.abs(year)).padStart(6, '0')}`;
  return `${yearText}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

interface YearHolidays {
  /** Day number → name(s); several holidays can land on one Monday (e.g. 2025-06-30). */
  byDayNumber: Map<number, string>;
  sorted: readonly Holiday[];
}

const holidaysByYear = new Map<number, YearHolidays>();

function holidaysOf(year: number): YearHolidays {
  const cached = holidaysByYear.get(year);
  if (cached) return cached;

  const byDayNumber = new Map<number, string>();
  const add = (dayNumber: number, name: string) => {
    const existing = byDayNumber.get(dayNumber);
    byDayNumber.set(dayNumber, existing === undefined ? name : `${existing} / ${name}`);
  };
  for (const [month, day, name] of FIXED_HOLIDAYS) add(dayNumberOf(year, month, day), name);
  for (const [month, day, name] of MONDAY_MOVED_HOLIDAYS) add(onOrNextMonday(dayNumberOf(year, month, day)), name);
  const easter = easterSunday(year);
  const easterDay = dayNumberOf(easter.year, easter.month, easter.day);
  for (const [offsetDays, name] of EASTER_HOLIDAYS) add(easterDay + offsetDays, name);

  const sorted = [...byDayNumber.entries()].sort(([a], [b]) => a - b).map(([dayNumber, name]) => ({ date: isoDate(dayNumber), name }));
  const entry: YearHolidays = { byDayNumber, sorted };
  holidaysByYear.set(year, entry);
  return entry;
}

function assertYear(year: number): void {
  if (!Number.isSafeInteger(year)) throw new RangeError(`not a year: ${year}`);
}

/** The festivos of a year, sorted by date; two holidays on one date are one entry with both names. */
export function colombianHolidays(year: number): Holiday[] {
  assertYear(year);
  // Copies, so a caller cannot alter the cache.
  return holidaysOf(year).sorted.map((holiday) => ({ ...holiday }));
}

/** Whether a day (as a day number: days since 1970-01-01, see dayNumberOf in platform/calendar-days.ts) is a festivo. */
export function isHolidayDayNumber(dayNumber: number): boolean {
  // Every festivo falls inside its own calendar year (the latest moved one is mid-November).
  return holidaysOf(calendarDateOf(dayNumber).year).byDayNumber.has(dayNumber);
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether a 'YYYY-MM-DD' date is a Colombian festivo. Throws on a malformed or impossible date. */
export function isColombianHoliday(dateIso: string): boolean {
  const match = ISO_DATE.exec(dateIso);
  if (!match) throw new RangeError(`not a YYYY-MM-DD date: ${dateIso}`);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const dayNumber = dayNumberOf(year, month, day);
  // Rejects e.g. 2025-02-30, which would otherwise silently mean 2025-03-02.
  const roundTrip = calendarDateOf(dayNumber);
  if (roundTrip.year !== year || roundTrip.month !== month || roundTrip.day !== day) throw new RangeError(`no such date: ${dateIso}`);
  return isHolidayDayNumber(dayNumber);
}
