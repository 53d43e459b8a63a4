import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CONTACT_WINDOWS, colombianHolidays, easterSunday, isColombianHoliday, mayContactAt, nextContactWindow } from './index.ts';

/**
 * The official festivo calendars, written out by hand (not computed) so the rules are checked
 * against a published list. 2025 and 2030 have 17 dates: Sagrado Corazón and San Pedro y San
 * Pablo are both observed on the same Monday (2025-06-30, 2030-07-01).
 */
const PUBLISHED_FESTIVOS: Record<number, string[]> = {
  2024: [
    '2024-01-01',
    '2024-01-08',
    '2024-03-25',
    '2024-03-28',
    '2024-03-29',
    '2024-05-01',
    '2024-05-13',
    '2024-06-03',
    '2024-06-10',
    '2024-07-01',
    '2024-07-20',
    '2024-08-07',
    '2024-08-19',
    '2024-10-14',
    '2024-11-04',
    '2024-11-11',
    '2024-12-08',
    '2024-12-25',
  ],
  2025: [
    '2025-01-01',
    '2025-01-06',
    '2025-03-24',
    '2025-04-17',
    '2025-04-18',
    '2025-05-01',
    '2025-06-02',
    '2025-06-23',
    '2025-06-30',
    '2025-07-20',
    '2025-08-07',
    '2025-08-18',
    '2025-10-13',
    '2025-11-03',
    '2025-11-17',
    '2025-12-08',
    '2025-12-25',
  ],
  2026: [
    '2026-01-01',
    '2026-01-12',
    '2026-03-23',
    '2026-04-02',
    '2026-04-03',
    '2026-05-01',
    '2026-05-18',
    '2026-06-08',
    '2026-06-15',
    '2026-06-29',
    '2026-07-20',
    '2026-08-07',
    '2026-08-17',
    '2026-10-12',
    '2026-11-02',
    '2026-11-16',
    '2026-12-08',
    '2026-12-25',
  ],
  2027: [
    '2027-01-01',
    '2027-01-11',
    '2027-03-22',
    '2027-03-25',
    '2027-03-26',
    '2027-05-01',
    '2027-05-10',
    '2027-05-31',
    '2027-06-07',
    '2027-07-05',
    '2027-07-20',
    '2027-08-07',
    '2027-08-16',
    '2027-10-18',
    '2027-11-01',
    '2027-11-15',
    '2027-12-08',
    '2027-12-25',
  ],
  2028: [
    '2028-01-01',
    '2028-01-10',
    '2028-03-20',
    '2028-04-13',
    '2028-04-14',
    '2028-05-01',
    '2028-05-29',
    '2028-06-19',
    '2028-06-26',
    '2028-07-03',
    '2028-07-20',
    '2028-08-07',
    '2028-08-21',
    '2028-10-16',
    '2028-11-06',
    '2028-11-13',
    '2028-12-08',
    '2028-12-25',
  ],
  2029: [
    '2029-01-01',
    '2029-01-08',
    '2029-03-19',
    '2029-03-29',
    '2029-03-30',
    '2029-05-01',
    '2029-05-14',
    '2029-06-04',
    '2029-06-11',
    '2029-07-02',
    '2029-07-20',
    '2029-08-07',
    '2029-08-20',
    '2029-10-15',
    '2029-11-05',
    '2029-11-12',
    '2029-12-08',
    '2029-12-25',
  ],
  2030: [
    '2030-01-01',
    '2030-01-07',
    '2030-03-25',
    '2030-04-18',
    '2030-04-19',
    '2030-05-01',
    '2030-06-03',
    '2030-06-24',
    '2030-07-01',
    '2030-07-20',
    '2030-08-07',
    '2030-08-19',
    '2030-10-14',
    '2030-11-04',
    '2030-11-11',
    '2030-12-08',
    '2030-12-25',
  ],
};

const PUBLISHED_EASTER: Record<number, string> = {
  2024: '2024-03-31',
  2025: '2025-04-20',
  2026: '2026-04-05',
  2027: '2027-03-28',
  2028: '2028-04-16',
  2029: '2029-04-01',
  2030: '2030-04-21',
};

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const QUARTER_HOUR_MS = 15 * 60_000;

