// Cron expressions of schedules, as both Velero (robfig/cron, 5 fields + @descriptors) and NAC's
// gateway (croner) accept them: parsing with precise errors (validateCron), a plain-words
// description (describeCron: "every day at 02:00") and the next run times (nextRuns, UTC).
import { fmt, t } from '../strings';

export type CronFieldName = 'minute' | 'hour' | 'dayOfMonth' | 'month' | 'dayOfWeek';

interface FieldSpec {
  name: CronFieldName;
  min: number;
  max: number;
  names?: string[];
  /** Offset of names[0] (months start at 1). */
  nameBase?: number;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const FIELDS: FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'dayOfMonth', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1 },
  { name: 'dayOfWeek', min: 0, max: 6, names: DAY_NAMES, nameBase: 0 },
];

/** The descriptors both Velero and the gateway understand, and what they stand for. */
export const CRON_MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@hourly': '0 * * * *',
};

export interface CronField {
  /** The field as written. */
  text: string;
  /** The matching values, ascending. */
  values: number[];
  /** Written as `*` or `?` (matters for day-of-month / day-of-week: then the other decides). */
  star: boolean;
  /** `*\/n` over the whole range: the step n. */
  everyStep?: number;
}

export interface ParsedCron {
  /** The five fields (a macro expanded). */
  expression: string;
  macro?: string;
  minute: CronField;
  hour: CronField;
  dayOfMonth: CronField;
  month: CronField;
  dayOfWeek: CronField;
}

export type CronParse = { ok: true; cron: ParsedCron } | { ok: false; error: string; field?: CronFieldName };

const c = () => t.schedules.cron;

function fieldLabel(name: CronFieldName): string {
  return c().fields[name];
}

function fail(error: string, field?: CronFieldName): CronParse {
  return { ok: false, error, field };
}

function parseValue(raw: string, spec: FieldSpec): number | string {
  const upper = raw.toUpperCase();
  if (spec.names) {
    const index = spec.names.indexOf(upper);
    if (index >= 0) return index + (spec.nameBase ?? 0);
  }
  if (!/^\d+$/.test(raw)) {
    if (/[LW#]/i.test(raw) && /^[\dLW#]+$/i.test(raw)) return fmt(c().unsupportedChar, { field: fieldLabel(spec.name), text: raw });
    return fmt(c().notANumber, { field: fieldLabel(spec.name), text: raw });
  }
  const value = Number(raw);
  if (spec.name === 'dayOfWeek' && value === 7) return c().sundaySeven;
  if (value < spec.min || value > spec.max) {
    return fmt(c().outOfRange, { field: fieldLabel(spec.name), value, min: spec.min, max: spec.max });
  }
  return value;
}

function parseField(text: string, spec: FieldSpec): CronField | string {
  const label = fieldLabel(spec.name);
  const star = text === '*' || text === '?';
  if (text === '?' && spec.name !== 'dayOfMonth' && spec.name !== 'dayOfWeek') return fmt(c().questionMark, { field: label });
  const values = new Set<number>();
  let everyStep: number | undefined;
  const parts = text.split(',');
  for (const part of parts) {
    if (!part) return fmt(c().emptyListItem, { field: label });
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined) return fmt(c().badStep, { field: label, text: part });
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) return fmt(c().badStep, { field: label, text: part });
      step = Number(stepText);
      if (step > spec.max - spec.min + 1) return fmt(c().stepTooLarge, { field: label, step, size: spec.max - spec.min + 1 });
    }
    let start: number;
    let end: number;
    if (range === '*' || range === '?') {
      start = spec.min;
      end = spec.max;
      if (stepText !== undefined && parts.length === 1) everyStep = step;
    } else {
      const bounds = range.split('-');
      if (bounds.length > 2 || bounds.some((bound) => bound === '')) return fmt(c().badRange, { field: label, text: part });
      const first = parseValue(bounds[0], spec);
      if (typeof first === 'string') return first;
      start = first;
      if (bounds.length === 2) {
        const second = parseValue(bounds[1], spec);
        if (typeof second === 'string') return second;
        end = second;
        if (end < start) return fmt(c().reversedRange, { field: label, text: part });
      } else {
        end = stepText !== undefined ? spec.max : start;
      }
    }
    for (let value = start; value <= end; value += step) values.add(value);
  }
  return { text, values: [...values].sort((a, b) => a - b), star, everyStep };
}

