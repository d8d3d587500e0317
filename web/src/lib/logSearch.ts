// Searching a Velero log: case-insensitive match ranges, the text cut into plain and matched
// pieces for <mark>, stepping between matches (wrapping around), and logrus lines
// (`time=… level=… msg=…`) with their level, filtered by text and minimum level.

export interface LogMatches {
  /** [start, end) offsets of each match. */
  ranges: [number, number][];
  /** True when there were more than `limit` matches (only the first `limit` are kept). */
  truncated: boolean;
}

/** Where `query` occurs in `text`, ignoring case, not overlapping; an empty query finds nothing. */
export function findMatches(text: string, query: string, limit = 5000): LogMatches {
  const ranges: [number, number][] = [];
  const needle = query.toLowerCase();
  if (!needle) return { ranges, truncated: false };
  const haystack = text.toLowerCase();
  let from = 0;
  while (from <= haystack.length) {
    const at = haystack.indexOf(needle, from);
    if (at < 0) break;
    if (ranges.length === limit) return { ranges, truncated: true };
    ranges.push([at, at + needle.length]);
    from = at + needle.length;
  }
  return { ranges, truncated: false };
}

export interface LogPiece {
  text: string;
  /** Index of the match this piece is, or null for plain text. */
  match: number | null;
}

/** The text cut at the matches, in order. */
export function splitAtMatches(text: string, ranges: [number, number][]): LogPiece[] {
  const pieces: LogPiece[] = [];
  let at = 0;
  ranges.forEach(([start, end], index) => {
    if (start > at) pieces.push({ text: text.slice(at, start), match: null });
    pieces.push({ text: text.slice(start, end), match: index });
    at = end;
  });
  if (at < text.length || pieces.length === 0) pieces.push({ text: text.slice(at), match: null });
  return pieces;
}

/** The next (step 1) or previous (step -1) match index, wrapping; -1 without matches. */
export function stepMatch(current: number, count: number, step: 1 | -1): number {
  if (count <= 0) return -1;
  if (current < 0) return step === 1 ? 0 : count - 1;
  return (current + step + count) % count;
}

/** Number of lines of a text (a trailing newline does not start one). */
export function lineCount(text: string): number {
  if (!text) return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}

export type LogLevel = 'error' | 'warning' | 'info' | 'debug' | 'other';
export type LevelFilter = 'all' | 'warning' | 'error';

export interface LogLine {
  /** 1-based line number in the whole log. */
  number: number;
  text: string;
  level: LogLevel;
  /** [start, end) ranges of the search text in `text`. */
  matches: [number, number][];
}

/** The level of one logrus line (`level=error`, `level=warning`…). */
export function lineLevel(line: string): LogLevel {
  const match = /\blevel=("?)(\w+)\1/.exec(line);
  switch (match?.[2].toLowerCase()) {
    case 'error':
    case 'fatal':
    case 'panic':
      return 'error';
    case 'warning':
    case 'warn':
      return 'warning';
    case 'info':
      return 'info';
    case 'debug':
    case 'trace':
      return 'debug';
    default:
      return 'other';
  }
}

function passes(level: LogLevel, filter: LevelFilter): boolean {
  if (filter === 'all') return true;
  if (filter === 'error') return level === 'error';
  return level === 'error' || level === 'warning';
}

/** The lines of `log` that pass the level filter and contain `query`, with their matches. */
export function searchLog(log: string, query: string, filter: LevelFilter): { lines: LogLine[]; total: number } {
  const all = log.split('\n');
  if (all.length && all[all.length - 1] === '') all.pop();
  const needle = query.trim();
  const lines: LogLine[] = [];
  all.forEach((text, index) => {
    const level = lineLevel(text);
    if (!passes(level, filter)) return;
    const { ranges } = findMatches(text, needle, Infinity);
    if (needle && !ranges.length) return;
    lines.push({ number: index + 1, text, level, matches: ranges });
  });
  return { lines, total: all.length };
}
