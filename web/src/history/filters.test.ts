// Tests of the history filters: URL round trips, time windows and the API queries.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FILTERS,
  chartQuery,
  filtersFromSearch,
  filtersToSearch,
  historyQuery,
  isFiltered,
  localDate,
  parseLocalDate,
  rangePatch,
  statsQuery,
  windowOf,
  type HistoryFilters,
} from './filters';

const now = Date.parse('2026-11-23T06:00:00.000Z');

describe('filters in the URL', () => {
  it('round-trips every filter', () => {
    const filters: HistoryFilters = { kind: 'restore', phase: 'Failed', q: 'alice', range: 'custom', from: '2026-11-01', to: '2026-11-20' };
    const search = filtersToSearch(filters);
    expect(search.toString()).toBe('kind=restore&phase=Failed&q=alice&range=custom&from=2026-11-01&to=2026-11-20');
    expect(filtersFromSearch(search)).toEqual(filters);
  });
  it('leaves defaults out of the URL', () => {
    expect(filtersToSearch(DEFAULT_FILTERS).toString()).toBe('');
    expect(filtersToSearch({ ...DEFAULT_FILTERS, from: '2026-11-01', q: '  ' }).toString()).toBe('');
    expect(isFiltered(DEFAULT_FILTERS)).toBe(false);
    expect(isFiltered({ ...DEFAULT_FILTERS, range: '30d' })).toBe(true);
  });
  it('ignores values it does not know', () => {
    expect(filtersFromSearch(new URLSearchParams('kind=pods&phase=Exploded&range=1000y&from=yesterday'))).toEqual(DEFAULT_FILTERS);
  });
});

describe('local dates', () => {
  it('parses and prints YYYY-MM-DD in local time', () => {
    expect(parseLocalDate('2026-11-05')).toBe(new Date(2026, 10, 5).getTime());
    expect(localDate(new Date(2026, 0, 9, 23, 59).getTime())).toBe('2026-01-09');
    expect(parseLocalDate('2026-02-30')).toBeNaN();
    expect(parseLocalDate('')).toBeNaN();
  });
});

describe('windowOf', () => {
  it('ends presets now', () => {
    expect(windowOf({ ...DEFAULT_FILTERS, range: '24h' }, now)).toEqual({ from: now - 86_400_000, to: now });
    expect(windowOf(DEFAULT_FILTERS, now)).toEqual({ from: now - 7 * 86_400_000, to: now });
  });
  it('includes both days of a custom window, never past now', () => {
    const custom = { ...DEFAULT_FILTERS, range: 'custom' as const, from: '2026-11-01', to: '2026-11-10' };
    expect(windowOf(custom, now)).toEqual({ from: new Date(2026, 10, 1).getTime(), to: new Date(2026, 10, 11).getTime() });
    const untilToday = { ...custom, to: localDate(now) };
    expect(windowOf(untilToday, now).to).toBe(now);
  });
  it('explains unusable custom windows', () => {
    const custom = { ...DEFAULT_FILTERS, range: 'custom' as const };
    expect(windowOf({ ...custom, from: '2026-11-01' }, now)).toEqual({ problem: 'missingDates' });
    expect(windowOf({ ...custom, from: '2026-11-10', to: '2026-11-01' }, now)).toEqual({ problem: 'fromAfterTo' });
    expect(windowOf({ ...custom, from: '2024-01-01', to: '2026-11-01' }, now)).toEqual({ problem: 'tooLong' });
    expect(windowOf({ ...custom, from: '2027-01-01', to: '2027-01-02' }, now)).toEqual({ problem: 'inFuture' });
  });
});

describe('API queries', () => {
  const window = { from: Date.parse('2026-11-16T06:00:00.000Z'), to: now };
  const filters: HistoryFilters = { ...DEFAULT_FILTERS, kind: 'backup', phase: 'Failed', q: ' nightly ' };
  it('passes every filter and the page to the history query', () => {
    expect(historyQuery(filters, window, { limit: 50, continueToken: 'abc' })).toEqual({
      kind: ['backup'],
      phase: ['Failed'],
      q: 'nightly',
      since: '2026-11-16T06:00:00.000Z',
      until: '2026-11-23T06:00:00.000Z',
      limit: 50,
      continue: 'abc',
    });
    expect(historyQuery(DEFAULT_FILTERS, window, { limit: 50 })).toMatchObject({ kind: undefined, phase: undefined, q: undefined, continue: undefined });
  });
  it('charts every phase of the selected kind, or of backups, schedule runs and restores', () => {
    expect(chartQuery(filters, window, { limit: 500 })).toEqual({
      kind: ['backup'],
      since: '2026-11-16T06:00:00.000Z',
      until: '2026-11-23T06:00:00.000Z',
      limit: 500,
      continue: undefined,
    });
    expect(chartQuery(DEFAULT_FILTERS, window, { limit: 500 }).kind).toEqual(['backup', 'schedule_run', 'restore']);
  });
  it('asks the stats of the same window', () => {
    expect(statsQuery(window)).toEqual({ from: '2026-11-16T06:00:00.000Z', to: '2026-11-23T06:00:00.000Z' });
  });
});

describe('rangePatch', () => {
  it('starts a custom range as the last seven days', () => {
    expect(rangePatch(DEFAULT_FILTERS, 'custom', now)).toEqual({ range: 'custom', from: localDate(now - 6 * 86_400_000), to: localDate(now) });
    expect(windowOf({ ...DEFAULT_FILTERS, ...rangePatch(DEFAULT_FILTERS, 'custom', now) }, now).problem).toBeUndefined();
  });
  it('keeps dates already chosen, and only changes the range of a preset', () => {
    expect(rangePatch({ ...DEFAULT_FILTERS, from: '2026-11-01', to: '2026-11-02' }, 'custom', now)).toEqual({ range: 'custom' });
    expect(rangePatch(DEFAULT_FILTERS, '30d', now)).toEqual({ range: '30d' });
  });
});