/** Parses a schedule expression: five fields or one of the @descriptors. */
export function parseCron(input: string): CronParse {
  const text = input.trim();
  if (!text) return fail(c().empty);
  let expression = text;
  let macro: string | undefined;
  if (text.startsWith('@')) {
    const lower = text.toLowerCase();
    if (lower.startsWith('@every')) return fail(c().everyUnsupported);
    if (!(lower in CRON_MACROS)) return fail(fmt(c().unknownMacro, { macro: text, macros: Object.keys(CRON_MACROS).join(', ') }));
    macro = lower;
    expression = CRON_MACROS[lower];
  }
  if (/^(CRON_)?TZ=/i.test(text)) return fail(c().timeZoneUnsupported);
  const parts = expression.split(/\s+/);
  if (parts.length !== 5) return fail(fmt(c().fieldCount, { count: parts.length }));
  const fields: CronField[] = [];
  for (let index = 0; index < 5; index += 1) {
    const parsed = parseField(parts[index], FIELDS[index]);
    if (typeof parsed === 'string') return fail(parsed, FIELDS[index].name);
    fields.push(parsed);
  }
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields;
  const cron: ParsedCron = { expression: parts.join(' '), macro, minute, hour, dayOfMonth, month, dayOfWeek };
  if (nextRuns(cron, new Date(Date.UTC(2000, 0, 1)), 1, 366 * 8).length === 0) {
    return fail(c().neverRuns, 'dayOfMonth');
  }
  return { ok: true, cron };
}

/** Why an expression is not a valid schedule, or null. */
export function validateCron(input: string): string | null {
  const parsed = parseCron(input);
  return parsed.ok ? null : parsed.error;
}

// ---- description ----

const pad = (n: number) => String(n).padStart(2, '0');

function joinWords(words: string[]): string {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')}${c().and}${words[words.length - 1]}`;
}

/** Contiguous runs of values, as "a to b" when three or more. */
function runs(values: number[], name: (value: number) => string): string[] {
  const out: string[] = [];
  let index = 0;
  while (index < values.length) {
    let end = index;
    while (end + 1 < values.length && values[end + 1] === values[end] + 1) end += 1;
    if (end - index >= 2) out.push(fmt(c().range, { from: name(values[index]), to: name(values[end]) }));
    else for (let i = index; i <= end; i += 1) out.push(name(values[i]));
    index = end + 1;
  }
  return out;
}

const dayName = (value: number) => c().days[value];
const monthName = (value: number) => c().months[value - 1];

function isFullRange(field: CronField, size: number): boolean {
  return field.values.length === size;
}

/** The time-of-day part: fixed times, or a recurrence. */
function describeTime(cron: ParsedCron): { fixed: boolean; text: string } {
  const { minute, hour } = cron;
  const allMinutes = isFullRange(minute, 60);
  const allHours = isFullRange(hour, 24);
  const explicitMinutes = !allMinutes && !minute.everyStep;
  if (explicitMinutes && !hour.star && !hour.everyStep && minute.values.length * hour.values.length <= 6) {
    const times = hour.values.flatMap((h) => minute.values.map((m) => `${pad(h)}:${pad(m)}`));
    return { fixed: true, text: fmt(c().atTimes, { times: joinWords(times) }) };
  }
  let minutesText: string;
  if (allMinutes) minutesText = c().everyMinute;
  else if (minute.everyStep) minutesText = fmt(c().everyNMinutes, { n: minute.everyStep });
  else minutesText = fmt(minute.values.length === 1 ? c().atMinute : c().atMinutes, { minutes: joinWords(minute.values.map(String)) });
  if (allHours) return { fixed: false, text: allMinutes || minute.everyStep ? minutesText : fmt(c().everyHourAt, { minutes: minutesText }) };
  if (hour.everyStep && !allMinutes && !minute.everyStep) {
    return { fixed: false, text: fmt(c().hoursAt, { hours: fmt(c().everyNHours, { n: hour.everyStep }), minutes: minutesText }) };
  }
  const contiguous = hour.values.length >= 2 && hour.values[hour.values.length - 1] - hour.values[0] === hour.values.length - 1;
  const hoursText = contiguous
    ? fmt(c().betweenHours, { from: `${pad(hour.values[0])}:00`, to: `${pad(hour.values[hour.values.length - 1])}:59` })
    : fmt(hour.values.length === 1 ? c().inHour : c().inHours, { hours: joinWords(hour.values.map(String)) });
  return { fixed: false, text: fmt(c().duringHours, { minutes: minutesText, hours: hoursText }) };
}

