// Tests of reading Go durations.
import { describe, expect, it } from 'vitest';
import { parseGoDuration } from './duration';

describe('parseGoDuration', () => {
  it.each([
    ['720h0m0s', 720 * 3600],
    ['24h', 86400],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['90s', 90],
    ['500ms', 0.5],
    ['0', 0],
  ])('%s is %s seconds', (text, seconds) => expect(parseGoDuration(text)).toBeCloseTo(seconds));
  it.each(['7d', '24', 'h', '1h 30m', 'abc', ''])('%j is not a Go duration', (text) => expect(parseGoDuration(text)).toBeNull());
});
