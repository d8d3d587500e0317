// Tests of grouping operations into days and weeks, outcomes and percentiles.
import { describe, expect, it } from 'vitest';
import type { Operation } from '../api/types';
import { bucketByDay, bucketByPeriod, bucketDaysFor, durationPoints, outcomeOf, percentile, startOfLocalDay, totalsOf } from './buckets';

/** An operation shaped like the demo's history answers, created at a local time. */
function op(id: string, created: Date, phase: string | null, durationMs: number | null = null, kind: Operation['kind'] = 'backup'): Operation {
  return {
    id,
    namespace: 'team-a',
    kind,
    name: `b-${id}`,
    uid: id,
    requester: 'alice',
    createdAt: created.toISOString(),
    phase,
    phaseRank: phase === 'Completed' ? 200 : 100,
    durationMs,
  };
}

const day = (d: number, h = 12) => new Date(2026, 10, d, h, 0, 0);

describe('outcomeOf', () => {
  it('classifies final and running phases', () => {
    expect(outcomeOf('Completed')).toBe('succeeded');
    expect(outcomeOf('Processed')).toBe('succeeded');
    expect(outcomeOf('Failed')).toBe('failed');
    expect(outcomeOf('PartiallyFailed')).toBe('failed');
    expect(outcomeOf('FailedValidation')).toBe('failed');
    expect(outcomeOf('InProgress')).toBe('unfinished');
    expect(outcomeOf('Queued')).toBe('unfinished');
    expect(outcomeOf(null)).toBe('unfinished');
  });
});

describe('percentile', () => {
  it('uses the nearest rank', () => {
    expect(percentile([1000, 2000, 3000, 4000], 0.5)).toBe(2000);
    expect(percentile([1000, 2000, 3000, 4000], 0.95)).toBe(4000);
    expect(percentile([5], 0.5)).toBe(5);
    expect(percentile([], 0.5)).toBeNull();
  });
});

describe('bucketByDay', () => {
  const from = day(20, 9).getTime();
  const to = day(23, 9).getTime();
  const operations = [
    op('1', day(20, 10), 'Completed', 1000),
    op('2', day(20, 23), 'Failed', 3000),
    op('3', day(21, 1), 'Completed', 2000),
    op('4', day(21, 2), 'PartiallyFailed', 5000),
    op('5', day(21, 3), 'Completed', 4000),
    op('6', day(23, 8), 'InProgress'),
    op('7', day(19, 12), 'Completed', 1000), // before the range
    op('8', day(23, 10), 'Completed', 1000), // after the range
    { ...op('9', day(22), 'Completed', 1000), createdAt: 'garbage' },
  ];
  const buckets = bucketByDay(operations, from, to);

  it('has one bucket per local day, empty days included', () => {
    expect(buckets.map((bucket) => new Date(bucket.start).getDate())).toEqual([20, 21, 22, 23]);
    expect(buckets[0].start).toBe(new Date(2026, 10, 20).getTime());
    expect(buckets[3].end).toBe(new Date(2026, 10, 24).getTime());
  });
  it('counts outcomes and the success rate of finished operations', () => {
    expect(buckets.map((b) => [b.succeeded, b.failed, b.unfinished])).toEqual([
      [1, 1, 0],
      [2, 1, 0],
      [0, 0, 0],
      [0, 0, 1],
    ]);
    expect(buckets[0].successRate).toBe(0.5);
    expect(buckets[1].successRate).toBeCloseTo(2 / 3);
    expect(buckets[2].successRate).toBeNull();
    expect(buckets[3].successRate).toBeNull();
  });
  it('keeps sorted durations and their percentiles per day', () => {
    expect(buckets[1].durationsMs).toEqual([2000, 4000, 5000]);
    expect(buckets[1].p50DurationMs).toBe(4000);
    expect(buckets[1].p95DurationMs).toBe(5000);
    expect(buckets[2].p50DurationMs).toBeNull();
  });
  it('is empty for an empty or inverted range', () => {
    expect(bucketByDay(operations, to, from)).toEqual([]);
  });
});

describe('bucketByPeriod with weeks', () => {
  it('groups seven local days per bucket', () => {
    const from = new Date(2026, 9, 1).getTime();
    const to = new Date(2026, 9, 15).getTime();
    const buckets = bucketByPeriod([op('a', new Date(2026, 9, 3), 'Completed', 1), op('b', new Date(2026, 9, 9), 'Failed', 1)], from, to, 7);
    expect(buckets).toHaveLength(2);
    expect(buckets.map((b) => [b.succeeded, b.failed])).toEqual([
      [1, 0],
      [0, 1],
    ]);
    expect(buckets[1].start).toBe(new Date(2026, 9, 8).getTime());
  });
  it('switches to weeks past three months', () => {
    expect(bucketDaysFor(0, 30 * 86_400_000)).toBe(1);
    expect(bucketDaysFor(0, 365 * 86_400_000)).toBe(7);
  });
});

describe('totalsOf and durationPoints', () => {
  const from = day(20, 0).getTime();
  const to = day(22, 0).getTime();
  const operations = [op('1', day(20), 'Completed', 1000), op('2', day(21), 'Failed', 9000), op('3', day(21, 13), 'InProgress'), op('4', day(21, 14), 'Completed', null)];

  it('sums the buckets', () => {
    expect(totalsOf(bucketByDay(operations, from, to))).toEqual({
      succeeded: 2,
      failed: 1,
      unfinished: 1,
      successRate: 2 / 3,
      p50DurationMs: 1000,
      p95DurationMs: 9000,
    });
  });
  it('plots finished operations with a duration, oldest first', () => {
    const points = durationPoints([...operations].reverse(), from, to);
    expect(points.map((p) => [p.id, p.durationMs, p.outcome])).toEqual([
      ['1', 1000, 'succeeded'],
      ['2', 9000, 'failed'],
    ]);
    expect(points[0].at).toBe(day(20).getTime());
  });
  it('finds local midnight', () => {
    expect(startOfLocalDay(day(21, 15).getTime())).toBe(new Date(2026, 10, 21).getTime());
  });
});
