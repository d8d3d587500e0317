// Tests of coalescing bursts of live events into one re-read.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, renderHook } from '@testing-library/react';
import { useCoalescedVersion } from './useCoalescedVersion';

afterEach(() => vi.useRealTimers());

describe('useCoalescedVersion', () => {
  it('bumps once per window however many events arrive', () => {
    vi.useFakeTimers();
    const { result } = renderHook(() => useCoalescedVersion(500));
    expect(result.current[0]).toBe(0);
    act(() => {
      for (let i = 0; i < 10; i += 1) result.current[1]();
    });
    expect(result.current[0]).toBe(0);
    act(() => {
      vi.advanceTimersByTime(500);
    });
    expect(result.current[0]).toBe(1);
    act(() => {
      result.current[1]();
      vi.advanceTimersByTime(499);
    });
    expect(result.current[0]).toBe(1);
    act(() => {
      vi.advanceTimersByTime(1);
    });
    expect(result.current[0]).toBe(2);
  });
});
