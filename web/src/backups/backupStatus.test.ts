import { describe, expect, it } from 'vitest';
import type { NonAdminBackup, Operation, QueueItem, RequestPhase } from '../api/types';
import {
  backupProgress,
  backupQueueByName,
  describeCondition,
  describeTimelineEntry,
  etaText,
  isRestorable,
  isRunning,
  listSignature,
  matchesListFilter,
  pickOperation,
  queuePosition,
  secondsBetween,
  sortNewestFirst,
} from './backupStatus';

// Shaped like the demo gateway's answers (GET /api/v1/namespaces/team-a/backups).
const backup = (name: string, phase: RequestPhase, veleroPhase: string | undefined, extra: Partial<NonAdminBackup['metadata']> = {}, position = 0): NonAdminBackup => ({
  apiVersion: 'oadp.openshift.io/v1alpha1',
  kind: 'NonAdminBackup',
  metadata: { name, namespace: 'team-a', creationTimestamp: '2026-11-23T05:59:01Z', uid: `uid-${name}`, ...extra },
  spec: { backupSpec: {} },
  status: {
    phase,
    queueInfo: { estimatedQueuePosition: position },
    veleroBackup: veleroPhase ? { name: `team-a-${name}-aa9c`, namespace: 'openshift-adp', status: { phase: veleroPhase, progress: { totalItems: 32, itemsBackedUp: 12 } } } : undefined,
  },
});

describe('phases and progress', () => {
  it('knows running, finished and restorable backups', () => {
    expect(isRunning('Created', 'InProgress')).toBe(true);
    expect(isRunning('New', undefined)).toBe(true);
    expect(isRunning('Created', 'Completed')).toBe(false);
    expect(isRunning('BackingOff', undefined)).toBe(false);
    expect(isRestorable('Completed')).toBe(true);
    expect(isRestorable('PartiallyFailed')).toBe(true);
    expect(isRestorable('Failed')).toBe(false);
    expect(isRestorable('Completed', 'Deleting')).toBe(false);
    // Its Velero backup vanished: BackingOff, the last Velero phase kept.
    expect(isRestorable('Completed', 'BackingOff')).toBe(false);
  });
  it('reads progress and queue position', () => {
    expect(backupProgress(backup('a', 'Created', 'InProgress'))).toEqual({ done: 12, total: 32 });
    expect(backupProgress(backup('a', 'New', undefined))).toEqual({ done: null, total: null });
    expect(queuePosition(backup('a', 'Created', 'New', {}, 3))).toBe(3);
    expect(queuePosition(backup('a', 'Created', 'Completed', {}, 3))).toBeNull();
    expect(queuePosition(backup('a', 'Created', 'InProgress', {}, 0))).toBeNull();
  });
});

describe('queue ETA', () => {
  const items: QueueItem[] = [
    { kind: 'backup', namespace: 'team-a', name: 'waiting', state: 'pending', position: 2, eta: { startInSeconds: 120, finishInSeconds: 420, samples: 5 } },
    { kind: 'backup', namespace: 'team-a', name: 'running', state: 'running', position: 1, eta: { startInSeconds: 0, finishInSeconds: 90, samples: 5 } },
    { kind: 'restore', namespace: 'team-a', name: 'waiting', state: 'pending', position: 3 },
    { kind: 'backup', namespace: 'team-a', name: 'old-style', state: 'pending', position: 4, etaSeconds: 3600 },
  ];
  it('maps backups by name and words the estimate', () => {
    const byName = backupQueueByName(items);
    expect(byName.get('waiting')?.kind).toBe('backup');
    expect(etaText(byName.get('waiting'))).toBe('starts in ~2m · done in ~7m');
    expect(etaText(byName.get('running'))).toBe('done in ~1m');
    expect(etaText(byName.get('old-style'))).toBe('done in ~1h');
    expect(etaText(undefined)).toBeNull();
  });
  it('changes its signature only when something relevant changes', () => {
    const before = listSignature([backup('a', 'Created', 'InProgress'), backup('b', 'New', undefined)]);
    expect(listSignature([backup('b', 'New', undefined), backup('a', 'Created', 'InProgress')])).toBe(before);
    expect(listSignature([backup('a', 'Created', 'Completed'), backup('b', 'New', undefined)])).not.toBe(before);
  });
});

