// Tests of the chart words: period labels, summaries, tooltips and exact durations.
import { describe, expect, it } from 'vitest';
import type { Operation } from '../api/types';
import { bucketByDay, durationPoints } from './buckets';
import { barTitle, durationSummary, durationTick, percent, preciseDuration, periodLabel, periodWord, pointTitle, shortDay, successSummary } from './chartText';

const at = (d: number, h = 12) => new Date(2026, 10, d, h);
function op(id: string, created: Date, phase: string, durationMs: number): Operation {
  return { id, namespace: 'team-a', kind: 'backup', name: `b-${id}`, uid: id, createdAt: created.toISOString(), phase, phaseRank: 200, durationMs };
}
const from = at(21, 0).getTime();
const to = at(23, 0).getTime();
const operations = [op('1', at(21), 'Completed', 2000), op('2', at(21, 13), 'Failed', 90_000), op('3', at(22), 'Completed', 4000)];
const buckets = bucketByDay(operations, from, to);
const day = (d: number) => new Date(2026, 10, d).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });

describe('labels', () => {
  it('labels days and weeks', () => {
    expect(shortDay(at(21).getTime())).toBe(day(21));
    expect(periodLabel(buckets[0])).toBe(new Date(2026, 10, 21).toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' }));
    expect(periodLabel({ start: new Date(2026, 10, 16).getTime(), end: new Date(2026, 10, 23).getTime() })).toBe(`${day(16)} – ${day(22)}`);
    expect(periodWord(1)).toBe('day');
    expect(periodWord(7)).toBe('week');
  });
  it('writes percents and durations', () => {
    expect(percent(2 / 3)).toBe('67%');
    expect(durationTick(90)).toBe('1m 30s');
    expect(preciseDuration(0)).toBe('0s');
    expect(preciseDuration(59.6)).toBe('1m');
    expect(preciseDuration(3600)).toBe('1h');
    expect(preciseDuration(3661)).toBe('1h 1m');
    expect(preciseDuration(90061)).toBe('1d 1h');
    expect(preciseDuration(86460)).toBe('1d');
  });
});

describe('summaries', () => {
  it('summarises the success chart', () => {
    expect(successSummary(buckets, 1, from, to)).toBe(`Success rate per day from ${day(21)} to ${day(23)}: 2 succeeded, 1 failed, 67% overall.`);
    expect(successSummary(bucketByDay([], from, to), 1, from, to)).toBe(`Success rate per day from ${day(21)} to ${day(23)}: 0 succeeded, 0 failed.`);
  });
  it('summarises the duration chart', () => {
    const points = durationPoints(operations, from, to);
    expect(durationSummary(points, buckets, from, to)).toBe(`Durations of 3 finished operations from ${day(21)} to ${day(23)}: median 4s, 95th percentile 1m 30s.`);
  });
  it('titles bars and points', () => {
    expect(barTitle(buckets[0])).toMatch(/: 1 succeeded, 1 failed \(50%\)$/);
    expect(barTitle(bucketByDay([], from, to)[0])).toMatch(/: 0 succeeded, 0 failed$/);
    expect(pointTitle(durationPoints(operations, from, to)[1])).toBe('b-2: 1m 30s (failed)');
  });
});
