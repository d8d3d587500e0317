// Groups history operations into days (or weeks) for the success-rate and duration charts, and
// classifies phases as succeeded / failed / unfinished (pure; unit-tested in buckets.test.ts).
import type { Operation } from '../api/types';

export type Outcome = 'succeeded' | 'failed' | 'unfinished';

/** Final phases that count as a success (`Processed`: a download or deletion that was served). */
export const SUCCESS_PHASES: readonly string[] = ['Completed', 'Processed'];
/** Final phases that count as a failure (a partial failure is a failure: something was not saved). */
export const FAILURE_PHASES: readonly string[] = ['Failed', 'PartiallyFailed', 'FailedValidation'];

/** Whether an operation succeeded, failed, or has not finished yet. */
export function outcomeOf(phase: string | null | undefined): Outcome {
  if (phase && SUCCESS_PHASES.includes(phase)) return 'succeeded';
  if (phase && FAILURE_PHASES.includes(phase)) return 'failed';
  return 'unfinished';
}

export interface TimeBucket {
  /** Start (inclusive) and end (exclusive) in epoch milliseconds, local day boundaries. */
  start: number;
  end: number;
  succeeded: number;
  failed: number;
  unfinished: number;
  /** Succeeded / finished, or null when nothing finished in the bucket. */
  successRate: number | null;
  /** Durations of the finished operations that have one, ascending. */
  durationsMs: number[];
  p50DurationMs: number | null;
  p95DurationMs: number | null;
}

/** Nearest-rank percentile (`p` in 0..1) of ascending `sorted` values, or null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil(Math.min(1, Math.max(0, p)) * sorted.length);
  return sorted[Math.max(0, rank - 1)];
}

/** Local midnight at or before `time`. */
export function startOfLocalDay(time: number): number {
  const day = new Date(time);
  return new Date(day.getFullYear(), day.getMonth(), day.getDate()).getTime();
}

/** Local midnight `days` calendar days after the local midnight `dayStart` (DST-safe). */
function addLocalDays(dayStart: number, days: number): number {
  const day = new Date(dayStart);
  return new Date(day.getFullYear(), day.getMonth(), day.getDate() + days).getTime();
}

/**
 * Operations created in [from, to) grouped into buckets of `days` local calendar days, oldest
 * first; the first bucket starts at local midnight of `from`, every bucket is present even when
 * empty (so gaps show on the chart).
 */
export function bucketByPeriod(operations: readonly Operation[], from: number, to: number, days: number): TimeBucket[] {
  if (!(to > from) || !(days >= 1)) return [];
  const buckets: TimeBucket[] = [];
  for (let start = startOfLocalDay(from); start < to; ) {
    const end = addLocalDays(start, days);
    buckets.push({ start, end, succeeded: 0, failed: 0, unfinished: 0, successRate: null, durationsMs: [], p50DurationMs: null, p95DurationMs: null });
    start = end;
  }
  for (const operation of operations) {
    const created = Date.parse(operation.createdAt);
    if (Number.isNaN(created) || created < from || created >= to) continue;
    const bucket = buckets.find((candidate) => created >= candidate.start && created < candidate.end);
    if (!bucket) continue;
    const outcome = outcomeOf(operation.phase);
    bucket[outcome] += 1;
    if (outcome !== 'unfinished' && typeof operation.durationMs === 'number') bucket.durationsMs.push(operation.durationMs);
  }
  for (const bucket of buckets) {
    const finished = bucket.succeeded + bucket.failed;
    bucket.successRate = finished > 0 ? bucket.succeeded / finished : null;
    bucket.durationsMs.sort((a, b) => a - b);
    bucket.p50DurationMs = percentile(bucket.durationsMs, 0.5);
    bucket.p95DurationMs = percentile(bucket.durationsMs, 0.95);
  }
  return buckets;
}

/** Operations created in [from, to) per local calendar day. */
export function bucketByDay(operations: readonly Operation[], from: number, to: number): TimeBucket[] {
  return bucketByPeriod(operations, from, to, 1);
}

/** Day buckets up to about three months, week buckets beyond (so bars stay readable). */
export function bucketDaysFor(from: number, to: number): number {
  return to - from > 92 * 86_400_000 ? 7 : 1;
}

export interface Totals {
  succeeded: number;
  failed: number;
  unfinished: number;
  successRate: number | null;
  p50DurationMs: number | null;
  p95DurationMs: number | null;
}

/** Totals over all buckets. */
export function totalsOf(buckets: readonly TimeBucket[]): Totals {
  const succeeded = buckets.reduce((sum, bucket) => sum + bucket.succeeded, 0);
  const failed = buckets.reduce((sum, bucket) => sum + bucket.failed, 0);
  const unfinished = buckets.reduce((sum, bucket) => sum + bucket.unfinished, 0);
  const durations = buckets.flatMap((bucket) => bucket.durationsMs).sort((a, b) => a - b);
  return {
    succeeded,
    failed,
    unfinished,
    successRate: succeeded + failed > 0 ? succeeded / (succeeded + failed) : null,
    p50DurationMs: percentile(durations, 0.5),
    p95DurationMs: percentile(durations, 0.95),
  };
}

export interface DurationPoint {
  id: string;
  name: string;
  kind: string;
  /** Creation time (epoch ms). */
  at: number;
  durationMs: number;
  outcome: Outcome;
}

/** One point per finished operation in [from, to) with a known duration, oldest first. */
export function durationPoints(operations: readonly Operation[], from: number, to: number): DurationPoint[] {
  const points: DurationPoint[] = [];
  for (const operation of operations) {
    const at = Date.parse(operation.createdAt);
    const outcome = outcomeOf(operation.phase);
    if (Number.isNaN(at) || at < from || at >= to) continue;
    if (outcome === 'unfinished' || typeof operation.durationMs !== 'number') continue;
    points.push({ id: operation.id, name: operation.name, kind: operation.kind ?? '', at, durationMs: operation.durationMs, outcome });
  }
  return points.sort((a, b) => a.at - b.at);
}