describe('list filters and order', () => {
  const labelled = backup('web', 'Created', 'Completed', { labels: { app: 'web', env: 'prod' } });
  it('filters by request or Velero phase, case-insensitive, and by labels', () => {
    expect(matchesListFilter(labelled, { phase: 'completed', labelSelector: '' })).toBe(true);
    expect(matchesListFilter(labelled, { phase: 'Created', labelSelector: '' })).toBe(true);
    expect(matchesListFilter(labelled, { phase: 'Failed', labelSelector: '' })).toBe(false);
    expect(matchesListFilter(labelled, { phase: '', labelSelector: 'app=web,env in (prod)' })).toBe(true);
    expect(matchesListFilter(labelled, { phase: '', labelSelector: 'app=db' })).toBe(false);
  });
  it('sorts newest first', () => {
    const older = backup('older', 'Created', 'Completed', { creationTimestamp: '2026-11-22T00:00:00Z' });
    const newer = backup('newer', 'Created', 'Completed', { creationTimestamp: '2026-11-23T00:00:00Z' });
    expect(sortNewestFirst([older, newer]).map((b) => b.metadata.name)).toEqual(['newer', 'older']);
  });
});

describe('conditions and timeline in words', () => {
  it('describes NAC conditions and shows unknown ones verbatim', () => {
    expect(describeCondition({ type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted' })).toEqual({ text: 'NAC accepted the backup request.', tone: 'success' });
    expect(describeCondition({ type: 'Accepted', status: 'False', reason: 'InvalidBackupSpec', message: 'spec.backupSpec.includedNamespaces is restricted' })).toEqual({
      text: 'NAC refused the backup request: spec.backupSpec.includedNamespaces is restricted',
      tone: 'danger',
    });
    expect(describeCondition({ type: 'Accepted', status: 'False', reason: 'VeleroBackupNotFound', message: 'NonAdminBackup is finalized' })).toEqual({
      text: 'The Velero backup no longer exists (it expired or an administrator deleted it); NAC will not take it again: NonAdminBackup is finalized',
      tone: 'warning',
    });
    expect(describeCondition({ type: 'Queued', status: 'True', reason: 'BackupScheduled' }).text).toContain('Velero backup was created');
    expect(describeCondition({ type: 'Deleting', status: 'True', reason: 'DeletionPending', message: 'backup accepted for deletion' }).tone).toBe('warning');
    expect(describeCondition({ type: 'Mystery', status: 'False', reason: 'Odd', message: 'hm' })).toEqual({ text: 'Mystery is False (Odd): hm', tone: 'custom' });
  });
  it('describes timeline entries from the history', () => {
    expect(describeTimelineEntry({ at: '2026-11-23T05:59:01.272Z', attribute: 'phase', value: 'New' }).text).toBe('Request phase became New');
    expect(describeTimelineEntry({ at: '', attribute: 'veleroPhase', value: 'Completed' })).toEqual({ text: 'Velero phase became Completed', tone: 'success' });
    expect(describeTimelineEntry({ at: '', attribute: 'veleroPhase', value: 'FailedValidation' }).tone).toBe('danger');
    expect(describeTimelineEntry({ at: '', attribute: 'queuePosition', value: '1' }).text).toBe('Position 1 in Velero’s queue');
    expect(describeTimelineEntry({ at: '', attribute: 'queuePosition', value: '0' }).text).toBe('Left Velero’s queue');
    expect(describeTimelineEntry({ at: '', attribute: 'condition/Accepted', value: 'True', reason: 'BackupAccepted', message: 'backup accepted' }).text).toBe('NAC accepted the backup request.');
    expect(describeTimelineEntry({ at: '', attribute: 'deleted', value: 'true' }).text).toBe('The backup was deleted');
    expect(describeTimelineEntry({ at: '', attribute: 'odd', value: 'x' }).text).toBe('odd became x');
  });
});

describe('history operation of a backup', () => {
  const op = (id: string, name: string, createdAt: string, kind: Operation['kind'] = 'backup'): Operation => ({ id, uid: id, namespace: 'team-a', name, kind, createdAt, phaseRank: 0 });
  it('prefers the uid, else the newest backup of that exact name', () => {
    const ops = [op('1', 'nightly', '2026-11-20T00:00:00Z'), op('2', 'nightly', '2026-11-22T00:00:00Z'), op('3', 'nightly-2', '2026-11-23T00:00:00Z'), op('4', 'nightly', '2026-11-23T00:00:00Z', 'restore')];
    expect(pickOperation(ops, 'nightly', '1')?.id).toBe('1');
    expect(pickOperation(ops, 'nightly', 'gone')?.id).toBe('2');
    expect(pickOperation(ops, 'nope')).toBeUndefined();
  });
  it('measures durations', () => {
    expect(secondsBetween('2026-11-23T05:59:01Z', '2026-11-23T06:01:31Z')).toBe(150);
    expect(secondsBetween(null, '2026-11-23T06:01:31Z')).toBeNull();
  });
});
