import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  FREQUENCIES,
  MIDNIGHT,
  addPeriod,
  cycleDueDate,
  cycleIndexAt,
  daysInMonth,
  formatLocalDate,
  isFrequency,
  isMonthBased,
  isValidLocalDate,
  localDateOf,
  localInstant,
  parseLocalDate,
  periodEnd,
  type Frequency,
  type LocalDate,
  type LocalTime,
} from './calendar.ts';

const DAY = 86_400_000;
const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const MONTH_STEPS = { monthly: 1, bimonthly: 2, quarterly: 3, semiannual: 6, annual: 12 } as const;
const DAY_STEPS = { daily: 1, weekly: 7, biweekly: 14 } as const;
const MONTH_BASED = Object.keys(MONTH_STEPS) as (keyof typeof MONTH_STEPS)[];
const DAY_BASED = Object.keys(DAY_STEPS) as (keyof typeof DAY_STEPS)[];
// 2100 is the non-leap century year, 2000 the leap one.
const YEARS = [2023, 2024, 2100, 2000];

const d = (s: string): LocalDate => {
  const date = parseLocalDate(s);
  assert.ok(date, `test date ${s}`);
  return date;
};
const dueDay = (anchor: string, f: Frequency, n: number, at?: LocalTime) => formatLocalDate(localDateOf(cycleDueDate(d(anchor), f, n, at)));
const dueDays = (anchor: string, f: Frequency, count: number) => Array.from({ length: count }, (_, n) => dueDay(anchor, f, n));

// Oracles independent of the module: Date.UTC for month lengths and for the −05:00 instant.
const oracleDaysInMonth = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();
const oracleInstant = (date: LocalDate, at: LocalTime) => Date.UTC(date.year, date.month - 1, date.day, at.hour + 5, at.minute);

function* anchors(): Generator<LocalDate> {
  for (const year of YEARS)
    for (let month = 1; month <= 12; month++) for (let day = 1; day <= oracleDaysInMonth(year, month); day++) yield { year, month, day };
}

const localDateArb = fc
  .record({ year: fc.integer({ min: 1900, max: 2400 }), month: fc.integer({ min: 1, max: 12 }), day: fc.integer({ min: 1, max: 31 }) })
  .map((x) => ({ ...x, day: Math.min(x.day, oracleDaysInMonth(x.year, x.month)) }));
const timeArb = fc.record({ hour: fc.integer({ min: 0, max: 23 }), minute: fc.integer({ min: 0, max: 59 }) });
const frequencyArb = fc.constantFrom(...FREQUENCIES);

