// The history page's filters: read from and written to the URL (so a filtered view can be shared
// and survives reloads), turned into a time window and into the history/stats API queries
// (pure; unit-tested in filters.test.ts).
import type { HistoryQuery, StatsQuery } from '../api/types';

/** Operation kinds the history knows (the `kind` parameter of the history API). */
export const HISTORY_KINDS = ['backup', 'schedule_run', 'restore', 'backup_storage_location', 'download', 'delete'] as const;
export type HistoryKind = (typeof HISTORY_KINDS)[number];

/** Phases offered in the phase filter (Velero's, then NAC's own). */
export const HISTORY_PHASES = [
  'Completed',
  'PartiallyFailed',
  'Failed',
  'FailedValidation',
  'InProgress',
  'Queued',
  'New',
  'Processed',
  'BackingOff',
] as const;

/** Time-window presets (`custom` uses the from/to dates). */
export const RANGE_KEYS = ['24h', '7d', '30d', '90d', '365d', 'custom'] as const;
export type RangeKey = (typeof RANGE_KEYS)[number];

const PRESET_MS: Record<Exclude<RangeKey, 'custom'>, number> = {
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
  '90d': 90 * 86_400_000,
  '365d': 365 * 86_400_000,
};

/** The longest window the stats API accepts. */
export const MAX_WINDOW_MS = 366 * 86_400_000;

export interface HistoryFilters {
  /** One of HISTORY_KINDS, or '' for all. */
  kind: string;
  /** One of HISTORY_PHASES, or '' for all. */
  phase: string;
  /** Free text (name, Velero name, requester, failure reason). */
  q: string;
  range: RangeKey;
  /** Custom window, local dates `YYYY-MM-DD`, both days included. */
  from: string;
  to: string;
}

export const DEFAULT_FILTERS: HistoryFilters = { kind: '', phase: '', q: '', range: '7d', from: '', to: '' };

/** Filters from the page's URL query; unknown values fall back to the defaults. */
export function filtersFromSearch(search: URLSearchParams): HistoryFilters {
  const kind = search.get('kind') ?? '';
  const phase = search.get('phase') ?? '';
  const range = search.get('range') ?? '';
  return {
    kind: (HISTORY_KINDS as readonly string[]).includes(kind) ? kind : '',
    phase: (HISTORY_PHASES as readonly string[]).includes(phase) ? phase : '',
    q: search.get('q') ?? '',
    range: (RANGE_KEYS as readonly string[]).includes(range) ? (range as RangeKey) : DEFAULT_FILTERS.range,
    from: /^\d{4}-\d{2}-\d{2}$/.test(search.get('from') ?? '') ? (search.get('from') as string) : '',
    to: /^\d{4}-\d{2}-\d{2}$/.test(search.get('to') ?? '') ? (search.get('to') as string) : '',
  };
}

/** The URL query of `filters`, leaving out defaults (an unfiltered page has a clean URL). */
export function filtersToSearch(filters: HistoryFilters): URLSearchParams {
  const search = new URLSearchParams();
  if (filters.kind) search.set('kind', filters.kind);
  if (filters.phase) search.set('phase', filters.phase);
  if (filters.q.trim()) search.set('q', filters.q.trim());
  if (filters.range !== DEFAULT_FILTERS.range) search.set('range', filters.range);
  if (filters.range === 'custom') {
    if (filters.from) search.set('from', filters.from);
    if (filters.to) search.set('to', filters.to);
  }
  return search;
}

/** Why a custom window is unusable. */
export type RangeProblem = 'missingDates' | 'fromAfterTo' | 'tooLong' | 'inFuture';

export type Window = { from: number; to: number; problem?: undefined } | { problem: RangeProblem; from?: undefined; to?: undefined };

/** Local midnight of a `YYYY-MM-DD` date, or NaN. */
export function parseLocalDate(date: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) return NaN;
  const value = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return value.getMonth() === Number(match[2]) - 1 ? value.getTime() : NaN;
}

/** `YYYY-MM-DD` of a time in local time (for date inputs). */
export function localDate(time: number): string {
  const day = new Date(time);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${day.getFullYear()}-${pad(day.getMonth() + 1)}-${pad(day.getDate())}`;
}

/**
 * The window [from, to) in epoch ms the filters select at `now`: presets end now; a custom
 * window runs from local midnight of `from` to the end of the `to` day (or now, if sooner).
 */
export function windowOf(filters: HistoryFilters, now: number): Window {
  if (filters.range !== 'custom') return { from: now - PRESET_MS[filters.range], to: now };
  const from = parseLocalDate(filters.from);
  const toDay = parseLocalDate(filters.to);
  if (Number.isNaN(from) || Number.isNaN(toDay)) return { problem: 'missingDates' };
  if (from > toDay) return { problem: 'fromAfterTo' };
  if (from > now) return { problem: 'inFuture' };
  const endOfTo = new Date(new Date(toDay).getFullYear(), new Date(toDay).getMonth(), new Date(toDay).getDate() + 1).getTime();
  const to = Math.min(endOfTo, now);
  if (to - from > MAX_WINDOW_MS) return { problem: 'tooLong' };
  return { from, to };
}


/** The history API query of one page of the table. */
export function historyQuery(filters: HistoryFilters, window: { from: number; to: number }, page: { limit: number; continueToken?: string | null }): HistoryQuery {
  return {
    kind: filters.kind ? [filters.kind] : undefined,
    phase: filters.phase ? [filters.phase] : undefined,
    q: filters.q.trim() || undefined,
    since: new Date(window.from).toISOString(),
    until: new Date(window.to).toISOString(),
    limit: page.limit,
    continue: page.continueToken ?? undefined,
  };
}

/** Kinds charted when the kind filter is "all": the ones with a meaningful success and duration. */
export const CHARTED_KINDS: readonly HistoryKind[] = ['backup', 'schedule_run', 'restore'];

/**
 * The history API query behind the charts: the same window and kind, but every phase and no
 * text (a success rate over only the failed ones would say nothing).
 */
export function chartQuery(filters: HistoryFilters, window: { from: number; to: number }, page: { limit: number; continueToken?: string | null }): HistoryQuery {
  return {
    kind: filters.kind ? [filters.kind] : [...CHARTED_KINDS],
    since: new Date(window.from).toISOString(),
    until: new Date(window.to).toISOString(),
    limit: page.limit,
    continue: page.continueToken ?? undefined,
  };
}

/** The stats API query of a window. */
export function statsQuery(window: { from: number; to: number }): StatsQuery {
  return { from: new Date(window.from).toISOString(), to: new Date(window.to).toISOString() };
}

/** Whether any filter differs from the defaults (to offer "clear filters"). */
export function isFiltered(filters: HistoryFilters): boolean {
  return filtersToSearch(filters).toString() !== '';
}

/** The filter change of choosing `range`: a custom range starts as the last 7 days, editable. */
export function rangePatch(filters: HistoryFilters, range: RangeKey, now: number): Partial<HistoryFilters> {
  if (range !== 'custom' || (filters.from && filters.to)) return { range };
  return { range, from: localDate(now - 6 * 86_400_000), to: localDate(now) };
}
