// Tests of the dashboard's failure rates per kind.
import { describe, expect, it } from 'vitest';
import { emptyStats, stats7d } from '../testing/historyAnswers';
import { kindRates, lastDays, percentText, rateOf } from './rates';

describe('kindRates', () => {
  it('counts finished and failed backups and restores, leaving other kinds out', () => {
    expect(kindRates(stats7d)).toEqual([
      { kind: 'backup', total: 6, finished: 4, failed: 0, failureRate: 0 },
      { kind: 'restore', total: 1, finished: 1, failed: 0, failureRate: 0 },
    ]);
    expect(kindRates(emptyStats)).toEqual([]);
    expect(kindRates(undefined)).toEqual([]);
  });
  it('counts partial failures and validation failures as failures', () => {
    const rate = rateOf({ kind: 'schedule_run', total: 7, byPhase: { Completed: 3, PartiallyFailed: 1, Failed: 1, FailedValidation: 1, InProgress: 1 }, successRate: 0.5, itemsDone: 0 });
    expect(rate).toEqual({ kind: 'schedule_run', total: 7, finished: 6, failed: 3, failureRate: 0.5 });
  });
  it('has no rate when nothing finished', () => {
    expect(rateOf({ kind: 'backup', total: 1, byPhase: { Queued: 1 }, successRate: null, itemsDone: 0 }).failureRate).toBeNull();
  });
});

describe('percentText and lastDays', () => {
  it('never rounds a failure down to 0%', () => {
    expect(percentText(0)).toBe('0');
    expect(percentText(0.004)).toBe('<1');
    expect(percentText(1 / 3)).toBe('33');
    expect(percentText(1)).toBe('100');
  });
  it('asks the window ending now', () => {
    expect(lastDays(7, Date.parse('2026-11-23T06:00:00.000Z'))).toEqual({ from: '2026-11-16T06:00:00.000Z', to: '2026-11-23T06:00:00.000Z' });
  });
});
