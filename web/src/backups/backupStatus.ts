// Reading a NonAdminBackup's status for people: phases, progress, queue and ETA, conditions and
// history timeline entries in plain words, list filters, and which history operation is this backup.
import type { ConditionFacts, NonAdminBackup, Operation, QueueItem, TimelineEntry } from '../api/types';
import { formatDuration } from '../format';
import { fmt, t } from '../strings';
import { matchesTerms, parseLabelSelector } from '../lib/labelSelector';

/** Velero phases after which nothing changes any more. */
export const TERMINAL_VELERO_PHASES = ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'] as const;

/** The phases the list can filter on (request phases first, then Velero's). */
export const FILTER_PHASES = [
  'New',
  'BackingOff',
  'Created',
  'Deleting',
  'Queued',
  'InProgress',
  'WaitingForPluginOperations',
  'Finalizing',
  'Completed',
  'PartiallyFailed',
  'Failed',
  'FailedValidation',
] as const;

export const veleroPhaseOf = (backup: NonAdminBackup | undefined) => backup?.status?.veleroBackup?.status?.phase;

/** Whether the backup may still change (Velero not finished, request not refused or deleted). */
export function isRunning(requestPhase: string | null | undefined, veleroPhase: string | null | undefined): boolean {
  if (requestPhase === 'BackingOff' || requestPhase === 'Deleting') return false;
  return !veleroPhase || !(TERMINAL_VELERO_PHASES as readonly string[]).includes(veleroPhase);
}

/** Whether a restore can be made from the backup (it finished with data). A backup whose
 * Velero backup is gone stays BackingOff with its last Velero phase: NAC refuses restores from it. */
export function isRestorable(veleroPhase: string | null | undefined, requestPhase?: string | null): boolean {
  return requestPhase !== 'Deleting' && requestPhase !== 'BackingOff' && (veleroPhase === 'Completed' || veleroPhase === 'PartiallyFailed');
}

/** Items backed up and total from the Velero status (null when Velero has not counted). */
export function backupProgress(backup: NonAdminBackup): { done: number | null; total: number | null } {
  const progress = backup.status?.veleroBackup?.status?.progress;
  return { done: progress?.itemsBackedUp ?? null, total: progress?.totalItems ?? null };
}

/** The queue position to show (only while waiting or running; 0 means none). */
export function queuePosition(backup: NonAdminBackup): number | null {
  const position = backup.status?.queueInfo?.estimatedQueuePosition;
  if (!position || !isRunning(backup.status?.phase, veleroPhaseOf(backup))) return null;
  return position;
}

/** The backups' queue items by name (from `GET …/queue`). */
export function backupQueueByName(items: QueueItem[] | undefined): Map<string, QueueItem> {
  return new Map((items ?? []).filter((item) => item.kind === 'backup').map((item) => [item.name, item]));
}

/** "starts in ~2m · done in ~7m", or null without an estimate. */
export function etaText(item: QueueItem | undefined): string | null {
  const eta = item?.eta;
  if (eta) {
    const finish = fmt(t.common.finishesIn, { duration: formatDuration(eta.finishInSeconds) });
    if (item.state === 'running' || eta.startInSeconds <= 0) return finish;
    return `${fmt(t.common.startsIn, { duration: formatDuration(eta.startInSeconds) })} · ${finish}`;
  }
  if (item?.etaSeconds !== undefined && item?.etaSeconds !== null) return fmt(t.common.finishesIn, { duration: formatDuration(item.etaSeconds) });
  return null;
}

/** A signature of the list that changes when a backup appears, goes or changes phase (to refresh the queue). */
export function listSignature(backups: NonAdminBackup[] | undefined): string {
  return (backups ?? [])
    .map((backup) => `${backup.metadata.name}:${backup.status?.phase ?? ''}:${veleroPhaseOf(backup) ?? ''}:${backup.status?.queueInfo?.estimatedQueuePosition ?? ''}`)
    .sort()
    .join('|');
}

export interface ListFilter {
  phase: string;
  labelSelector: string;
}

/** Whether a backup passes the list's filters (the server filters too; live events do not). */
export function matchesListFilter(backup: NonAdminBackup, filter: ListFilter): boolean {
  if (filter.phase) {
    const wanted = filter.phase.toLowerCase();
    const phases = [backup.status?.phase, veleroPhaseOf(backup)].map((phase) => (phase ?? '').toLowerCase());
    if (!phases.includes(wanted)) return false;
  }
  if (filter.labelSelector.trim()) {
    const parsed = parseLabelSelector(filter.labelSelector);
    if (parsed.ok && !matchesTerms(parsed.terms, backup.metadata.labels)) return false;
  }
  return true;
}

