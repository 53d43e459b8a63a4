/**
 * Colombian business days (docs/cashouts.md "Arrival"): Monday to Friday except the national
 * holidays (festivos) of Law 51 of 1983: some on their date, others moved to the next Monday
 * (the "Emiliani" law), and the ones tied to Easter. Dates are Colombian (UTC−5, no daylight time).
 */

const BOGOTA_OFFSET_MS = 5 * 3_600_000;
const DAY_MS = 86_400_000;

/** Easter Sunday (Gregorian), as [month 1-12, day]: the anonymous Gregorian algorithm. */
function easter(year: number): [number, number] {
  const a = year % 19;
  const b = Math.floor(year / 100);
  const c = year % 100;
  const d = Math.floor(b / 4);
  const e = b % 4;
  const f = Math.floor((b + 8) / 25);
  const g = Math.floor((b - f + 1) / 3);
  const h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4);
  const k = c % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  return [month, day];
}

const utcDay = (year: number, month: number, day: number) => Date.UTC(year, month - 1, day);
/** The date itself when a Monday, else the next Monday. */
const nextMonday = (t: number) => t + ((8 - new Date(t).getUTCDay()) % 7) * DAY_MS;

const cache = new Map<number, Set<number>>();

/** The festivos of a year, as UTC midnights of their Colombian dates. */
export function festivos(year: number): Set<number> {
  const known = cache.get(year);
  if (known) return known;
  const [em, ed] = easter(year);
  const e = utcDay(year, em, ed);
  const days = [
    utcDay(year, 1, 1),
    utcDay(year, 5, 1),
    utcDay(year, 7, 20),
    utcDay(year, 8, 7),
    utcDay(year, 12, 8),
    utcDay(year, 12, 25),
    ...[
      [1, 6],
      [3, 19],
      [6, 29],
      [8, 15],
      [10, 12],
      [11, 1],
      [11, 11],
    ].map(([m, d]) => nextMonday(utcDay(year, m, d))),
    e - 3 * DAY_MS, // Jueves Santo
    e - 2 * DAY_MS, // Viernes Santo
    e + 43 * DAY_MS, // Ascensión (Monday after the 39th day)
    e + 64 * DAY_MS, // Corpus Christi (Monday after the 60th day)
    e + 71 * DAY_MS, // Sagrado Corazón (Monday after the 68th day)
  ];
  const set = new Set(days);
  cache.set(year, set);
  return set;
}

/** The Colombian calendar day of an instant, as a UTC midnight. */
function colombianDay(at: Date): number {
  const local = at.getTime() - BOGOTA_OFFSET_MS;
  return local - (((local % DAY_MS) + DAY_MS) % DAY_MS);
}

export function isBusinessDay(at: Date): boolean {
  const day = colombianDay(at);
  const weekday = new Date(day).getUTCDay();
  return weekday !== 0 && weekday !== 6 && !festivos(new Date(day).getUTCFullYear()).has(day);
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