/** The days part: "every Monday to Friday", "on day 1 of the month", or "" for every day. */
function describeDays(cron: ParsedCron, fixed: boolean): string {
  const { dayOfMonth, dayOfWeek } = cron;
  const domRestricted = !dayOfMonth.star && !isFullRange(dayOfMonth, 31);
  const dowRestricted = !dayOfWeek.star && !isFullRange(dayOfWeek, 7);
  let domText = '';
  if (domRestricted && dayOfMonth.everyStep) domText = fmt(c().everyNDaysOfMonth, { n: dayOfMonth.everyStep });
  else if (domRestricted) {
    domText = fmt(dayOfMonth.values.length === 1 ? c().onDayOfMonth : c().onDaysOfMonth, { days: joinWords(runs(dayOfMonth.values, String)) });
  }
  const dowText = dowRestricted ? fmt(fixed ? c().everyWeekday : c().onWeekday, { days: joinWords(runs(dayOfWeek.values, dayName)) }) : '';
  // Cron runs on either when both are restricted (and only the restricted one when one is `*`).
  if (domText && dowText) return fmt(c().daysOr, { dom: domText, dow: dowText });
  return domText || dowText;
}

function describeMonths(cron: ParsedCron): string {
  if (cron.month.star || isFullRange(cron.month, 12)) return '';
  return fmt(c().inMonths, { months: joinWords(runs(cron.month.values, monthName)) });
}

/** The schedule in plain words ("every day at 02:00"), or the error when it is not valid. */
export function describeCron(input: string | ParsedCron): string {
  let cron: ParsedCron;
  if (typeof input === 'string') {
    const parsed = parseCron(input);
    if (!parsed.ok) return parsed.error;
    cron = parsed.cron;
  } else cron = input;
  const time = describeTime(cron);
  const months = describeMonths(cron);
  const yearly =
    time.fixed &&
    cron.dayOfMonth.values.length === 1 &&
    !cron.dayOfMonth.star &&
    cron.month.values.length === 1 &&
    cron.dayOfWeek.star;
  if (yearly) {
    return fmt(c().yearlyOn, { month: monthName(cron.month.values[0]), day: cron.dayOfMonth.values[0], time: time.text });
  }
  const days = describeDays(cron, time.fixed);
  let text: string;
  if (time.fixed) text = days ? fmt(c().daysAtTime, { days, time: time.text }) : fmt(c().everyDayAt, { time: time.text });
  else text = days ? fmt(c().recurringOnDays, { time: time.text, days }) : time.text;
  return months ? fmt(c().withMonths, { text, months }) : text;
}

// ---- next runs ----

function dayMatches(cron: ParsedCron, date: Date): boolean {
  if (!cron.month.values.includes(date.getUTCMonth() + 1)) return false;
  const dom = cron.dayOfMonth.values.includes(date.getUTCDate());
  const dow = cron.dayOfWeek.values.includes(date.getUTCDay());
  if (cron.dayOfMonth.star || cron.dayOfWeek.star) return dom && dow;
  return dom || dow;
}

/** The next `count` run times strictly after `from` (UTC), looking at most `maxDays` days ahead. */
export function nextRuns(cron: ParsedCron, from: Date, count: number, maxDays = 366 * 5): Date[] {
  const runs: Date[] = [];
  const start = Math.floor(from.getTime() / 60000) * 60000 + 60000;
  const day = new Date(start);
  day.setUTCHours(0, 0, 0, 0);
  for (let d = 0; d <= maxDays && runs.length < count; d += 1) {
    if (dayMatches(cron, day)) {
      for (const hour of cron.hour.values) {
        for (const minute of cron.minute.values) {
          const at = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), hour, minute);
          if (at >= start) {
            runs.push(new Date(at));
            if (runs.length >= count) return runs;
          }
        }
      }
    }
    day.setUTCDate(day.getUTCDate() + 1);
  }
  return runs;
}
