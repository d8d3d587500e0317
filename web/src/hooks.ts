// Data hooks: load a gateway answer (with reload), and follow a namespace's live changes over
// Server-Sent Events (the session cookie authenticates the stream).
import { useCallback, useEffect, useRef, useState } from 'react';
import { sessionEnded } from './api/client';
import type { ChangeEvent } from './api/types';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `key` changes and on `reload()`; keeps the last data while reloading. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, key: string): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    loadRef
      .current(controller.signal)
      .then((value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      })
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        setError(err);
        setLoading(false);
      });
    return () => controller.abort();
  }, [key, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data, error, loading, reload };
}

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'forbidden';

/**
 * Follows `/api/v1/namespaces/{ns}/events`. `onChange` gets every ADDED/MODIFIED/DELETED
 * event; `onReset` is called when the stream says a re-list is needed (and after reconnects).
 * The stream stops on `forbidden` (access revoked) and `unauthenticated` (token no longer valid).
 */
export function useNamespaceEvents(
  namespace: string | undefined,
  onChange: (event: ChangeEvent) => void,
  onReset?: () => void,
): StreamState {
  const [state, setState] = useState<StreamState>('connecting');
  const changeRef = useRef(onChange);
  const resetRef = useRef(onReset);
  changeRef.current = onChange;
  resetRef.current = onReset;
  useEffect(() => {
    if (!namespace || typeof EventSource === 'undefined') return;
    const source = new EventSource(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
      withCredentials: true,
    });
    let connectedBefore = false;
    const handle = (type: ChangeEvent['type']) => (message: MessageEvent<string>) => {
      try {
        const data = JSON.parse(message.data) as Omit<ChangeEvent, 'type'>;
        changeRef.current({ ...data, type });
      } catch {
        // A malformed event is skipped; the next re-list repairs the view.
      }
    };
    source.addEventListener('ready', () => {
      setState('live');
      if (connectedBefore) resetRef.current?.();
      connectedBefore = true;
    });
    source.addEventListener('ADDED', handle('ADDED'));
    source.addEventListener('MODIFIED', handle('MODIFIED'));
    source.addEventListener('DELETED', handle('DELETED'));
    source.addEventListener('reset', () => resetRef.current?.());
    source.addEventListener('forbidden', () => {
      setState('forbidden');
      source.close();
    });
    // The token behind the stream is no longer valid: stop, and sign out as a 401 does.
    source.addEventListener('unauthenticated', () => {
      setState('forbidden');
      source.close();
      sessionEnded();
    });
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'forbidden' : 'reconnecting');
    return () => source.close();
  }, [namespace]);
  return state;
}

/** Re-renders every `ms` so ages and ETAs stay current. */
export function useNow(ms = 5000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/**
 * A live list: loads `list()` and applies the namespace's change events for `resource`
 * (upsert by name, remove on DELETED), re-listing on resets.
 */
export function useLiveList<T extends { metadata: { name: string } }>(
  namespace: string,
  resource: ChangeEvent['resource'],
  list: (signal: AbortSignal) => Promise<T[]>,
): Loaded<T[]> & { stream: StreamState } {
  const loaded = useLoad(list, `${namespace}/${resource}`);
  const [items, setItems] = useState<T[] | undefined>(undefined);
  useEffect(() => {
    if (loaded.data) setItems(loaded.data);
  }, [loaded.data]);
  const stream = useNamespaceEvents(
    namespace,
    (event) => {
      if (event.resource !== resource || event.namespace !== namespace) return;
      setItems((current) => applyChange(current ?? [], event));
    },
    loaded.reload,
  );
  return { ...loaded, data: items ?? loaded.data, stream };
}

/** Applies one change event to a list of objects (pure; unit-tested). */
export function applyChange<T extends { metadata: { name: string } }>(items: T[], event: ChangeEvent): T[] {
  const object = event.object as T;
  const rest = items.filter((item) => item.metadata.name !== event.name);
  if (event.type === 'DELETED') return rest;
  const index = items.findIndex((item) => item.metadata.name === event.name);
  if (index < 0) return [object, ...items];
  const next = items.slice();
  next[index] = object;
  return next;
}
