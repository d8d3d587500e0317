import { describe, expect, it } from 'vitest';
import { backupFinishedAt, comparableBackups, describeChange, diffDirection, mapChanges } from './diff';
import { completedBackup } from '../testing/backupAnswers';
import { B2_AGAINST_B1, WEB_CONFIG } from '../testing/manifestAnswers';

function backupAt(name: string, completedAt: string, phase = 'Completed') {
  const backup = completedBackup(name, { veleroPhase: phase });
  backup.status!.veleroBackup!.status!.completionTimestamp = completedAt;
  return backup;
}

describe('comparing backups', () => {
  it('offers the other completed or partially failed backups, newest first', () => {
    const list = [
      backupAt('old', '2026-11-20T00:00:00Z'),
      backupAt('me', '2026-11-21T00:00:00Z'),
      backupAt('failed', '2026-11-22T00:00:00Z', 'Failed'),
      backupAt('partial', '2026-11-23T00:00:00Z', 'PartiallyFailed'),
      backupAt('running', '2026-11-24T00:00:00Z', 'InProgress'),
    ];
    expect(comparableBackups(list, 'me').map((b) => b.metadata.name)).toEqual(['partial', 'old']);
    expect(backupFinishedAt(list[0])).toBe('2026-11-20T00:00:00Z');
  });

  it('diffs the later backup against the earlier one', () => {
    expect(diffDirection({ name: 'b2', at: '2026-11-23T12:11:22Z' }, { name: 'b1', at: '2026-11-23T12:11:05Z' })).toEqual({ name: 'b2', against: 'b1' });
    expect(diffDirection({ name: 'b1', at: '2026-11-23T12:11:05Z' }, { name: 'b2', at: '2026-11-23T12:11:22Z' })).toEqual({ name: 'b2', against: 'b1' });
    expect(diffDirection({ name: 'b1' }, { name: 'b2', at: '2026-11-23T12:11:22Z' })).toEqual({ name: 'b1', against: 'b2' });
  });

  it('lists what changed in a map', () => {
    expect(mapChanges({ app: 'web', tier: 'db', keep: 'x' }, { app: 'api', keep: 'x', team: 'a' })).toEqual({
      added: [['team', 'a']],
      removed: [['tier', 'db']],
      changed: [['app', 'web', 'api']],
    });
    expect(mapChanges(undefined, undefined)).toEqual({ added: [], removed: [], changed: [] });
  });

  it('says in words what changed in an item', () => {
    expect(describeChange(B2_AGAINST_B1.changed[0])).toEqual(['labels: +tier=front']);
    const moved = {
      identity: { groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' },
      fields: ['version', 'annotations', 'owners'] as const,
      before: { ...WEB_CONFIG, version: 'v1beta1', annotations: { note: 'a', gone: 'b' }, owners: ['u1', 'u2'] },
      after: { ...WEB_CONFIG, annotations: { note: 'c' }, owners: ['u2', 'u3', 'u4'] },
    };
    expect(describeChange({ ...moved, fields: [...moved.fields] })).toEqual(['version v1beta1 → v1', 'annotations: −gone=b, note: a → c', 'owners: 2 added, 1 removed']);
  });
});
