// How one history operation is shown: its kind in words, where its object lives in the console,
// its duration and items, timeline entries in plain words, and merging live refreshes into the
// loaded pages (pure; unit-tested in operations.test.ts).
import type { Operation, TimelineEntry } from '../api/types';
import { formatDuration } from '../format';
import { fmt, t } from '../strings';
import { outcomeOf } from './buckets';

/** "Backup", "Scheduled backup", … for an operation kind. */
export function kindLabel(kind: string | null | undefined): string {
  const labels: Record<string, string> = t.history.kinds;
  return (kind && labels[kind]) || t.history.kinds.unknown;
}

/** Console path of the operation's object, or null when it has none or it is gone. */
export function operationLink(namespace: string, operation: Operation): string | null {
  if (operation.deletedAt) return null;
  const base = `/ns/${encodeURIComponent(namespace)}`;
  switch (operation.kind) {
    case 'backup':
    case 'schedule_run':
      return `${base}/backups/${encodeURIComponent(operation.name)}`;
    case 'restore':
      return `${base}/restores/${encodeURIComponent(operation.name)}`;
    case 'backup_storage_location':
      return `${base}/storage-locations`;
    default:
      return null;
  }
}

/**
 * Console path of what the operation came from (a restore's backup, a run's schedules), or
 * null (a deletion's backup is gone, a download's parent may be a backup or a restore).
 */
export function parentLink(namespace: string, operation: Operation): string | null {
  if (!operation.parentName) return null;
  const base = `/ns/${encodeURIComponent(namespace)}`;
  switch (operation.kind) {
    case 'restore':
      return `${base}/backups/${encodeURIComponent(operation.parentName)}`;
    case 'schedule_run':
      return `${base}/schedules`;
    default:
      return null;
  }
}

/** How long it ran ("5s"), how long it has been running, or "—". */
export function durationText(operation: Operation, now: number): string {
  if (typeof operation.durationMs === 'number') return formatDuration(operation.durationMs / 1000);
  const started = operation.startedAt ? Date.parse(operation.startedAt) : NaN;
  if (!Number.isNaN(started) && !operation.completedAt && outcomeOf(operation.phase) === 'unfinished') {
    return fmt(t.history.table.running, { duration: formatDuration((now - started) / 1000) });
  }
  return t.common.none;
}

/** "6 / 11 items", "11 items" done without a known total, or "—". */
export function itemsText(operation: Operation): string {
  if (typeof operation.itemsTotal === 'number') {
    return fmt(t.common.items, { done: operation.itemsDone ?? 0, total: operation.itemsTotal });
  }
  return t.common.none;
}

export interface TimelineLine {
  label: string;
  value: string;
  /** The condition's reason and message, when there are some. */
  detail?: string;
  /** Whether the line reports trouble (a failed phase, a False condition with a reason). */
  problem: boolean;
}

/** One timeline fact in plain words. */
export function describeTimelineEntry(entry: TimelineEntry): TimelineLine {
  const words = t.history.timeline;
  const detail = [entry.reason, entry.message].filter((part) => part && part.trim()).join(': ') || undefined;
  if (entry.attribute.startsWith('condition/')) {
    const type = entry.attribute.slice('condition/'.length);
    return { label: fmt(words.attributes.condition, { type }), value: entry.value, detail, problem: entry.value === 'False' && !!entry.reason };
  }
  switch (entry.attribute) {
    case 'phase':
      return { label: words.attributes.phase, value: entry.value, detail, problem: entry.value === 'BackingOff' };
    case 'veleroPhase':
      return { label: words.attributes.veleroPhase, value: entry.value, detail, problem: outcomeOf(entry.value) === 'failed' };
    case 'queuePosition':
      return {
        label: words.attributes.queuePosition,
        value: entry.value === '0' ? words.leftQueue : fmt(words.queuePosition, { position: entry.value }),
        detail,
        problem: false,
      };
    case 'deleted':
      return { label: words.attributes.deleted, value: entry.value, detail, problem: false };
    default:
      return { label: entry.attribute, value: entry.value, detail, problem: false };
  }
}

/**
 * Merges a fresh first page into the loaded operations: changed ones are replaced, new ones
 * added, the result newest first (ties keep their order). Pages loaded further down stay.
 */
export function mergeOperations(current: readonly Operation[], fresh: readonly Operation[]): Operation[] {
  const byId = new Map(current.map((operation) => [operation.id, operation]));
  for (const operation of fresh) byId.set(operation.id, operation);
  const order = new Map<string, number>();
  [...fresh, ...current].forEach((operation, index) => {
    if (!order.has(operation.id)) order.set(operation.id, index);
  });
  return [...byId.values()].sort((a, b) => {
    const byTime = Date.parse(b.createdAt) - Date.parse(a.createdAt);
    return byTime !== 0 && !Number.isNaN(byTime) ? byTime : (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0);
  });
}
