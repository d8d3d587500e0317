// Reading a restore preview and overlaps for people (pure, unit-tested): the actions in a fixed
// order with their colours, the totals worth showing, entries of one action, and an overlap's title.
import type { OperationOverlap, PreviewCounts, PreviewEntry } from '../api/types';
import { fmt, t } from '../strings';

/** The actions a preview entry can have, as the REST API spells them. */
export const RESTORE_ACTIONS = ['Create', 'Update', 'Skip', 'Fail', 'Undetermined'] as const;

export type LabelColor = 'green' | 'blue' | 'grey' | 'red' | 'orange';

/** The colour an action is shown in. */
export function actionColor(action: string): LabelColor {
  switch (action) {
    case 'Create':
      return 'green';
    case 'Update':
      return 'blue';
    case 'Fail':
      return 'red';
    case 'Undetermined':
      return 'orange';
    default:
      return 'grey';
  }
}

/** Entries with `action` (all when empty), in restore order, each with its 1-based position. */
export function entriesWith(entries: PreviewEntry[], action: string): { entry: PreviewEntry; position: number }[] {
  return entries.map((entry, index) => ({ entry, position: index + 1 })).filter(({ entry }) => !action || entry.action === action);
}

/** The totals to show: the processed count and every action, then the extras that are not zero. */
export function previewTotals(counts: PreviewCounts): { key: string; label: string; value: number }[] {
  const p = t.manifests.preview;
  const always = [
    { key: 'total', label: p.countTotal, value: counts.total },
    { key: 'Create', label: p.countCreate, value: counts.create },
    { key: 'Update', label: p.countUpdate, value: counts.update },
    { key: 'Skip', label: p.countSkip, value: counts.skip },
  ];
  const whenAny = [
    { key: 'Fail', label: p.countFail, value: counts.fail },
    { key: 'Undetermined', label: p.countUndetermined, value: counts.undetermined },
    { key: 'excluded', label: p.countExcluded, value: counts.excluded },
    { key: 'warnings', label: p.countWarnings, value: counts.warnings },
    { key: 'namespacesCreated', label: p.countNamespaces, value: counts.namespacesCreated },
  ].filter((total) => total.value > 0);
  return [...always, ...whenAny];
}

/** "Would wait on backup nightly: 3 overlapping items" (for an operation not created yet), or
 *  "Waiting on backup nightly: 3 overlapping items" (for a created one, `waiting`). */
export function overlapTitle(overlap: OperationOverlap, waiting = false): string {
  const o = t.manifests.overlaps;
  const [one, many] = waiting ? [o.waitingOnOne, o.waitingOn] : [o.wouldWaitOne, o.wouldWait];
  return overlap.total === 1 ? fmt(one, { operation: overlap.operation }) : fmt(many, { operation: overlap.operation, count: overlap.total });
}

/** Whether a created backup (`kind` backups) or restore has not started yet, from NAC's phase
 *  and Velero's: accepted (not invalid, not being deleted) and Velero's object not created yet
 *  or still new (for a backup also queued or about to start). As the gateway's overlaps decide. */
export function isPendingOperation(kind: 'backups' | 'restores', requestPhase: string | null | undefined, veleroPhase: string | null | undefined): boolean {
  if (requestPhase === 'BackingOff' || requestPhase === 'Deleting') return false;
  if (!veleroPhase) return true;
  return kind === 'backups' ? ['New', 'Queued', 'ReadyToStart'].includes(veleroPhase) : veleroPhase === 'New';
}
