// What a NonAdminRestore's status means for the list and detail pages: its phase, progress and
// queue position, its conditions and history timeline in plain words, and which history
// operation is its own.
import { countOf, type ConditionFacts, type Description, type NonAdminRestore, type Operation, type TimelineEntry } from '../api/types';
import { fmt, t } from '../strings';

/** The phase to show: Velero's when it has one, else NAC's request phase. */
export function restorePhase(restore: NonAdminRestore): string {
  return restore.status?.veleroRestore?.status?.phase ?? restore.status?.phase ?? 'New';
}

export const FINISHED_PHASES = ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'];
export const FAILED_PHASES = ['PartiallyFailed', 'Failed', 'FailedValidation'];

export function isFinished(phase: string | null | undefined): boolean {
  return FINISHED_PHASES.includes(phase ?? '');
}

/** Items restored of total, when Velero has reported them. */
export function restoreProgress(restore: NonAdminRestore): { done: number | null; total: number | null } {
  const progress = restore.status?.veleroRestore?.status?.progress;
  return { done: progress?.itemsRestored ?? null, total: progress?.totalItems ?? null };
}

/** The queue position while waiting (1 = next), or null when not queued. */
export function restoreQueuePosition(restore: NonAdminRestore): number | null {
  const position = restore.status?.queueInfo?.estimatedQueuePosition;
  if (!position || position <= 0 || isFinished(restorePhase(restore))) return null;
  return position;
}

/** Items done and total of a restore's description (`itemsRestored` of `totalItems`). */
export function descriptionProgress(description: Description): { done: number | null; total: number | null } {
  return { done: countOf(description.progress, 'itemsRestored') ?? null, total: countOf(description.progress, 'totalItems') ?? null };
}

/** The phase a description shows: Velero's, else the request's. */
export function descriptionPhase(description: Description): string {
  return description.veleroPhase ?? description.requestPhase ?? 'New';
}

/** One condition as a sentence. */
export function conditionInWords(condition: ConditionFacts): string {
  const message = condition.message ?? '';
  const isTrue = condition.status === 'True';
  switch (condition.type) {
    case 'Accepted':
      if (!isTrue && condition.reason === 'VeleroRestoreNotFound') return fmt(t.restores.conditions.veleroRestoreNotFound, { message });
      return isTrue ? t.restores.conditions.acceptedTrue : fmt(t.restores.conditions.acceptedFalse, { message: message || (condition.reason ?? '') });
    case 'Queued':
      return isTrue ? t.restores.conditions.queuedTrue : fmt(t.restores.conditions.queuedFalse, { message: message || (condition.reason ?? '') });
    case 'Deleting':
      if (isTrue) return fmt(t.restores.conditions.deletingTrue, { message: message || (condition.reason ?? '') });
      break;
  }
  return message
    ? fmt(t.restores.conditions.other, { type: condition.type, status: condition.status, message })
    : fmt(t.restores.conditions.otherNoMessage, { type: condition.type, status: condition.status });
}

/** One timeline fact as a sentence. */
export function timelineInWords(entry: TimelineEntry): string {
  if (entry.attribute === 'phase') return fmt(t.restores.timeline.phase, { value: entry.value });
  if (entry.attribute === 'veleroPhase') return fmt(t.restores.timeline.veleroPhase, { value: entry.value });
  if (entry.attribute === 'queuePosition') {
    return entry.value === '0' ? t.restores.timeline.queueLeft : fmt(t.restores.timeline.queuePosition, { value: entry.value });
  }
  if (entry.attribute === 'deleted') return t.restores.timeline.deleted;
  if (entry.attribute.startsWith('condition/')) {
    const condition = entry.attribute.slice('condition/'.length);
    const sentence = conditionInWords({ type: condition, status: entry.value, reason: entry.reason ?? undefined, message: entry.message ?? undefined });
    return sentence;
  }
  return fmt(t.restores.timeline.other, { attribute: entry.attribute, value: entry.value });
}

/** The history operation of this restore: same uid, else the newest one with its name. */
export function pickOperation(operations: Operation[], name: string, uid?: string): Operation | null {
  const mine = operations.filter((operation) => operation.name === name && (!operation.kind || operation.kind === 'restore'));
  if (uid) {
    const exact = mine.find((operation) => operation.uid === uid || operation.id === uid);
    if (exact) return exact;
  }
  return mine.sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0] ?? null;
}

/** Timeline entries for display: oldest first, with repeats of the same fact removed. */
export function tidyTimeline(entries: TimelineEntry[]): TimelineEntry[] {
  const sorted = [...entries].sort((a, b) => a.at.localeCompare(b.at));
  const out: TimelineEntry[] = [];
  const last = new Map<string, string>();
  for (const entry of sorted) {
    if (last.get(entry.attribute) === entry.value) continue;
    last.set(entry.attribute, entry.value);
    out.push(entry);
  }
  return out;
}

/** Seconds between two RFC 3339 times, or null. */
export function secondsBetween(start: string | null | undefined, end: string | null | undefined): number | null {
  if (!start || !end) return null;
  const a = Date.parse(start);
  const b = Date.parse(end);
  if (Number.isNaN(a) || Number.isNaN(b) || b < a) return null;
  return (b - a) / 1000;
}
