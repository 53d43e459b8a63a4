export { colombianHolidays, easterSunday, isColombianHoliday, isHolidayDayNumber, type CalendarDate, type Holiday } from './holidays.ts';
export { CONTACT_WINDOWS, mayContactAt, nextContactWindow, type ContactWindow } from './policy.ts';
