// Queue items in words: state, position and estimates that count down between refreshes
// (pure; unit-tested in eta.test.ts).
import type { ClusterQueue, QueueCounts, QueueItem } from '../api/types';
import { formatDuration } from '../format';
import { fmt, t } from '../strings';

/** Seconds left of an estimate made `fetchedAt`, at `now` (never below zero). */
export function remainingSeconds(seconds: number, fetchedAt: number, now: number): number {
  return Math.max(0, seconds - Math.max(0, now - fetchedAt) / 1000);
}

export interface EtaWords {
  /** "starts in ~30s" (waiting items only), "any moment now", or null. */
  start: string | null;
  /** "done in ~2m", "taking longer than usual", or null. */
  finish: string | null;
  /** "from 4 recent runs", or the reason there is no estimate. */
  basis: string;
  hasEstimate: boolean;
}

/** The estimate of one item at `now`, from the answer received at `fetchedAt`. */
export function describeEta(item: QueueItem, fetchedAt: number, now: number): EtaWords {
  const words = t.queue.eta;
  const finishSeconds = item.eta?.finishInSeconds ?? item.etaSeconds ?? null;
  if (finishSeconds === null || finishSeconds === undefined) {
    return { start: null, finish: null, basis: words.none, hasEstimate: false };
  }
  const basis = item.eta ? (item.eta.samples === 1 ? words.basisOne : fmt(words.basis, { samples: item.eta.samples })) : '';
  let start: string | null = null;
  if (item.state !== 'running' && item.eta) {
    const left = remainingSeconds(item.eta.startInSeconds, fetchedAt, now);
    start = left >= 1 ? fmt(words.startsIn, { duration: formatDuration(left) }) : words.anyMoment;
  }
  const finishLeft = remainingSeconds(finishSeconds, fetchedAt, now);
  const finish = finishLeft >= 1 ? fmt(words.finishesIn, { duration: formatDuration(finishLeft) }) : words.overdue;
  return { start, finish, basis, hasEstimate: true };
}

/** "being served", "next", "#3". */
export function positionText(item: QueueItem): string {
  if (item.state === 'running') return t.queue.position.running;
  if (item.position <= 1) return t.queue.position.next;
  return fmt(t.queue.position.waiting, { position: item.position });
}

/** Running first, then waiting by position; backups before restores; then name. */
export function sortQueueItems(items: readonly QueueItem[]): QueueItem[] {
  const stateRank = (item: QueueItem) => (item.state === 'running' ? 0 : 1);
  return [...items].sort(
    (a, b) => stateRank(a) - stateRank(b) || a.position - b.position || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
  );
}

/** My items outside `namespace`, grouped by namespace (sorted). */
export function otherNamespaces(cluster: ClusterQueue | undefined, namespace: string): { namespace: string; items: QueueItem[] }[] {
  const groups = new Map<string, QueueItem[]>();
  for (const item of cluster?.mine ?? []) {
    if (item.namespace === namespace) continue;
    groups.set(item.namespace, [...(groups.get(item.namespace) ?? []), item]);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, items]) => ({ namespace: name, items: sortQueueItems(items) }));
}

/** "1 running · 2 waiting · about 3s each" for one cluster queue. */
export function countsText(counts: QueueCounts): { running: string; pending: string; mean: string } {
  const words = t.queue.cluster;
  return {
    running: fmt(words.running, { count: counts.running }),
    pending: fmt(words.pending, { count: counts.pending }),
    mean:
      typeof counts.meanDurationSeconds === 'number' ? fmt(words.mean, { duration: formatDuration(counts.meanDurationSeconds) }) : words.noMean,
  };
}

/** Whether a change event means the queue may have moved (backups and restores only). */
export function affectsQueue(resource: string): boolean {
  return resource === 'backups' || resource === 'restores';
}
