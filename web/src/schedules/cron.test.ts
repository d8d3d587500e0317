// Tests of cron parsing, validation, plain-words descriptions and next run times.
import { describe, expect, it } from 'vitest';
import { describeCron, nextRuns, parseCron, validateCron, type ParsedCron } from './cron';

function parsed(text: string): ParsedCron {
  const result = parseCron(text);
  if (!result.ok) throw new Error(`${text}: ${result.error}`);
  return result.cron;
}

describe('validateCron accepts', () => {
  it.each([
    '* * * * *',
    '0 2 * * *',
    '*/5 * * * *',
    '0 */6 * * *',
    '0,30 9-17 * * 1-5',
    '15 3 1,15 * *',
    '0 0 1 JAN *',
    '0 18 * * MON-FRI',
    '0 18 * * mon,wed,fri',
    '0 0 ? * SUN',
    '0 0 1 * ?',
    '0-30/10 * * * *',
    '5/15 * * * *',
    '59 23 31 12 6',
    '  0   2  *  *  *  ',
    '@daily',
    '@HOURLY',
    '@weekly',
    '@monthly',
    '@yearly',
    '@annually',
    '0 0 29 2 *',
  ])('%s', (expression) => {
    expect(validateCron(expression)).toBeNull();
  });
});

describe('validateCron refuses with a precise reason', () => {
  it.each([
    ['', 'Enter a schedule, e.g. 0 2 * * * or @daily.'],
    ['0 2 * *', 'A schedule has 5 fields (minute hour day-of-month month day-of-week); this one has 4.'],
    ['0 0 2 * * *', 'A schedule has 5 fields (minute hour day-of-month month day-of-week); this one has 6.'],
    ['60 * * * *', 'Minute: 60 is outside 0–59.'],
    ['0 24 * * *', 'Hour: 24 is outside 0–23.'],
    ['0 0 0 * *', 'Day of month: 0 is outside 1–31.'],
    ['0 0 32 * *', 'Day of month: 32 is outside 1–31.'],
    ['0 0 * 13 *', 'Month: 13 is outside 1–12.'],
    ['0 0 * * 7', 'Day of week: use 0 (or SUN) for Sunday; Velero does not accept 7.'],
    ['0 0 * * 8', 'Day of week: 8 is outside 0–6.'],
    ['x * * * *', 'Minute: "x" is not a number or name.'],
    ['0 0 * FOO *', 'Month: "FOO" is not a number or name.'],
    ['0 0 * * MONDAY', 'Day of week: "MONDAY" is not a number or name.'],
    ['0 0 L * *', 'Day of month: "L" uses L, W or #, which Velero does not understand.'],
    ['0 0 * * 1#2', 'Day of week: "1#2" uses L, W or #, which Velero does not understand.'],
    ['? * * * *', 'Minute: "?" is only allowed for the day of month or week.'],
    ['1,,2 * * * *', 'Minute: a list has an empty entry (two commas, or a comma at an end).'],
    ['1, * * * *', 'Minute: a list has an empty entry (two commas, or a comma at an end).'],
    ['*/0 * * * *', 'Minute: "*/0" is not a valid step (write */15 or 0-30/5).'],
    ['*/x * * * *', 'Minute: "*/x" is not a valid step (write */15 or 0-30/5).'],
    ['*/5/2 * * * *', 'Minute: "*/5/2" is not a valid step (write */15 or 0-30/5).'],
    ['*/61 * * * *', 'Minute: a step of 61 is larger than the 60 possible values.'],
    ['0 5-1 * * *', 'Hour: "5-1" starts after it ends.'],
    ['0 1-2-3 * * *', 'Hour: "1-2-3" is not a valid range (write 1-5).'],
    ['0 1- * * *', 'Hour: "1-" is not a valid range (write 1-5).'],
    ['0 0 * * FRI-MON', 'Day of week: "FRI-MON" starts after it ends.'],
    ['@every 1h', '@every is not accepted here; write a cron expression, e.g. */30 * * * * for every 30 minutes.'],
    ['@midnight', '@midnight is not known; use one of @yearly, @annually, @monthly, @weekly, @daily, @hourly.'],
    ['CRON_TZ=Europe/Paris 0 2 * * *', 'Time zone prefixes (CRON_TZ=, TZ=) are not accepted; schedules run in the cluster’s time zone.'],
    ['0 0 30 2 *', 'This schedule never runs (no such date, e.g. 30 February).'],
    ['0 0 31 4,6,9,11 *', 'This schedule never runs (no such date, e.g. 30 February).'],
  ])('%j', (expression, message) => {
    expect(validateCron(expression)).toBe(message);
  });

  it('names the failing field', () => {
    const result = parseCron('0 25 * * *');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.field).toBe('hour');
  });
});

describe('parseCron', () => {
  it('expands ranges, steps, lists and names', () => {
    const cron = parsed('0-30/10 9-11,14 1,15 JAN-MAR MON-WED');
    expect(cron.minute.values).toEqual([0, 10, 20, 30]);
    expect(cron.hour.values).toEqual([9, 10, 11, 14]);
    expect(cron.dayOfMonth.values).toEqual([1, 15]);
    expect(cron.month.values).toEqual([1, 2, 3]);
    expect(cron.dayOfWeek.values).toEqual([1, 2, 3]);
  });

  it('reads `n/step` as from n to the end', () => {
    expect(parsed('5/20 * * * *').minute.values).toEqual([5, 25, 45]);
  });

  it('marks `*` and `?` as star, and `*/n` as a step, not a star', () => {
    const cron = parsed('*/15 * ? * *');
    expect(cron.minute.star).toBe(false);
    expect(cron.minute.everyStep).toBe(15);
    expect(cron.hour.star).toBe(true);
    expect(cron.dayOfMonth.star).toBe(true);
    expect(cron.hour.values).toHaveLength(24);
  });

  it('expands macros', () => {
    const cron = parsed('@weekly');
    expect(cron.macro).toBe('@weekly');
    expect(cron.expression).toBe('0 0 * * 0');
  });
});

