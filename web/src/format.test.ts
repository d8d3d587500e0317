import { describe, expect, it } from 'vitest';
import { formatAge, formatDuration, formatUntil, percentDone } from './format';

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [59.4, '59s'],
    [60, '1m'],
    [3599, '59m'],
    [3600, '1h'],
    [3660, '1h 1m'],
    [86400, '1d'],
    [90000, '1d 1h'],
    [-5, '0s'],
  ])('%s seconds is %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});

describe('formatAge and formatUntil', () => {
  const now = Date.parse('2026-11-23T12:00:00Z');
  it('measures from now', () => {
    expect(formatAge('2026-11-23T11:55:00Z', now)).toBe('5m');
    expect(formatUntil('2026-12-23T12:00:00Z', now)).toBe('in 30d');
    expect(formatUntil('2026-11-23T11:00:00Z', now)).toBe('expired');
  });
  it('shows a dash for missing or bad times', () => {
    expect(formatAge(undefined, now)).toBe('—');
    expect(formatAge('not a time', now)).toBe('—');
    expect(formatUntil(null, now)).toBe('—');
  });
});

describe('percentDone', () => {
  it('is null without a total and clamps to 0..100', () => {
    expect(percentDone(5, 0)).toBeNull();
    expect(percentDone(5, undefined)).toBeNull();
    expect(percentDone(5, 10)).toBe(50);
    expect(percentDone(15, 10)).toBe(100);
    expect(percentDone(null, 10)).toBe(0);
  });
});
