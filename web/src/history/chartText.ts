// Words of the history charts: period labels, the spoken summaries behind `aria-label`, and
// bar/point tooltips (pure; unit-tested in chartText.test.ts).
import { fmt, t } from '../strings';
import { totalsOf, type DurationPoint, type TimeBucket } from './buckets';

/** "Nov 23": the axis label of a period starting at `start`. */
export function shortDay(start: number): string {
  return new Date(start).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

/** "Mon, Nov 23" for a day, "Nov 16 – Nov 22" for a longer period (its last day included). */
export function periodLabel(bucket: Pick<TimeBucket, 'start' | 'end'>): string {
  const lastDay = new Date(bucket.end);
  lastDay.setDate(lastDay.getDate() - 1);
  if (lastDay.getTime() <= bucket.start) {
    return new Date(bucket.start).toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' });
  }
  return `${shortDay(bucket.start)} – ${shortDay(lastDay.getTime())}`;
}

/** "40%" of a rate in 0..1. */
export function percent(rate: number): string {
  return fmt(t.history.charts.percent, { value: Math.round(rate * 100) });
}

/** "day" or "week" for buckets of `days` days. */
export function periodWord(days: number): string {
  return days >= 7 ? t.history.charts.week : t.history.charts.day;
}

/** What the success-rate chart shows, for screen readers. */
export function successSummary(buckets: readonly TimeBucket[], days: number, from: number, to: number): string {
  const totals = totalsOf(buckets);
  return fmt(t.history.charts.successSummary, {
    period: periodWord(days),
    from: shortDay(from),
    to: shortDay(to),
    succeeded: totals.succeeded,
    failed: totals.failed,
    rate: totals.successRate === null ? '' : fmt(t.history.charts.overallRate, { rate: percent(totals.successRate) }),
  });
}

/** What the duration chart shows, for screen readers. */
export function durationSummary(points: readonly DurationPoint[], buckets: readonly TimeBucket[], from: number, to: number): string {
  const totals = totalsOf(buckets);
  const duration = (ms: number | null) => (ms === null ? t.common.none : preciseDuration(ms / 1000));
  return fmt(t.history.charts.durationSummary, {
    count: points.length,
    from: shortDay(from),
    to: shortDay(to),
    p50: duration(totals.p50DurationMs),
    p95: duration(totals.p95DurationMs),
  });
}

/** Tooltip of one bar. */
export function barTitle(bucket: TimeBucket): string {
  return fmt(t.history.charts.barTitle, {
    period: periodLabel(bucket),
    succeeded: bucket.succeeded,
    failed: bucket.failed,
    rate: bucket.successRate === null ? '' : ` (${percent(bucket.successRate)})`,
  });
}

/** Tooltip of one point. */
export function pointTitle(point: DurationPoint): string {
  return fmt(t.history.charts.pointTitle, {
    name: point.name,
    duration: preciseDuration(point.durationMs / 1000),
    outcome: point.outcome === 'failed' ? t.history.charts.legendFailed : t.history.charts.legendSucceeded,
  });
}

/**
 * A duration with its two largest non-zero units, exact to the second ("1m 30s", "2h 5m"):
 * axis ticks and percentiles must not round 90 s and 60 s to the same "1m".
 */
export function preciseDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const units: [number, string][] = [
    [86400, 'd'],
    [3600, 'h'],
    [60, 'm'],
    [1, 's'],
  ];
  const parts: string[] = [];
  let rest = total;
  for (const [size, suffix] of units) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0 || (parts.length > 0 && parts.length < 2)) parts.push(`${count}${suffix}`);
    if (parts.length === 2) break;
  }
  const meaningful = parts.filter((part, index) => index === 0 || !part.startsWith('0'));
  return meaningful.length ? meaningful.join(' ') : '0s';
}

/** A duration axis label ("30s", "1m 30s"). */
export function durationTick(seconds: number): string {
  return preciseDuration(seconds);
}
