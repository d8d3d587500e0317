// Pure formatting of times, durations and progress for display (unit-tested in format.test.ts).
import { common } from './strings/common';

/** "42s", "5m", "3h 10m", "2d 4h" — the two largest units. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours}h ${minutes % 60}m` : `${hours}h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days}d ${hours % 24}h` : `${days}d`;
}

/** Age of an RFC 3339 time relative to `now` ("5m"), or "—" when absent or unparsable. */
export function formatAge(time: string | null | undefined, now: number = Date.now()): string {
  if (!time) return '—';
  const at = Date.parse(time);
  if (Number.isNaN(at)) return '—';
  return formatDuration((now - at) / 1000);
}

/** Time until an RFC 3339 time ("in 29d"), "expired" when past, "—" when absent. */
export function formatUntil(time: string | null | undefined, now: number = Date.now()): string {
  if (!time) return '—';
  const at = Date.parse(time);
  if (Number.isNaN(at)) return '—';
  const seconds = (at - now) / 1000;
  return seconds <= 0
    ? common.common.expired
    : common.common.inDuration.replace('{duration}', formatDuration(seconds));
}

/** A local date and time for tooltips and detail pages. */
export function formatTimestamp(time: string | null | undefined): string {
  if (!time) return '—';
  const at = new Date(time);
  return Number.isNaN(at.getTime()) ? '—' : at.toLocaleString();
}

/** Percent done (0–100) of items, or null when the total is unknown. */
export function percentDone(done: number | null | undefined, total: number | null | undefined): number | null {
  if (!total || total <= 0) return null;
  return Math.min(100, Math.max(0, Math.round(((done ?? 0) / total) * 100)));
}
