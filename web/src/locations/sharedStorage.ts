// The namespace's place in the cluster's shared backup pool (seed 001): read from
// `GET …/sharedstorage`, shown where storage locations are. Nothing is shown when the cluster has
// no pool (configured=false) or the gateway does not know the endpoint (404). Also: a backup
// waiting for that storage (condition reason WaitingForBackupStorage).
import { api, ApiError } from '../api/client';
import type { NonAdminBackup, SharedStorage } from '../api/types';
import { formatTimestamp, formatUntil } from '../format';
import { useLoad, type Loaded } from '../hooks';
import { fmt, t } from '../strings';

/** The condition reason of a backup that waits for the shared pool. */
export const WAITING_FOR_BACKUP_STORAGE = 'WaitingForBackupStorage';

/** The namespace's shared storage; `{configured: false}` when the gateway has no such endpoint. */
export function useSharedStorage(namespace: string): Loaded<SharedStorage> {
  return useLoad(
    (signal) =>
      api.get('/api/v1/namespaces/{namespace}/sharedstorage', { path: { namespace }, signal }).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return { configured: false };
        throw error;
      }),
    `${namespace}/sharedstorage`,
  );
}

export type StorageVariant = 'success' | 'info' | 'warning' | 'danger' | 'custom';

export interface SharedStorageView {
  state: string;
  stateLabel: string;
  variant: StorageVariant;
  message: string;
  /** "Its backups are purged after … (in 6d)" while Retained or Purging with a date. */
  purge: string | null;
}

function variantOf(state: string): StorageVariant {
  switch (state) {
    case 'Ready':
      return 'success';
    case 'Provisioning':
      return 'info';
    case 'WaitingForCapacity':
    case 'Retained':
      return 'warning';
    case 'Unavailable':
    case 'Purging':
      return 'danger';
    default:
      return 'custom';
  }
}

/** What to show of the shared storage, or null when there is nothing to show (pure). */
export function sharedStorageView(storage: SharedStorage | null | undefined, now: number = Date.now()): SharedStorageView | null {
  if (!storage?.configured) return null;
  const state = storage.state ?? 'Provisioning';
  const s = t.manifests.sharedStorage;
  const purge = storage.purgeAfter && (state === 'Retained' || state === 'Purging') ? fmt(s.purgeAfter, { when: formatTimestamp(storage.purgeAfter), until: formatUntil(storage.purgeAfter, now) }) : null;
  return { state, stateLabel: s.states[state] ?? state, variant: variantOf(state), message: storage.message ?? '', purge };
}

/** The message of a backup that waits for backup storage, or null (pure). */
export function storageWaitMessage(backup: NonAdminBackup | undefined): string | null {
  const condition = (backup?.status?.conditions ?? []).find((c) => c.reason === WAITING_FOR_BACKUP_STORAGE && c.status !== 'True');
  if (!condition) return null;
  return condition.message || t.manifests.storageWait.title;
}
