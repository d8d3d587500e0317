import { describe, expect, it } from 'vitest';
import { sharedStorageView, storageWaitMessage } from './sharedStorage';
import { completedBackup } from '../testing/backupAnswers';
import { READY_STORAGE, RETAINED_STORAGE } from '../testing/manifestAnswers';

const NOW = Date.parse('2026-11-23T12:00:00Z');

describe('shared storage', () => {
  it('shows nothing when the cluster has no shared pool', () => {
    expect(sharedStorageView({ configured: false }, NOW)).toBeNull();
    expect(sharedStorageView(undefined, NOW)).toBeNull();
    expect(sharedStorageView(null, NOW)).toBeNull();
  });

  it('shows the state in words with the tenant message', () => {
    expect(sharedStorageView(READY_STORAGE, NOW)).toEqual({
      state: 'Ready',
      stateLabel: 'Ready',
      variant: 'success',
      message: READY_STORAGE.message,
      purge: null,
    });
    expect(sharedStorageView({ configured: true, state: 'WaitingForCapacity', message: 'every shared backup bucket is full' }, NOW)).toMatchObject({
      stateLabel: 'Waiting for capacity',
      variant: 'warning',
    });
    expect(sharedStorageView({ configured: true }, NOW)).toMatchObject({ state: 'Provisioning', stateLabel: 'Being set up', variant: 'info' });
  });

  it('says when a retained namespace’s backups are purged', () => {
    const view = sharedStorageView(RETAINED_STORAGE, NOW)!;
    expect(view.variant).toBe('warning');
    expect(view.purge).toContain('Its backups are purged after');
    expect(view.purge).toContain('(in 7d)');
    // A purge date only matters while retained or purging.
    expect(sharedStorageView({ ...READY_STORAGE, purgeAfter: '2026-11-30T12:00:00Z' }, NOW)!.purge).toBeNull();
  });

  it('finds a backup waiting for backup storage', () => {
    const waiting = completedBackup('nightly', { phase: 'New' });
    waiting.status!.conditions = [
      { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted', lastTransitionTime: '2026-11-23T05:59:01Z' },
      { type: 'Queued', status: 'False', reason: 'WaitingForBackupStorage', message: 'waiting for backup storage: every shared backup bucket is full', lastTransitionTime: '2026-11-23T05:59:01Z' },
    ];
    expect(storageWaitMessage(waiting)).toBe('waiting for backup storage: every shared backup bucket is full');
    expect(storageWaitMessage(completedBackup('probe-1'))).toBeNull();
    expect(storageWaitMessage(undefined)).toBeNull();
  });
});
