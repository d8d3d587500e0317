// Keeping dashboard, queue and history current: reload on the namespace's change events
// (debounced, one event stream per page) and on a timer while the page is visible.
import { useCallback, useEffect, useEffectEvent, useRef, useState } from 'react';
import type { ChangeEvent } from '../api/types';
import { useNamespaceEvents, type StreamState } from '../hooks';

/** Calls `callback` every `ms` while the tab is visible (and `enabled`). */
export function useInterval(callback: () => void, ms: number, enabled = true): void {
  const tick = useEffectEvent(callback);
  useEffect(() => {
    if (!enabled) return;
    const timer = setInterval(() => {
      if (typeof document === 'undefined' || document.visibilityState !== 'hidden') tick();
    }, ms);
    return () => clearInterval(timer);
  }, [ms, enabled]);
}

/** A trigger that calls `callback` once, `ms` after the last of a burst of calls. */
export function useDebounced(callback: () => void, ms: number): () => void {
  const callbackRef = useRef(callback);
  useEffect(() => {
    callbackRef.current = callback;
  });
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => callbackRef.current(), ms);
  }, [ms]);
}

/**
 * Follows the namespace's change events and calls `reload` (debounced) after those that
 * `matters` accepts, and after the stream asks for a re-list. Returns the stream's state.
 */
export function useReloadOnChanges(
  namespace: string | undefined,
  matters: (event: ChangeEvent) => boolean,
  reload: () => void,
  debounceMs = 400,
): StreamState {
  const debounced = useDebounced(reload, debounceMs);
  return useNamespaceEvents(
    namespace,
    (event) => {
      if (matters(event)) debounced();
    },
    debounced,
  );
}

/** The time (epoch ms) `data` last changed: the base of count-down estimates. */
export function useReceivedAt(data: unknown): number {
  // Stamped in the render that first shows `data` (React's "state from the previous render"
  // pattern), not in an effect: an effect runs later, so a count-down could restart from zero.
  const [seen, setSeen] = useState(() => ({ data, at: Date.now() }));
  if (seen.data !== data) {
    // eslint-disable-next-line react-hooks/purity -- the time of this render is the point (see above)
    const next = { data, at: Date.now() };
    setSeen(next);
    return next.at;
  }
  return seen.at;
}
