// Tests of restore status helpers on real demo answers.
import { describe, expect, it } from 'vitest';
import type { NonAdminRestore } from '../api/types';
import { describePartiallyFailed, historyDetail, historyOfRestore, restoreCompleted, restorePartiallyFailed } from '../testing/objectAnswers';
import {
  conditionInWords,
  descriptionPhase,
  descriptionProgress,
  isFinished,
  pickOperation,
  restorePhase,
  restoreProgress,
  restoreQueuePosition,
  secondsBetween,
  tidyTimeline,
  timelineInWords,
} from './restoreStatus';

const queued = {
  metadata: { name: 'r3', uid: 'u3' },
  spec: { restoreSpec: { backupName: 'ui-hist-1' } },
  status: { phase: 'Created', queueInfo: { estimatedQueuePosition: 2 }, veleroRestore: { status: { phase: 'New' } } },
} satisfies NonAdminRestore;

describe('list values', () => {
  it('shows the Velero phase, else the request phase', () => {
    expect(restorePhase(restoreCompleted)).toBe('Completed');
    expect(restorePhase(restorePartiallyFailed)).toBe('PartiallyFailed');
    expect(restorePhase({ metadata: { name: 'x' }, spec: { restoreSpec: {} }, status: { phase: 'BackingOff' } })).toBe('BackingOff');
    expect(restorePhase({ metadata: { name: 'x' }, spec: { restoreSpec: {} } })).toBe('New');
  });

  it('reads itemsRestored of totalItems', () => {
    expect(restoreProgress(restoreCompleted)).toEqual({ done: 9, total: 9 });
    expect(restoreProgress(queued)).toEqual({ done: null, total: null });
  });

  it('gives a queue position only while waiting', () => {
    expect(restoreQueuePosition(queued)).toBe(2);
    expect(restoreQueuePosition(restoreCompleted)).toBeNull();
  });

  it('knows finished phases', () => {
    expect(['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'InProgress', null].map(isFinished)).toEqual([true, true, true, true, false, false]);
  });
});

describe('description values', () => {
  it('reads the restore progress and phase', () => {
    expect(descriptionProgress(describePartiallyFailed)).toEqual({ done: 9, total: 9 });
    expect(descriptionPhase(describePartiallyFailed)).toBe('PartiallyFailed');
    expect(descriptionPhase({ ...describePartiallyFailed, veleroPhase: null, requestPhase: 'BackingOff' })).toBe('BackingOff');
  });
});

describe('conditions and timeline in words', () => {
  it('explains the real conditions', () => {
    expect(restoreCompleted.status.conditions.map(conditionInWords)).toEqual([
      'NAC accepted the restore request.',
      'Velero was asked to run it (its Velero Restore exists).',
    ]);
    expect(conditionInWords({ type: 'Accepted', status: 'False', reason: 'InvalidRestoreSpec', message: 'backup "x" not found' })).toBe(
      'NAC refused the restore request: backup "x" not found',
    );
    expect(conditionInWords({ type: 'Custom', status: 'Unknown' })).toBe('Custom is Unknown');
    expect(conditionInWords({ type: 'Accepted', status: 'False', reason: 'VeleroRestoreNotFound', message: 'NonAdminRestore is finalized' })).toBe(
      'The Velero restore no longer exists (an administrator or garbage collection removed it); NAC will not run it again: NonAdminRestore is finalized',
    );
  });

  it('explains the real timeline, dropping nothing meaningful', () => {
    const words = tidyTimeline(historyDetail.timeline).map(timelineInWords);
    expect(words).toEqual([
      'Request phase became New',
      'NAC accepted the restore request.',
      'Velero phase became New',
      'Request phase became Created',
      'Position in the Velero queue: 1',
      'Velero was asked to run it (its Velero Restore exists).',
      'Velero phase became InProgress',
      'Velero phase became Finalizing',
      'Velero phase became Completed',
      'Left the Velero queue',
    ]);
    expect(timelineInWords({ at: '2026-11-23T06:00:00Z', attribute: 'deleted', value: 'true' })).toBe('The restore record was deleted');
  });

  it('drops repeats of the same fact', () => {
    const entries = [
      { at: '2026-01-01T00:00:02Z', attribute: 'veleroPhase', value: 'InProgress' },
      { at: '2026-01-01T00:00:01Z', attribute: 'veleroPhase', value: 'InProgress' },
      { at: '2026-01-01T00:00:03Z', attribute: 'veleroPhase', value: 'Completed' },
    ];
    expect(tidyTimeline(entries).map((e) => e.at)).toEqual(['2026-01-01T00:00:01Z', '2026-01-01T00:00:03Z']);
  });
});

describe('pickOperation', () => {
  it('finds the operation by uid, else the newest with the name', () => {
    const items = historyOfRestore.items;
    expect(pickOperation(items, 'r-probe-1', 'e869bf36-96fd-4166-b2f4-c96c5b89e3d4')?.id).toBe('e869bf36-96fd-4166-b2f4-c96c5b89e3d4');
    const older = { ...items[0], id: 'old', uid: 'old', createdAt: '2026-11-01T00:00:00.000Z' };
    const other = { ...items[0], id: 'other', name: 'r-probe-10' };
    expect(pickOperation([older, other, items[0]], 'r-probe-1')?.id).toBe(items[0].id);
    expect(pickOperation([other], 'r-probe-1')).toBeNull();
  });
});

describe('secondsBetween', () => {
  it('measures durations', () => {
    expect(secondsBetween('2026-11-23T05:59:02Z', '2026-11-23T05:59:03Z')).toBe(1);
    expect(secondsBetween(null, '2026-11-23T05:59:03Z')).toBeNull();
    expect(secondsBetween('2026-11-23T05:59:03Z', '2026-11-23T05:59:02Z')).toBeNull();
  });
});