/** Newest first, then by name (the server lists by name). */
export function sortNewestFirst(backups: NonAdminBackup[]): NonAdminBackup[] {
  return backups.slice().sort((a, b) => {
    const at = Date.parse(a.metadata.creationTimestamp ?? '') || 0;
    const bt = Date.parse(b.metadata.creationTimestamp ?? '') || 0;
    return bt - at || a.metadata.name.localeCompare(b.metadata.name);
  });
}

export type Tone = 'success' | 'danger' | 'warning' | 'info' | 'custom';

/** A condition as a sentence, with a tone for its icon; unknown ones verbatim. */
export function describeCondition(condition: ConditionFacts): { text: string; tone: Tone } {
  const c = t.backups.conditions;
  const message = condition.message ?? condition.reason ?? '';
  const key = `${condition.type}/${condition.status}`;
  switch (key) {
    case 'Accepted/True':
      return { text: c.acceptedTrue, tone: 'success' };
    case 'Accepted/False':
      if (condition.reason === 'VeleroBackupNotFound') return { text: fmt(c.veleroBackupNotFound, { message }), tone: 'warning' };
      return { text: fmt(c.acceptedFalse, { message }), tone: 'danger' };
    case 'Accepted/Unknown':
      return { text: c.acceptedUnknown, tone: 'info' };
    case 'Queued/True':
      return { text: c.queuedTrue, tone: 'success' };
    case 'Queued/False':
      return { text: fmt(c.queuedFalse, { message }), tone: 'warning' };
    case 'Deleting/True':
      return { text: c.deletingTrue, tone: 'warning' };
    case 'Deleting/False':
      return { text: fmt(c.deletingFalse, { message }), tone: 'danger' };
    default:
      return {
        text: fmt(c.unknown, {
          type: condition.type,
          status: condition.status,
          reason: condition.reason ? ` (${condition.reason})` : '',
          message: condition.message ? `: ${condition.message}` : '',
        }),
        tone: 'custom',
      };
  }
}

/** A history timeline entry as a sentence, with a tone. */
export function describeTimelineEntry(entry: TimelineEntry): { text: string; tone: Tone } {
  const w = t.backups.timeline;
  if (entry.attribute === 'phase') return { text: fmt(w.phase, { value: entry.value }), tone: entry.value === 'BackingOff' ? 'danger' : 'info' };
  if (entry.attribute === 'veleroPhase') {
    const tone: Tone = entry.value === 'Completed' ? 'success' : entry.value === 'PartiallyFailed' ? 'warning' : entry.value.startsWith('Failed') ? 'danger' : 'info';
    return { text: fmt(w.veleroPhase, { value: entry.value }), tone };
  }
  if (entry.attribute === 'queuePosition') {
    return entry.value === '0' ? { text: w.queueLeft, tone: 'info' } : { text: fmt(w.queueEntered, { value: entry.value }), tone: 'info' };
  }
  if (entry.attribute.startsWith('condition/')) {
    const condition: ConditionFacts = {
      type: entry.attribute.slice('condition/'.length),
      status: entry.value,
      reason: entry.reason ?? undefined,
      message: entry.message ?? undefined,
    };
    const described = describeCondition(condition);
    return { text: fmt(w.condition, { sentence: described.text }), tone: described.tone };
  }
  if (entry.attribute === 'deleted') return { text: w.deleted, tone: 'warning' };
  return { text: fmt(w.other, { attribute: entry.attribute, value: entry.value }), tone: 'custom' };
}

/** The history operation of this backup: same uid, else the newest backup of that exact name. */
export function pickOperation(operations: Operation[], name: string, uid?: string): Operation | undefined {
  if (uid) {
    const byUid = operations.find((operation) => operation.uid === uid || operation.id === uid);
    if (byUid) return byUid;
  }
  return operations
    .filter((operation) => operation.name === name && (!operation.kind || operation.kind === 'backup'))
    .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt))[0];
}

/** Seconds between two RFC 3339 times, or null. */
export function secondsBetween(from: string | null | undefined, to: string | null | undefined): number | null {
  if (!from || !to) return null;
  const start = Date.parse(from);
  const end = Date.parse(to);
  if (Number.isNaN(start) || Number.isNaN(end)) return null;
  return Math.max(0, (end - start) / 1000);
}