describe('describeCron', () => {
  it.each([
    ['0 2 * * *', 'every day at 02:00'],
    ['30 14 * * *', 'every day at 14:30'],
    ['@daily', 'every day at 00:00'],
    ['0 2,14 * * *', 'every day at 02:00 and 14:00'],
    ['0,30 8 * * *', 'every day at 08:00 and 08:30'],
    ['* * * * *', 'every minute'],
    ['*/5 * * * *', 'every 5 minutes'],
    ['15 * * * *', 'every hour at minute 15'],
    ['@hourly', 'every hour at minute 0'],
    ['0,30 * * * *', 'every hour at minutes 0 and 30'],
    ['0 */6 * * *', 'every 6 hours at minute 0'],
    ['*/15 9-17 * * *', 'every 15 minutes from 09:00 to 17:59'],
    ['*/10 9,13 * * *', 'every 10 minutes in hours 9 and 13'],
    ['* 3 * * *', 'every minute in hour 3'],
    ['0 18 * * 1-5', 'every Monday to Friday at 18:00'],
    ['0 18 * * MON-FRI', 'every Monday to Friday at 18:00'],
    ['0 3 * * 0', 'every Sunday at 03:00'],
    ['@weekly', 'every Sunday at 00:00'],
    ['0 9 * * 1,3,5', 'every Monday, Wednesday and Friday at 09:00'],
    ['0 9 * * 1,2', 'every Monday and Tuesday at 09:00'],
    ['*/30 * * * 6,0', 'every 30 minutes on Sunday and Saturday'],
    ['0 0 1 * *', 'on day 1 of the month at 00:00'],
    ['@monthly', 'on day 1 of the month at 00:00'],
    ['0 4 1,15 * *', 'on days 1 and 15 of the month at 04:00'],
    ['0 4 1-7 * *', 'on days 1 to 7 of the month at 04:00'],
    ['0 4 */2 * *', 'every 2 days of the month (from day 1) at 04:00'],
    ['0 0 1 * 1', 'on day 1 of the month and every Monday at 00:00'],
    ['@yearly', 'every year on January 1 at 00:00'],
    ['30 6 25 12 *', 'every year on December 25 at 06:30'],
    ['0 2 * 1,7 *', 'every day at 02:00 in January and July'],
    ['0 2 * 3-6 *', 'every day at 02:00 in March to June'],
    ['0 2 * * 1-5', 'every Monday to Friday at 02:00'],
    ['0 0,6,12,18 * * *', 'every day at 00:00, 06:00, 12:00 and 18:00'],
    ['0 0-23/3 * * *', 'at minute 0 in hours 0, 3, 6, 9, 12, 15, 18 and 21'],
    ['0 * * * 1-5', 'every hour at minute 0 on Monday to Friday'],
  ])('%s → %s', (expression, words) => {
    expect(describeCron(expression)).toBe(words);
  });

  it('returns the error for an invalid expression', () => {
    expect(describeCron('0 24 * * *')).toBe('Hour: 24 is outside 0–23.');
  });
});

describe('nextRuns', () => {
  const from = new Date('2026-11-23T05:59:30Z');

  it('finds the next daily runs', () => {
    expect(nextRuns(parsed('0 2 * * *'), from, 3).map((d) => d.toISOString())).toEqual([
      '2026-11-24T02:00:00.000Z',
      '2026-11-25T02:00:00.000Z',
      '2026-11-26T02:00:00.000Z',
    ]);
  });

  it('starts strictly after the given minute', () => {
    expect(nextRuns(parsed('*/5 * * * *'), new Date('2026-11-23T06:00:00Z'), 2).map((d) => d.toISOString())).toEqual([
      '2026-11-23T06:05:00.000Z',
      '2026-11-23T06:10:00.000Z',
    ]);
  });

  it('runs weekdays only (2026-11-23 is a Monday)', () => {
    const runs = nextRuns(parsed('0 18 * * MON-FRI'), new Date('2026-11-27T19:00:00Z'), 2);
    expect(runs.map((d) => d.toISOString())).toEqual(['2026-11-30T18:00:00.000Z', '2026-12-01T18:00:00.000Z']);
  });

  it('ORs day of month and day of week when both are restricted', () => {
    const runs = nextRuns(parsed('0 0 1 * 3'), new Date('2026-11-23T00:00:00Z'), 3);
    // Wednesdays 25 Nov and 2 Dec, and the 1st of December (a Tuesday).
    expect(runs.map((d) => d.toISOString())).toEqual(['2026-11-25T00:00:00.000Z', '2026-12-01T00:00:00.000Z', '2026-12-02T00:00:00.000Z']);
  });

  it('finds 29 February in the next leap year', () => {
    expect(nextRuns(parsed('0 0 29 2 *'), from, 1).map((d) => d.toISOString())).toEqual(['2028-02-29T00:00:00.000Z']);
  });
});