describe('subscription calendar: dates', () => {
  test('parseLocalDate accepts real dates only and returns null otherwise', () => {
    assert.deepEqual(parseLocalDate('2024-02-29'), { year: 2024, month: 2, day: 29 });
    assert.deepEqual(parseLocalDate('2000-02-29'), { year: 2000, month: 2, day: 29 });
    for (const bad of [
      '2025-02-29',
      '2100-02-29',
      '2025-04-31',
      '2025-13-01',
      '2025-00-10',
      '2025-01-00',
      '2025-1-01',
      '25-01-01',
      '2025-01-01T00:00',
      ' 2025-01-01',
      '2025-01-01 ',
      '',
    ])
      assert.equal(parseLocalDate(bad), null, bad);
  });

  test('formatLocalDate pads and round-trips with parseLocalDate', () => {
    assert.equal(formatLocalDate({ year: 987, month: 3, day: 4 }), '0987-03-04');
    fc.assert(
      fc.property(localDateArb, (date) => {
        assert.deepEqual(parseLocalDate(formatLocalDate(date)), date);
      }),
      { numRuns: RUNS },
    );
  });

  test('daysInMonth and isValidLocalDate agree with Date.UTC', () => {
    for (let year = 1896; year <= 2404; year++)
      for (let month = 1; month <= 12; month++) {
        assert.equal(daysInMonth(year, month), oracleDaysInMonth(year, month), `${year}-${month}`);
        assert.ok(isValidLocalDate({ year, month, day: daysInMonth(year, month) }));
        assert.ok(!isValidLocalDate({ year, month, day: daysInMonth(year, month) + 1 }));
      }
    assert.ok(!isValidLocalDate({ year: 2025, month: 1, day: 1.5 }));
  });

  test('local midnight is 05:00 UTC; 23:30 local falls on the next UTC day', () => {
    assert.equal(localInstant(d('2025-03-01')).toISOString(), '2025-03-01T05:00:00.000Z');
    assert.equal(cycleDueDate(d('2025-03-01'), 'monthly', 0).toISOString(), '2025-03-01T05:00:00.000Z');
    const late = cycleDueDate(d('2025-03-01'), 'monthly', 0, { hour: 23, minute: 30 });
    assert.equal(late.toISOString(), '2025-03-02T04:30:00.000Z');
    assert.equal(late.getUTCDate(), 2);
    assert.equal(formatLocalDate(localDateOf(late)), '2025-03-01');
    // Year-end: 31 Dec 23:30 local is already New Year in UTC.
    assert.equal(cycleDueDate(d('2025-12-31'), 'annual', 0, { hour: 23, minute: 30 }).toISOString(), '2026-01-01T04:30:00.000Z');
  });

  test('localDateOf switches day at 05:00 UTC', () => {
    assert.equal(formatLocalDate(localDateOf(new Date('2025-03-01T04:59:59.999Z'))), '2025-02-28');
    assert.equal(formatLocalDate(localDateOf(new Date('2025-03-01T05:00:00.000Z'))), '2025-03-01');
    assert.equal(formatLocalDate(localDateOf(new Date('2025-01-01T04:00:00.000Z'))), '2024-12-31');
    assert.throws(() => localDateOf(new Date(NaN)), RangeError);
  });

  test('the fixed −05:00 offset agrees with the America/Bogota time zone (2000–2100)', () => {
    const bogota = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Bogota', year: 'numeric', month: '2-digit', day: '2-digit' });
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }), (ms) => {
        assert.equal(formatLocalDate(localDateOf(new Date(ms))), bogota.format(new Date(ms)));
      }),
      { numRuns: RUNS },
    );
  });

  test('localDateOf inverts localInstant at any time of day', () => {
    fc.assert(
      fc.property(localDateArb, timeArb, (date, at) => {
        const instant = localInstant(date, at);
        assert.equal(instant.getTime(), oracleInstant(date, at));
        assert.deepEqual(localDateOf(instant), date);
      }),
      { numRuns: RUNS },
    );
  });

  test('addPeriod clamps month-based steps and moves day-based steps by calendar days', () => {
    assert.deepEqual(addPeriod(d('2025-01-31'), 'monthly', 1), d('2025-02-28'));
    assert.deepEqual(addPeriod(d('2025-01-31'), 'monthly', 2), d('2025-03-31'));
    assert.deepEqual(addPeriod(d('2025-03-31'), 'monthly', -1), d('2025-02-28'));
    assert.deepEqual(addPeriod(d('2025-11-15'), 'quarterly', 1), d('2026-02-15'));
    assert.deepEqual(addPeriod(d('2025-12-25'), 'weekly', 1), d('2026-01-01'));
    assert.deepEqual(addPeriod(d('2024-02-22'), 'biweekly', 1), d('2024-03-07'));
    assert.deepEqual(addPeriod(d('2025-02-22'), 'biweekly', 1), d('2025-03-08'));
    assert.deepEqual(addPeriod(d('2025-01-01'), 'daily', -1), d('2024-12-31'));
    assert.deepEqual(addPeriod(d('2025-06-15'), 'annual', 0), d('2025-06-15'));
    assert.throws(() => addPeriod(d('2025-01-01'), 'daily', 1.5), RangeError);
    assert.throws(() => addPeriod({ year: 2025, month: 2, day: 29 }, 'daily', 1), RangeError);
  });

  test('frequencies', () => {
    assert.deepEqual([...FREQUENCIES], ['daily', 'weekly', 'biweekly', 'monthly', 'bimonthly', 'quarterly', 'semiannual', 'annual']);
    assert.ok(isFrequency('quarterly'));
    assert.ok(!isFrequency('Monthly'));
    assert.ok(!isFrequency(3));
    assert.deepEqual(FREQUENCIES.filter(isMonthBased), MONTH_BASED);
  });
});

