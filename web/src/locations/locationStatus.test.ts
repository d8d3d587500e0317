// Tests of storage-location status and approval helpers on a real demo list.
import { describe, expect, it } from 'vitest';
import type { NonAdminBackupStorageLocation } from '../api/types';
import { locationList } from '../testing/objectAnswers';
import {
  anyPending,
  approvalOf,
  approvalView,
  isDefaultLocation,
  locationAccessMode,
  locationBucket,
  locationCredential,
  locationPhase,
  locationProblem,
  locationProvider,
} from './locationStatus';

const probe = locationList.items[0];

describe('approvals', () => {
  it('reads the approvals map of the list answer', () => {
    expect(approvalOf(locationList.approvals, 'loc-probe')).toBe('NotRequired');
    expect(approvalOf({ a: 'Pending' }, 'a')).toBe('Pending');
    expect(approvalOf({ a: 'Weird' }, 'a')).toBe('Unknown');
    expect(approvalOf(null, 'a')).toBe('Unknown');
  });

  it('explains Pending as waiting for the administrator', () => {
    expect(approvalView('Pending')).toEqual({
      label: 'Pending approval',
      color: 'orange',
      explanation: 'Waiting for the administrator to approve this location; it cannot be used until then.',
    });
    expect(approvalView('Rejected').color).toBe('red');
    expect(approvalView('Approved').color).toBe('green');
  });

  it('notices pending locations', () => {
    expect(anyPending({ a: 'Approved', b: 'Pending' })).toBe(true);
    expect(anyPending(locationList.approvals)).toBe(false);
  });
});

describe('row values', () => {
  it('reads the real location', () => {
    expect(locationProvider(probe)).toBe('aws');
    expect(locationBucket(probe)).toBe('my-bucket/team-a');
    expect(locationCredential(probe)).toBe('web-credentials/cloud');
    expect(locationAccessMode(probe)).toBe('ReadWrite');
    expect(isDefaultLocation(probe)).toBe(false);
    expect(locationPhase(probe)).toBe('BackingOff');
    expect(locationProblem(probe)).toBe('spec.backupStorageLocationSpec.credential.key: Secret "web-credentials" has no key "cloud"');
  });

  it('prefers the Velero BSL phase and its message', () => {
    const unavailable = {
      ...probe,
      status: { phase: 'Created', conditions: [], veleroBackupStorageLocation: { status: { phase: 'Unavailable', message: 'bucket not found' } } },
    } satisfies NonAdminBackupStorageLocation;
    expect(locationPhase(unavailable)).toBe('Unavailable');
    expect(locationProblem(unavailable)).toBe('bucket not found');
    const available = { ...unavailable, status: { phase: 'Created', veleroBackupStorageLocation: { status: { phase: 'Available' } } } } satisfies NonAdminBackupStorageLocation;
    expect(locationProblem(available)).toBeNull();
  });

  it('shows a bucket without prefix', () => {
    const bare = { ...probe, spec: { backupStorageLocationSpec: { provider: 'gcp', objectStorage: { bucket: 'b' } } } };
    expect(locationBucket(bare)).toBe('b');
    expect(locationCredential(bare)).toBe('—');
  });
});
