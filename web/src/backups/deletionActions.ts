// Deletion actions of a backup (seed 003) from its conditions (pure, unit-tested): NAC records
// each DeletionAction's outcome as a condition `deletionaction.oadp.openshift.io/<action>`
// (Succeeded, Skipped, Ignored, Failed); a Failed one under failurePolicy Fail holds the deletion.
import type { ConditionFacts } from '../api/types';
import type { Tone } from './backupStatus';

export const DELETION_ACTION_PREFIX = 'deletionaction.oadp.openshift.io/';

export interface DeletionActionOutcome {
  name: string;
  status: string;
  reason: string;
  message: string;
  time?: string;
  tone: Tone;
}

/** Whether a condition records a deletion action (those are shown apart from the others). */
export function isDeletionActionCondition(condition: ConditionFacts): boolean {
  return condition.type.startsWith(DELETION_ACTION_PREFIX) && condition.type.length > DELETION_ACTION_PREFIX.length;
}

function toneOf(reason: string): Tone {
  switch (reason) {
    case 'Succeeded':
      return 'success';
    case 'Skipped':
      return 'info';
    case 'Ignored':
      return 'warning';
    case 'Failed':
      return 'danger';
    default:
      return 'custom';
  }
}

/** The deletion actions' outcomes, in the order they run (alphanumeric by name). */
export function deletionActionsOf(conditions: ConditionFacts[] | undefined): DeletionActionOutcome[] {
  return (conditions ?? [])
    .filter(isDeletionActionCondition)
    .map((condition) => ({
      name: condition.type.slice(DELETION_ACTION_PREFIX.length),
      status: condition.status,
      reason: condition.reason ?? '',
      message: condition.message ?? '',
      time: condition.lastTransitionTime,
      tone: toneOf(condition.reason ?? ''),
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The action the deletion waits on: the first that failed (failurePolicy Fail), if any. */
export function blockingAction(actions: DeletionActionOutcome[]): DeletionActionOutcome | undefined {
  return actions.find((action) => action.reason === 'Failed');
}
