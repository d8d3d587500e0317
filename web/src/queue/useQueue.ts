// The queue data of a namespace page: my items there and the cluster's counts, reloaded on the
// namespace's backup/restore changes and every few seconds while visible.
import { api } from '../api/client';
import type { ClusterQueue, NamespaceQueue } from '../api/types';
import { useLoad, type Loaded } from '../hooks';
import { useInterval, useReceivedAt } from './live';

export const QUEUE_POLL_MS = 5000;

export interface LiveQueue {
  queue: Loaded<NamespaceQueue> & { receivedAt: number };
  reload: () => void;
}

/** My queue items in `namespace`, polled; call `reload` on change events. */
export function useNamespaceQueue(namespace: string, pollMs = QUEUE_POLL_MS): LiveQueue {
  const queue = useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/queue', { path: { namespace }, signal }), `${namespace}/queue`);
  const receivedAt = useReceivedAt(queue.data);
  useInterval(queue.reload, pollMs);
  return { queue: { ...queue, receivedAt }, reload: queue.reload };
}

/** The cluster's queue counts and my items everywhere, polled. */
export function useClusterQueue(pollMs = QUEUE_POLL_MS): Loaded<ClusterQueue> & { receivedAt: number } {
  const cluster = useLoad((signal) => api.get('/api/v1/queue', { signal }), 'cluster-queue');
  const receivedAt = useReceivedAt(cluster.data);
  useInterval(cluster.reload, pollMs);
  return { ...cluster, receivedAt };
}
