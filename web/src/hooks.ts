// Data hooks: load a gateway answer (with reload), and follow a namespace's live changes over
// Server-Sent Events (the session cookie authenticates the stream).
import { useCallback, useEffect, useEffectEvent, useState } from 'react';
import { sessionEnded } from './api/client';
import { isTenantObject, parseChangeEvent, type ChangeEvent, type TenantObjects, type TenantResource } from './api/types';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `key` changes and on `reload()`; keeps the last data while reloading. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, key: string): Loaded<T> {
  const [generation, setGeneration] = useState(0);
  // The last answer, and which load (key and generation) it answered: loading until it is this one.
  const [settled, setSettled] = useState<{ load: string; data?: T; error?: unknown }>({ load: '' });
  const current = `${generation}:${key}`;
  const runLoad = useEffectEvent(load);
  useEffect(() => {
    const controller = new AbortController();
    runLoad(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setSettled({ load: current, data });
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setSettled((last) => ({ load: current, data: last.data, error }));
      },
    );
    return () => controller.abort();
  }, [current]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data: settled.data, error: settled.error, loading: settled.load !== current, reload };
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
  const changed = useEffectEvent(onChange);
  const reset = useEffectEvent(() => onReset?.());
  useEffect(() => {
    if (!namespace || typeof EventSource === 'undefined') return;
    const source = new EventSource(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
      withCredentials: true,
    });
    let connectedBefore = false;
    const handle = (type: ChangeEvent['type']) => (message: MessageEvent<string>) => {
      // A malformed event is skipped; the next re-list repairs the view.
      const event = parseChangeEvent(type, message.data);
      if (event) changed(event);
    };
    source.addEventListener('ready', () => {
      setState('live');
      if (connectedBefore) reset();
      connectedBefore = true;
    });
    source.addEventListener('ADDED', handle('ADDED'));
    source.addEventListener('MODIFIED', handle('MODIFIED'));
    source.addEventListener('DELETED', handle('DELETED'));
    source.addEventListener('reset', () => reset());
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
  const [now, setNow] = useState(() => Date.now());
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
export function useLiveList<R extends TenantResource>(
  namespace: string,
  resource: R,
  list: (signal: AbortSignal) => Promise<TenantObjects[R][]>,
): Loaded<TenantObjects[R][]> & { stream: StreamState } {
  const loaded = useLoad(list, `${namespace}/${resource}`);
  // Each new answer of the list replaces the items (set while rendering, React's pattern for
  // state that follows a value); change events edit them in between.
  const [items, setItems] = useState<TenantObjects[R][] | undefined>(undefined);
  const [listed, setListed] = useState(loaded.data);
  if (listed !== loaded.data) {
    setListed(loaded.data);
    if (loaded.data) setItems(loaded.data);
  }
  const stream = useNamespaceEvents(
    namespace,
    (event) => {
      if (event.resource !== resource || event.namespace !== namespace) return;
      setItems((current) => applyChange(resource, current ?? [], event));
    },
    loaded.reload,
  );
  return { ...loaded, data: items ?? loaded.data, stream };
}

/**
 * Applies one change event to a list of `resource` objects (pure). An added or modified object
 * that is not one of them is skipped: the next re-list repairs the view.
 */
export function applyChange<R extends TenantResource>(resource: R, items: TenantObjects[R][], event: ChangeEvent): TenantObjects[R][] {
  if (event.type === 'DELETED') return items.filter((item) => item.metadata.name !== event.name);
  const object = event.object;
  if (!isTenantObject(resource, object)) return items;
  const index = items.findIndex((item) => item.metadata.name === event.name);
  if (index < 0) return [object, ...items];
  const next = items.slice();
  next[index] = object;
  return next;
}
