import { describe, expect, it } from 'vitest';
import { actionColor, entriesWith, isPendingOperation, overlapTitle, previewTotals, RESTORE_ACTIONS } from './preview';
import { DRY_RUN, RESTORE_PREVIEW } from '../testing/manifestAnswers';

describe('restore preview helpers', () => {
  it('knows every action the REST API spells, each with its colour', () => {
    expect(RESTORE_ACTIONS).toEqual(['Create', 'Update', 'Skip', 'Fail', 'Undetermined']);
    expect(RESTORE_ACTIONS.map(actionColor)).toEqual(['green', 'blue', 'grey', 'red', 'orange']);
    expect(actionColor('Something new')).toBe('grey');
  });

  it('keeps the restore order and positions when filtering by action', () => {
    expect(entriesWith(RESTORE_PREVIEW.entries, '').map(({ position, entry }) => `${position}:${entry.name}`)).toEqual(['1:team-a', '2:web-config', '3:web-extra', '4:web-hidden']);
    expect(entriesWith(RESTORE_PREVIEW.entries, 'Skip').map(({ position }) => position)).toEqual([1, 2]);
    expect(entriesWith(RESTORE_PREVIEW.entries, 'Update')).toEqual([]);
  });

  it('shows the processed count and every main action, and the rest only when not zero', () => {
    expect(previewTotals(RESTORE_PREVIEW.counts).map((total) => `${total.label}=${total.value}`)).toEqual([
      'Processed=3',
      'Create=1',
      'Update=0',
      'Skip=1',
      'Undetermined=1',
      'Warnings=1',
    ]);
  });

  it('titles an overlap with the operation and how many items it shares', () => {
    expect(overlapTitle(DRY_RUN.overlaps[0])).toBe('Would wait on backup b1: 2 overlapping items');
    expect(overlapTitle(RESTORE_PREVIEW.overlaps[0])).toBe('Would wait on backup nightly: 1 overlapping item');
    expect(overlapTitle(DRY_RUN.overlaps[0], true)).toBe('Waiting on backup b1: 2 overlapping items');
    expect(overlapTitle(RESTORE_PREVIEW.overlaps[0], true)).toBe('Waiting on backup nightly: 1 overlapping item');
  });

  it('knows a created operation is pending until Velero starts it, as the gateway decides', () => {
    expect(isPendingOperation('backups', undefined, undefined)).toBe(true);
    expect(isPendingOperation('backups', 'New', null)).toBe(true);
    for (const phase of ['New', 'Queued', 'ReadyToStart']) expect(isPendingOperation('backups', 'Created', phase)).toBe(true);
    for (const phase of ['InProgress', 'Completed', 'Failed', 'FailedValidation', 'Finalizing']) expect(isPendingOperation('backups', 'Created', phase)).toBe(false);
    expect(isPendingOperation('backups', 'BackingOff', undefined)).toBe(false);
    expect(isPendingOperation('backups', 'Deleting', 'Queued')).toBe(false);
    expect(isPendingOperation('restores', 'Created', 'New')).toBe(true);
    expect(isPendingOperation('restores', 'Created', 'Queued')).toBe(false);
    expect(isPendingOperation('restores', 'Created', 'InProgress')).toBe(false);
  });
});
