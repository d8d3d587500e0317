// What a NonAdminBackupStorageLocation's status and approval mean for the list: the Velero BSL
// phase, the administrator's approval (from the list answer's `approvals` map), and the problem
// to show when it is not usable.
import type { NonAdminBackupStorageLocation } from '../api/types';
import { t } from '../strings';

export type Approval = 'Approved' | 'Pending' | 'Rejected' | 'NotRequired' | 'Unknown';

/** The approval of `name` in a list answer's `approvals` map. */
export function approvalOf(approvals: Record<string, string> | null | undefined, name: string): Approval {
  const value = approvals?.[name];
  return value === 'Approved' || value === 'Pending' || value === 'Rejected' || value === 'NotRequired' ? value : 'Unknown';
}

/** The label text, colour and explanation of an approval state. */
export function approvalView(approval: Approval): { label: string; color: 'green' | 'orange' | 'red' | 'grey'; explanation: string } {
  const a = t.locations.approval;
  switch (approval) {
    case 'Approved':
      return { label: a.approved, color: 'green', explanation: a.approvedHelp };
    case 'Pending':
      return { label: a.pending, color: 'orange', explanation: a.pendingHelp };
    case 'Rejected':
      return { label: a.rejected, color: 'red', explanation: a.rejectedHelp };
    case 'NotRequired':
      return { label: a.notRequired, color: 'grey', explanation: a.notRequiredHelp };
    default:
      return { label: a.unknown, color: 'grey', explanation: a.unknownHelp };
  }
}

/** Velero's BSL phase (Available / Unavailable), else NAC's request phase. */
export function locationPhase(location: NonAdminBackupStorageLocation): string {
  return location.status?.veleroBackupStorageLocation?.status?.phase ?? location.status?.phase ?? 'New';
}

/** Why the location is not usable: a False condition's message, else Velero's message, or null. */
export function locationProblem(location: NonAdminBackupStorageLocation): string | null {
  const failing = (location.status?.conditions ?? []).find((condition) => condition.status === 'False' && condition.message);
  if (failing) return failing.message ?? null;
  const velero = location.status?.veleroBackupStorageLocation?.status;
  if (velero?.phase === 'Unavailable' && velero.message) return velero.message;
  return null;
}

export function locationProvider(location: NonAdminBackupStorageLocation): string {
  return location.spec.backupStorageLocationSpec.provider ?? '—';
}

/** `bucket/prefix` (or just the bucket). */
export function locationBucket(location: NonAdminBackupStorageLocation): string {
  const storage = location.spec.backupStorageLocationSpec.objectStorage;
  if (!storage?.bucket) return '—';
  return storage.prefix ? `${storage.bucket}/${storage.prefix.replace(/^\/+/, '')}` : storage.bucket;
}

export function isDefaultLocation(location: NonAdminBackupStorageLocation): boolean {
  return location.spec.backupStorageLocationSpec.default === true;
}

export function locationAccessMode(location: NonAdminBackupStorageLocation): string {
  return location.spec.backupStorageLocationSpec.accessMode ?? 'ReadWrite';
}

/** The credential Secret and key, `name/key`. */
export function locationCredential(location: NonAdminBackupStorageLocation): string {
  const credential = location.spec.backupStorageLocationSpec.credential;
  return credential?.name ? `${credential.name}/${credential.key ?? ''}` : '—';
}

/** Whether any location waits for the administrator (the list then re-reads approvals). */
export function anyPending(approvals: Record<string, string> | null | undefined): boolean {
  return Object.values(approvals ?? {}).includes('Pending');
}
