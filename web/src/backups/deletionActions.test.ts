import { describe, expect, it } from 'vitest';
import type { ConditionFacts } from '../api/types';
import { blockingAction, deletionActionsOf, isDeletionActionCondition } from './deletionActions';

const at = '2026-11-23T12:00:00Z';
const CONDITIONS: ConditionFacts[] = [
  { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted', lastTransitionTime: at },
  { type: 'deletionaction.oadp.openshift.io/c-notify', status: 'False', reason: 'Failed', message: 'webhook answered 500 for configmaps/team-a/web-config', lastTransitionTime: at },
  { type: 'deletionaction.oadp.openshift.io/B-upper', status: 'True', reason: 'Skipped', message: 'no item of the backup matches', lastTransitionTime: at },
  { type: 'deletionaction.oadp.openshift.io/a-cleanup', status: 'True', reason: 'Succeeded', message: '3 items accepted', lastTransitionTime: at },
  { type: 'deletionaction.oadp.openshift.io/d-audit', status: 'False', reason: 'Ignored', message: 'failed, ignored (failurePolicy Ignore): timeout', lastTransitionTime: at },
  { type: 'deletionaction.oadp.openshift.io/', status: 'True', reason: 'Succeeded' },
];

describe('deletion actions', () => {
  it('recognises the per-action conditions only', () => {
    expect(CONDITIONS.map(isDeletionActionCondition)).toEqual([false, true, true, true, true, false]);
  });

  it('lists outcomes in the order the actions run (alphanumeric by name), with a tone each', () => {
    const actions = deletionActionsOf(CONDITIONS);
    expect(actions.map((action) => `${action.name}:${action.reason}:${action.tone}`)).toEqual([
      'B-upper:Skipped:info',
      'a-cleanup:Succeeded:success',
      'c-notify:Failed:danger',
      'd-audit:Ignored:warning',
    ]);
    expect(actions[2]).toMatchObject({ status: 'False', message: 'webhook answered 500 for configmaps/team-a/web-config', time: at });
    expect(deletionActionsOf(undefined)).toEqual([]);
  });

  it('finds the failed action the deletion waits on, and none once it succeeded', () => {
    expect(blockingAction(deletionActionsOf(CONDITIONS))?.name).toBe('c-notify');
    expect(blockingAction(deletionActionsOf(CONDITIONS.filter((c) => c.reason !== 'Failed')))).toBeUndefined();
  });
});
