/** Bogotá is UTC−5 all year (no daylight saving time): DIAN dates and resolution validity are Bogotá calendar dates. */
const BOGOTA_OFFSET_MS = 5 * 3_600_000;

/** The Bogotá calendar date (`YYYY-MM-DD`) of an instant. */
export function bogotaDate(at: Date): string {
  return new Date(at.getTime() - BOGOTA_OFFSET_MS).toISOString().slice(0, 10);
}

/** A `YYYY-MM-DD` date shifted by whole days. */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** The instant a Bogotá calendar date starts. */
export function bogotaMidnight(date: string): Date {
  return new Date(new Date(`${date}T00:00:00Z`).getTime() + BOGOTA_OFFSET_MS);
}

/** True for a real calendar date written `YYYY-MM-DD`. */
export function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}
