// Loading the history page's data: the operations table in keyset pages ("load more"), kept
// current by merging a fresh first page on refresh; and every operation of the window for the
// charts (followed over a few pages, capped) with the window's stats.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api/client';
import type { NamespaceStatistics, Operation, OperationPage } from '../api/types';
import { chartQuery, historyQuery, statsQuery, windowOf, type HistoryFilters, type Window } from './filters';
import { mergeOperations } from './operations';

export const PAGE_SIZE = 50;
/** The charts read at most this many operations (CHART_PAGES pages of CHART_PAGE_SIZE). */
export const CHART_PAGE_SIZE = 500;
export const CHART_PAGES = 4;

export interface HistoryPages {
  items: Operation[];
  /** Whether more pages follow. */
  hasMore: boolean;
  loading: boolean;
  loadingMore: boolean;
  error: unknown;
  /** The error of the last "load more" (the loaded rows stay). */
  moreError: unknown;
  loadMore: () => void;
  /** Reloads the first page and merges it in (for live updates). */
  refresh: () => void;
  /** Starts over from the first page. */
  reload: () => void;
}

/** The operations table of `namespace` under `filters`. */
export function useHistoryPages(namespace: string, filters: HistoryFilters): HistoryPages {
  const [items, setItems] = useState<Operation[]>([]);
  const [continueToken, setContinueToken] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [loadingMore, setLoadingMore] = useState(false);
  const [error, setError] = useState<unknown>();
  const [moreError, setMoreError] = useState<unknown>();
  const [generation, setGeneration] = useState(0);
  const key = `${namespace}?${JSON.stringify(filters)}`;
  // Requests of an older key or generation are ignored when they answer.
  const current = useRef({ key, generation, pagesLoaded: 0 });
  useEffect(() => {
    current.current.key = key;
    current.current.generation = generation;
  }, [key, generation]);
  // A new key or generation starts over (set while rendering: React's pattern for state that
  // follows a value).
  const request = `${generation}:${key}`;
  const [requested, setRequested] = useState(request);
  if (requested !== request) {
    setRequested(request);
    setLoading(true);
    setError(undefined);
    setMoreError(undefined);
  }

  const fetchPage = useCallback(
    (continueFrom: string | null, signal?: AbortSignal) => {
      const window = windowOf(filters, Date.now());
      if (window.problem) return Promise.resolve<OperationPage>({ items: [], continue: null });
      return api.get('/api/v1/namespaces/{namespace}/history', {
        path: { namespace },
        query: historyQuery(filters, window, { limit: PAGE_SIZE, continueToken: continueFrom }),
        signal,
      });
    },
    // The filters are captured through `key` (their JSON, with the namespace), so equal filters do not refetch.
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `key` stands for `namespace` and `filters`
    [key],
  );

  useEffect(() => {
    const controller = new AbortController();
    fetchPage(null, controller.signal)
      .then((page) => {
        if (controller.signal.aborted) return;
        setItems(page.items ?? []);
        setContinueToken(page.continue ?? null);
        current.current.pagesLoaded = 1;
        setLoading(false);
      })
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        setItems([]);
        setContinueToken(null);
        setError(err);
        setLoading(false);
      });
    return () => controller.abort();
  }, [fetchPage, generation]);

  const loadMore = useCallback(() => {
    if (!continueToken || loadingMore) return;
    const startedFor = current.current.key;
    setLoadingMore(true);
    setMoreError(undefined);
    fetchPage(continueToken)
      .then((page) => {
        if (current.current.key !== startedFor) return;
        setItems((loaded) => mergeOperations(loaded, page.items ?? []));
        setContinueToken(page.continue ?? null);
        current.current.pagesLoaded += 1;
      })
      .catch((err: unknown) => {
        if (current.current.key === startedFor) setMoreError(err);
      })
      .finally(() => {
        if (current.current.key === startedFor) setLoadingMore(false);
      });
  }, [continueToken, loadingMore, fetchPage]);

  const refresh = useCallback(() => {
    const startedFor = current.current.key;
    fetchPage(null)
      .then((page) => {
        if (current.current.key !== startedFor) return;
        setItems((loaded) => mergeOperations(loaded, page.items ?? []));
        // With only the first page loaded, its fresh continue token is the right one.
        if (current.current.pagesLoaded <= 1) setContinueToken(page.continue ?? null);
        setError(undefined);
      })
      .catch(() => {
        // A failed background refresh keeps what is shown; the next event or reload retries.
      });
  }, [fetchPage]);

  const reload = useCallback(() => setGeneration((value) => value + 1), []);

  return { items, hasMore: !!continueToken, loading, loadingMore, error, moreError, loadMore, refresh, reload };
}

export interface ChartData {
  operations: Operation[];
  /** True when the window holds more operations than the charts read. */
  capped: boolean;
  stats: NamespaceStatistics | undefined;
  window: { from: number; to: number };
}

/** Every operation of the window (capped) and the window's stats, for the charts. */
export async function loadChartData(namespace: string, filters: HistoryFilters, now: number, signal?: AbortSignal): Promise<ChartData | null> {
  const window: Window = windowOf(filters, now);
  if (window.problem) return null;
  const range = { from: window.from, to: window.to };
  const readOperations = async () => {
    const operations: Operation[] = [];
    let continueToken: string | null = null;
    let pages = 0;
    do {
      const page: OperationPage = await api.get('/api/v1/namespaces/{namespace}/history', {
        path: { namespace },
        query: chartQuery(filters, range, { limit: CHART_PAGE_SIZE, continueToken }),
        signal,
      });
      operations.push(...(page.items ?? []));
      continueToken = page.continue ?? null;
      pages += 1;
    } while (continueToken && pages < CHART_PAGES);
    return { operations, capped: !!continueToken };
  };
  const [stats, { operations, capped }] = await Promise.all([
    api.get('/api/v1/namespaces/{namespace}/stats', { path: { namespace }, query: statsQuery(range), signal }),
    readOperations(),
  ]);
  return { operations, capped, stats, window: range };
}