describe('subscription calendar: cycles (examples)', () => {
  test('monthly from Jan 31 clamps to the month end and returns to the 31st', () => {
    assert.deepEqual(dueDays('2025-01-31', 'monthly', 5), ['2025-01-31', '2025-02-28', '2025-03-31', '2025-04-30', '2025-05-31']);
    assert.equal(dueDay('2024-01-31', 'monthly', 1), '2024-02-29');
    assert.equal(dueDay('2025-01-31', 'monthly', 12), '2026-01-31');
  });

  test('annual from Feb 29 is Feb 28 except in leap years', () => {
    assert.deepEqual(dueDays('2024-02-29', 'annual', 5), ['2024-02-29', '2025-02-28', '2026-02-28', '2027-02-28', '2028-02-29']);
  });

  test('quarterly from Aug 30 returns to the 30th after February', () => {
    assert.deepEqual(dueDays('2025-08-30', 'quarterly', 4), ['2025-08-30', '2025-11-30', '2026-02-28', '2026-05-30']);
  });

  test('other frequencies', () => {
    assert.deepEqual(dueDays('2025-12-30', 'daily', 4), ['2025-12-30', '2025-12-31', '2026-01-01', '2026-01-02']);
    assert.deepEqual(dueDays('2025-12-18', 'weekly', 3), ['2025-12-18', '2025-12-25', '2026-01-01']);
    assert.deepEqual(dueDays('2025-12-18', 'biweekly', 3), ['2025-12-18', '2026-01-01', '2026-01-15']);
    assert.deepEqual(dueDays('2025-12-31', 'bimonthly', 4), ['2025-12-31', '2026-02-28', '2026-04-30', '2026-06-30']);
    assert.deepEqual(dueDays('2025-08-31', 'semiannual', 3), ['2025-08-31', '2026-02-28', '2026-08-31']);
  });

  test('periodEnd is the due date of the next cycle', () => {
    assert.equal(periodEnd(d('2025-01-31'), 'monthly', 0).toISOString(), '2025-02-28T05:00:00.000Z');
    assert.equal(periodEnd(d('2025-01-31'), 'monthly', 1).toISOString(), '2025-03-31T05:00:00.000Z');
    assert.equal(periodEnd(d('2025-01-31'), 'weekly', 0, { hour: 9, minute: 15 }).toISOString(), '2025-02-07T14:15:00.000Z');
  });

  test('cycleIndexAt counts the cycles due by an instant', () => {
    const anchor = d('2025-01-31');
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2020-01-01T00:00:00Z')), 0);
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2025-01-31T04:59:59.999Z')), 0);
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2025-01-31T05:00:00.000Z')), 1);
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2025-02-28T04:59:59.999Z')), 1);
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2025-02-28T05:00:00.000Z')), 2);
    // Mar 30 is after the day Feb was clamped to but before the 31st: still two cycles.
    assert.equal(cycleIndexAt(anchor, 'monthly', new Date('2025-03-30T12:00:00.000Z')), 2);
    // Due at 23:30 local: the local date alone does not decide.
    const late = { hour: 23, minute: 30 };
    assert.equal(cycleIndexAt(d('2025-03-01'), 'daily', new Date('2025-03-02T04:29:59.999Z'), late), 0);
    assert.equal(cycleIndexAt(d('2025-03-01'), 'daily', new Date('2025-03-02T04:30:00.000Z'), late), 1);
  });

  test('cycleIndexAt is exact for a huge index: ~100 million daily cycles', () => {
    // From year 0 to the last instant a Date can hold.
    const anchor = { year: 0, month: 1, day: 1 };
    const origin = new Date(0);
    origin.setUTCFullYear(0, 0, 1);
    const first = origin.getTime() + 5 * 3_600_000;
    const last = new Date(8.64e15);
    assert.equal(cycleIndexAt(anchor, 'daily', last), Math.floor((last.getTime() - first) / DAY) + 1);
    assert.equal(cycleIndexAt(d('2000-01-01'), 'daily', new Date('2100-01-01T05:00:00.000Z')), 36_525 + 1);
    assert.equal(cycleIndexAt(d('2000-01-01'), 'daily', new Date('2100-01-01T04:59:59.999Z')), 36_525);
    assert.equal(cycleIndexAt(d('2000-01-01'), 'monthly', new Date('2100-01-01T05:00:00.000Z')), 1200 + 1);
  });

  test('invalid input is rejected', () => {
    const anchor = d('2025-01-31');
    assert.throws(() => cycleDueDate(anchor, 'monthly', -1), RangeError);
    assert.throws(() => cycleDueDate(anchor, 'monthly', 0.5), RangeError);
    assert.throws(() => cycleDueDate({ year: 2025, month: 2, day: 30 }, 'monthly', 0), RangeError);
    assert.throws(() => cycleDueDate(anchor, 'monthly', 0, { hour: 24, minute: 0 }), RangeError);
    assert.throws(() => cycleDueDate(anchor, 'monthly', 0, { hour: 0, minute: 60 }), RangeError);
    assert.throws(() => cycleDueDate(anchor, 'daily', 2 ** 40), RangeError);
    assert.throws(() => cycleIndexAt(anchor, 'monthly', new Date(NaN)), RangeError);
    assert.deepEqual(MIDNIGHT, { hour: 0, minute: 0 });
  });
});

