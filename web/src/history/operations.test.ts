// Tests of how operations are shown: kinds, links, durations, timelines and live merging.
import { describe, expect, it } from 'vitest';
import { completedBackupDetail, deletion, failedBackup, refusedLocation, refusedLocationDetail, restore, runningBackup, scheduleRun } from '../testing/historyAnswers';
import { describeTimelineEntry, durationText, itemsText, kindLabel, mergeOperations, operationLink, parentLink } from './operations';

describe('kindLabel', () => {
  it('names every kind in words', () => {
    expect(kindLabel('schedule_run')).toBe('Scheduled backup');
    expect(kindLabel('backup_storage_location')).toBe('Storage location');
    expect(kindLabel('delete')).toBe('Deletion');
    expect(kindLabel(null)).toBe('Operation');
    expect(kindLabel('something-new')).toBe('Operation');
  });
});

describe('operationLink and parentLink', () => {
  it('links backups, schedule runs, restores and locations to their pages', () => {
    expect(operationLink('team-a', runningBackup)).toBe('/ns/team-a/backups/ui-hist-1');
    expect(operationLink('team-a', scheduleRun)).toBe('/ns/team-a/backups/sched-probe-20261123060000');
    expect(operationLink('team-a', restore)).toBe('/ns/team-a/restores/r-probe-fail');
    expect(operationLink('team-a', refusedLocation)).toBe('/ns/team-a/storage-locations');
  });
  it('does not link objects that are gone or have no page', () => {
    expect(operationLink('team-a', deletion)).toBeNull();
    expect(operationLink('team-a', { ...runningBackup, deletedAt: '2026-11-23T06:10:00Z' })).toBeNull();
  });
  it('links a restore to its backup and a run to the schedules', () => {
    expect(parentLink('team-a', restore)).toBe('/ns/team-a/backups/ui-hist-1');
    expect(parentLink('team-a', scheduleRun)).toBe('/ns/team-a/schedules');
    expect(parentLink('team-a', runningBackup)).toBeNull();
    expect(parentLink('team-a', deletion)).toBeNull();
  });
  it('encodes names', () => {
    expect(operationLink('team a', { ...restore, name: 'x/y' })).toBe('/ns/team%20a/restores/x%2Fy');
  });
});

describe('durationText and itemsText', () => {
  const now = Date.parse('2026-11-23T06:01:54.000Z');
  it('shows the recorded duration', () => {
    expect(durationText(failedBackup, now)).toBe('4m');
    expect(durationText(scheduleRun, now)).toBe('5s');
  });
  it('shows how long a running operation has been running', () => {
    expect(durationText(runningBackup, now)).toBe('running 3m');
  });
  it('shows a dash when there is nothing to measure', () => {
    expect(durationText(deletion, now)).toBe('—');
    expect(durationText(refusedLocation, now)).toBe('—');
  });
  it('shows items done of the total', () => {
    expect(itemsText(runningBackup)).toBe('6 / 11 items');
    expect(itemsText(deletion)).toBe('—');
  });
});

describe('describeTimelineEntry', () => {
  it('puts each attribute in words', () => {
    const lines = completedBackupDetail.timeline.map(describeTimelineEntry);
    expect(lines[0]).toEqual({ label: 'Request phase', value: 'New', detail: undefined, problem: false });
    expect(lines[1]).toEqual({ label: 'Condition Accepted', value: 'True', detail: 'BackupAccepted: backup accepted', problem: false });
    expect(lines[3]).toMatchObject({ label: 'Velero phase', value: 'InProgress', problem: false });
    expect(lines[5]).toMatchObject({ label: 'Queue position', value: '#1' });
    expect(lines[8]).toMatchObject({ label: 'Queue position', value: 'left the queue' });
  });
  it('flags trouble', () => {
    const [phase, accepted] = refusedLocationDetail.timeline.map(describeTimelineEntry);
    expect(phase.problem).toBe(true);
    expect(accepted).toEqual({
      label: 'Condition Accepted',
      value: 'False',
      detail: 'BslSpecValidation: spec.backupStorageLocationSpec.credential.key: Secret "web-credentials" has no key "cloud"',
      problem: true,
    });
    expect(describeTimelineEntry({ at: '2026-11-23T06:00:00Z', attribute: 'veleroPhase', value: 'PartiallyFailed' }).problem).toBe(true);
    expect(describeTimelineEntry({ at: '2026-11-23T06:00:00Z', attribute: 'deleted', value: 'true' }).label).toBe('Object deleted');
  });
});

describe('mergeOperations', () => {
  it('replaces changed operations, adds new ones and keeps further pages', () => {
    const loaded = [restore, runningBackup, failedBackup];
    const finished = { ...runningBackup, phase: 'Completed', durationMs: 1000 };
    const merged = mergeOperations(loaded, [scheduleRun, restore, finished]);
    expect(merged.map((operation) => operation.name)).toEqual(['sched-probe-20261123060000', 'r-probe-fail', 'ui-hist-1', 'nightly-db']);
    expect(merged[2].phase).toBe('Completed');
  });
  it('keeps the server order of operations created in the same second', () => {
    const a = { ...restore, id: 'a', createdAt: '2026-11-23T05:59:22.000Z' };
    const b = { ...restore, id: 'b', createdAt: '2026-11-23T05:59:22.000Z' };
    expect(mergeOperations([a, b], [a]).map((operation) => operation.id)).toEqual(['a', 'b']);
  });
});