/** A Bogotá wall-clock time as an instant ('2025-01-07T07:00' → 2025-01-07T12:00Z). */
const bogota = (localIso: string) => new Date(`${localIso}-05:00`);

const isoOf = ({ year, month, day }: { year: number; month: number; day: number }) =>
  `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;

describe('Colombian festivos', () => {
  test('Easter Sunday matches the published dates for 2024–2030', () => {
    for (const [year, expected] of Object.entries(PUBLISHED_EASTER)) assert.equal(isoOf(easterSunday(Number(year))), expected, `Easter ${year}`);
  });

  test('Easter Sunday at the extremes of its range (March 22 and April 25)', () => {
    assert.equal(isoOf(easterSunday(1818)), '1818-03-22');
    assert.equal(isoOf(easterSunday(2285)), '2285-03-22');
    assert.equal(isoOf(easterSunday(1943)), '1943-04-25');
    assert.equal(isoOf(easterSunday(2038)), '2038-04-25');
    assert.equal(isoOf(easterSunday(2000)), '2000-04-23');
  });

  test('colombianHolidays equals the published calendar for every year 2024–2030', () => {
    for (const [year, expected] of Object.entries(PUBLISHED_FESTIVOS)) {
      assert.deepEqual(
        colombianHolidays(Number(year)).map((holiday) => holiday.date),
        expected,
        `festivos ${year}`,
      );
    }
  });

  test('two holidays on one Monday are one entry carrying both names', () => {
    const june30 = colombianHolidays(2025).find((holiday) => holiday.date === '2025-06-30');
    assert.ok(june30);
    assert.match(june30.name, /Sagrado Corazón/);
    assert.match(june30.name, /San Pedro y San Pablo/);
    // 2038: Easter on April 25 puts Sagrado Corazón on July 5, San Pedro's Monday too.
    assert.equal(colombianHolidays(2038).length, 17);
    assert.equal(colombianHolidays(2026).length, 18);
  });

  test('isColombianHoliday agrees with the published lists, day by day, 2024–2030', () => {
    for (const [year, expected] of Object.entries(PUBLISHED_FESTIVOS)) {
      const festivos = new Set(expected);
      for (let t = Date.UTC(Number(year), 0, 1); t < Date.UTC(Number(year) + 1, 0, 1); t += DAY_MS) {
        const date = new Date(t).toISOString().slice(0, 10);
        assert.equal(isColombianHoliday(date), festivos.has(date), date);
      }
    }
  });

  test('isColombianHoliday rejects malformed and impossible dates', () => {
    for (const bad of ['2025-1-6', '2025-01-06T00:00', '', '2025-02-30', '2025-13-01', '2025-00-10']) {
      assert.throws(() => isColombianHoliday(bad), RangeError, bad);
    }
  });

  test('years that Date.UTC would misread (0–99) and far years are computed on their own calendar', () => {
    assert.equal(isColombianHoliday('0050-12-25'), true);
    assert.equal(colombianHolidays(50)[0].date, '0050-01-01');
    assert.equal(colombianHolidays(9999).length >= 17, true);
    assert.equal(colombianHolidays(-10)[0].date, '-000010-01-01');
  });

  test('property: any year has 17 or 18 festivos, each in that year, sorted, the moved ones on Mondays', () => {
    const mondayOnly = new Set([
      'Reyes',
      'San José',
      'San Pedro',
      'Asunción',
      'Raza',
      'Todos los Santos',
      'Cartagena',
      'Ascensión',
      'Corpus',
      'Sagrado',
    ]);
    fc.assert(
      fc.property(fc.integer({ min: 1583, max: 9999 }), (year) => {
        const holidays = colombianHolidays(year);
        assert.ok(holidays.length === 17 || holidays.length === 18, `${year}: ${holidays.length}`);
        const dates = holidays.map((holiday) => holiday.date);
        assert.deepEqual([...dates].sort(), dates);
        assert.equal(new Set(dates).size, dates.length);
        for (const { date, name } of holidays) {
          assert.ok(date.startsWith(`${year}-`), date);
          if ([...mondayOnly].some((word) => name.includes(word))) assert.equal(new Date(`${date}T00:00Z`).getUTCDay(), 1, `${name} ${date}`);
        }
        const easter = easterSunday(year);
        const easterDate = new Date(`${isoOf(easter)}T00:00Z`);
        assert.equal(easterDate.getUTCDay(), 0);
        assert.ok(isoOf(easter).slice(5) >= '03-22' && isoOf(easter).slice(5) <= '04-25');
      }),
      { numRuns: 200 },
    );
  });
});

describe('contact windows (Ley 2300 de 2023)', () => {
  test('CONTACT_WINDOWS: weekdays 07:00–19:00, Saturday 08:00–15:00, Sunday none', () => {
    assert.deepEqual(CONTACT_WINDOWS, { 0: null, 1: [420, 1140], 2: [420, 1140], 3: [420, 1140], 4: [420, 1140], 5: [420, 1140], 6: [480, 900] });
    assert.ok(Object.isFrozen(CONTACT_WINDOWS));
  });

  test('Saturday: 14:59:59 allowed, 15:00 not, 07:59:59 not, 08:00 allowed', () => {
    assert.equal(mayContactAt(bogota('2025-03-08T14:59:59')), true);
    assert.equal(mayContactAt(bogota('2025-03-08T14:59:59.999')), true);
    assert.equal(mayContactAt(bogota('2025-03-08T15:00:00')), false);
    assert.equal(mayContactAt(bogota('2025-03-08T07:59:59')), false);
    assert.equal(mayContactAt(bogota('2025-03-08T08:00:00')), true);
  });

  test('weekday: 06:59:59 not, 07:00 allowed, 18:59:59 allowed, 19:00 not', () => {
    assert.equal(mayContactAt(bogota('2025-03-05T06:59:59')), false);
    assert.equal(mayContactAt(bogota('2025-03-05T07:00:00')), true);
    assert.equal(mayContactAt(bogota('2025-03-05T18:59:59')), true);
    assert.equal(mayContactAt(bogota('2025-03-05T19:00:00')), false);
    // The same instants in UTC, so the offset is checked too.
    assert.equal(mayContactAt(new Date('2025-03-05T12:00:00Z')), true);
    assert.equal(mayContactAt(new Date('2025-03-06T00:00:00Z')), false);
  });

  test('never on Sundays or festivos', () => {
    assert.equal(mayContactAt(bogota('2025-03-09T10:00')), false);
    assert.equal(mayContactAt(bogota('2025-01-06T10:00')), false);
    assert.equal(mayContactAt(bogota('2025-04-17T10:00')), false);
    assert.equal(mayContactAt(bogota('2025-12-25T10:00')), false);
  });

  test('an allowed instant is its own next window', () => {
    const at = bogota('2025-03-05T10:17:23.456');
    assert.equal(nextContactWindow(at).getTime(), at.getTime());
  });

  test('nextContactWindow: the documented cases', () => {
    const cases: [from: string, expectedUtc: string][] = [
      // Saturday afternoon before the Reyes Monday festivo → Tuesday 07:00.
      ['2025-01-04T16:00', '2025-01-07T12:00:00.000Z'],
      // Holy Thursday → Saturday 08:00, Good Friday being a festivo too.
      ['2025-04-17T10:00', '2025-04-19T13:00:00.000Z'],
      // Sunday → Monday 07:00.
      ['2025-03-09T10:00', '2025-03-10T12:00:00.000Z'],
      // Saturday 15:00 → Monday 07:00; → Tuesday when that Monday is San José.
      ['2025-03-08T15:00', '2025-03-10T12:00:00.000Z'],
      ['2025-03-22T15:00', '2025-03-25T12:00:00.000Z'],
      // Friday 19:30 (already the next day in UTC) → Saturday 08:00.
      ['2025-03-07T19:30', '2025-03-08T13:00:00.000Z'],
      // Early morning → 07:00 the same day.
      ['2025-03-05T05:00', '2025-03-05T12:00:00.000Z'],
      // Weekday 19:00 exactly → next morning.
      ['2025-03-05T19:00', '2025-03-06T12:00:00.000Z'],
      // New Year's Eve evening → January 2 (January 1 is a festivo).
      ['2025-12-31T19:00', '2026-01-02T12:00:00.000Z'],
    ];
    for (const [from, expected] of cases) assert.equal(nextContactWindow(bogota(from)).toISOString(), expected, from);
  });

  test('rejects an invalid Date', () => {
    assert.throws(() => mayContactAt(new Date(Number.NaN)), RangeError);
    assert.throws(() => nextContactWindow(new Date(Number.NaN)), RangeError);
  });

  test('works far from today (year 50, year 9999, before 1970)', () => {
    for (const at of [new Date('0050-07-20T15:00:00Z'), new Date('9999-06-15T03:00:00Z'), new Date('1900-01-01T00:00:00Z')]) {
      const next = nextContactWindow(at);
      assert.ok(next.getTime() >= at.getTime());
      assert.equal(mayContactAt(next), true);
    }
  });
});

describe('contact windows: properties', () => {
  const from = Date.UTC(2020, 0, 1);
  const to = Date.UTC(2036, 0, 1) - 1;
  const quarters = { min: from / QUARTER_HOUR_MS, max: Math.floor(to / QUARTER_HOUR_MS) };
  // Uniform instants plus quarter-hour marks and their neighbours, where the window edges are.
  const instant = fc
    .oneof(
      fc.integer({ min: from, max: to }),
      fc.integer(quarters).map((quarter) => quarter * QUARTER_HOUR_MS),
      fc.tuple(fc.integer(quarters), fc.constantFrom(-1, 1)).map(([quarter, ms]) => quarter * QUARTER_HOUR_MS + ms),
    )
    .map((ms) => new Date(ms));

  test('the next window is at or after t, allowed, within 5 days, and nothing allowed is skipped', () => {
    fc.assert(
      fc.property(instant, (at) => {
        const next = nextContactWindow(at);
        assert.ok(next.getTime() >= at.getTime());
        assert.equal(mayContactAt(next), true);
        assert.ok(next.getTime() - at.getTime() <= 5 * DAY_MS);
        if (mayContactAt(at)) return;
        // Every window edge is on a quarter hour, so checking those marks (and each day's window start) covers the gap.
        const candidates: number[] = [];
        for (let mark = Math.floor(at.getTime() / QUARTER_HOUR_MS + 1) * QUARTER_HOUR_MS; mark < next.getTime(); mark += QUARTER_HOUR_MS)
          candidates.push(mark);
        for (let day = Math.floor((at.getTime() - 5 * HOUR_MS) / DAY_MS); day * DAY_MS <= next.getTime(); day++) {
          const window = CONTACT_WINDOWS[new Date(day * DAY_MS).getUTCDay() as keyof typeof CONTACT_WINDOWS];
          if (window) candidates.push(day * DAY_MS + 5 * HOUR_MS + window[0] * 60_000);
        }
        for (const t of candidates) {
          if (t > at.getTime() && t < next.getTime()) assert.equal(mayContactAt(new Date(t)), false, new Date(t).toISOString());
        }
      }),
      { numRuns: 200 },
    );
  });

  test('mayContactAt(t) exactly when nextContactWindow(t) is t', () => {
    fc.assert(
      fc.property(instant, (at) => {
        assert.equal(mayContactAt(at), nextContactWindow(at).getTime() === at.getTime());
      }),
      { numRuns: 200 },
    );
  });

  test('mayContactAt agrees with the IANA America/Bogota zone and the published festivos (2024–2030)', () => {
    const published = new Set(Object.values(PUBLISHED_FESTIVOS).flat());
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'America/Bogota',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
    });
    const weekdays = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
    const inRange = fc.integer({ min: Date.UTC(2024, 0, 1, 5), max: Date.UTC(2031, 0, 1, 5) - 1 });
    fc.assert(
      fc.property(
        fc.oneof(
          inRange,
          inRange.map((ms) => ms - (ms % QUARTER_HOUR_MS)),
        ),
        (ms) => {
          const local = Object.fromEntries(parts.formatToParts(new Date(ms)).map((part) => [part.type, part.value]));
          const date = `${local.year}-${local.month}-${local.day}`;
          const minute = Number(local.hour) * 60 + Number(local.minute);
          const weekday = weekdays.indexOf(local.weekday);
          const expected =
            !published.has(date) &&
            ((weekday >= 1 && weekday <= 5 && minute >= 420 && minute < 1140) || (weekday === 6 && minute >= 480 && minute < 900));
          assert.equal(
            mayContactAt(new Date(ms)),
            expected,
            `${new Date(ms).toISOString()} = ${date} ${local.hour}:${local.minute} ${local.weekday}`,
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});