describe('subscription calendar: cycles (properties)', () => {
  // Exhaustive over every real anchor of the four years × month-based frequency × cycles 0..36.
  test('month-based: the anchor day clamped to the month, month = anchor + n·step, increasing, indexable', () => {
    for (const at of [MIDNIGHT, { hour: 23, minute: 30 }])
      for (const anchor of anchors())
        for (const f of MONTH_BASED) {
          let previous = -Infinity;
          for (let n = 0; n <= 36; n++) {
            const due = cycleDueDate(anchor, f, n, at);
            const months = anchor.year * 12 + anchor.month - 1 + n * MONTH_STEPS[f];
            const year = Math.floor(months / 12);
            const month = (months % 12) + 1;
            const expected = { year, month, day: Math.min(anchor.day, oracleDaysInMonth(year, month)) };
            const where = `${formatLocalDate(anchor)} ${f} #${n} ${at.hour}:${at.minute}`;
            assert.deepEqual(localDateOf(due), expected, where);
            assert.equal(due.getTime(), oracleInstant(expected, at), where);
            assert.ok(due.getTime() > previous, where);
            assert.equal(cycleIndexAt(anchor, f, due, at), n + 1, where);
            assert.equal(cycleIndexAt(anchor, f, new Date(due.getTime() - 1), at), n, where);
            assert.equal(periodEnd(anchor, f, n, at).getTime(), cycleDueDate(anchor, f, n + 1, at).getTime(), where);
            previous = due.getTime();
          }
        }
  });

  test('day-based: consecutive due dates exactly step × 24 h apart, indexable', () => {
    for (const at of [MIDNIGHT, { hour: 23, minute: 30 }])
      for (const anchor of anchors())
        for (const f of DAY_BASED) {
          const first = cycleDueDate(anchor, f, 0, at).getTime();
          assert.equal(first, oracleInstant(anchor, at));
          for (let n = 0; n <= 36; n++) {
            const due = cycleDueDate(anchor, f, n, at).getTime();
            const where = `${formatLocalDate(anchor)} ${f} #${n}`;
            assert.equal(cycleDueDate(anchor, f, n + 1, at).getTime() - due, DAY_STEPS[f] * DAY, where);
            assert.equal(due, first + n * DAY_STEPS[f] * DAY, where);
            assert.equal(cycleIndexAt(anchor, f, new Date(due), at), n + 1, where);
            assert.equal(cycleIndexAt(anchor, f, new Date(due - 1), at), n, where);
          }
        }
  });

  test('random anchors, times and large cycle indices round-trip through cycleIndexAt', () => {
    fc.assert(
      fc.property(localDateArb, frequencyArb, fc.integer({ min: 0, max: 5000 }), timeArb, (anchor, f, n, at) => {
        const due = cycleDueDate(anchor, f, n, at).getTime();
        assert.ok(cycleDueDate(anchor, f, n + 1, at).getTime() > due);
        assert.equal(cycleIndexAt(anchor, f, new Date(due), at), n + 1);
        assert.equal(cycleIndexAt(anchor, f, new Date(due - 1), at), n);
        const date = localDateOf(new Date(due));
        assert.deepEqual(date, addPeriod(anchor, f, n));
        if (isMonthBased(f)) assert.equal(date.day, Math.min(anchor.day, oracleDaysInMonth(date.year, date.month)));
      }),
      { numRuns: RUNS },
    );
  });

  test('random instants: cycleIndexAt is the number of due dates ≤ the instant', () => {
    fc.assert(
      fc.property(localDateArb, frequencyArb, timeArb, fc.integer({ min: -400 * DAY, max: 40 * 366 * DAY }), (anchor, f, at, offset) => {
        const instant = new Date(localInstant(anchor).getTime() + offset);
        const k = cycleIndexAt(anchor, f, instant, at);
        if (k === 0) assert.ok(cycleDueDate(anchor, f, 0, at) > instant);
        else assert.ok(cycleDueDate(anchor, f, k - 1, at) <= instant);
        assert.ok(cycleDueDate(anchor, f, k, at) > instant);
      }),
      { numRuns: RUNS * 3 },
    );
  });
});
