// Real answers of the demo gateway (team-a, alice), captured for the tests of the namespace
// picker, dashboard, history and queue pages. Not used by the console itself.
import type { ClusterQueue, NamespaceCoverage, NamespaceQueue, NamespaceStatistics, NonAdminSchedule, Operation, OperationDetail } from '../api/types';
import type { ListAnswer } from './gateway';

export const scheduleRun: Operation = {
  id: '9304b417-e271-4bf3-9c62-ead6f3ba13ce',
  namespace: 'team-a',
  kind: 'schedule_run',
  name: 'sched-probe-20261123060000',
  uid: '9304b417-e271-4bf3-9c62-ead6f3ba13ce',
  veleroName: 'team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8-20261123060000',
  parentName: 'sched-probe',
  requester: null,
  createdAt: '2026-11-23T06:00:00.000Z',
  startedAt: '2026-11-23T06:00:00.000Z',
  completedAt: '2026-11-23T06:00:05.000Z',
  phase: 'Completed',
  phaseRank: 200,
  nacPhase: 'Created',
  itemsTotal: 46,
  itemsDone: 46,
  warnings: 0,
  errors: 0,
  failureReason: null,
  queuePosition: 0,
  deletedAt: null,
  durationMs: 5000,
};

export const deletion: Operation = {
  id: 'c0e4acbd-4e2d-554c-b316-eddeb5c1c5d4',
  namespace: 'team-a',
  kind: 'delete',
  name: 'probe-partially-fail',
  uid: '2cb560b9-c17c-4c56-b0ca-f3c26d680ecc',
  veleroName: 'team-a-probe-partially-fai-768a1970-6b29-4f0e-9041-b4c9e61f1027',
  parentName: 'probe-partially-fail',
  requester: null,
  createdAt: '2026-11-23T05:59:48.000Z',
  startedAt: null,
  completedAt: null,
  phase: 'Processed',
  phaseRank: 200,
  nacPhase: 'Deleting',
  itemsTotal: null,
  itemsDone: null,
  warnings: null,
  errors: null,
  failureReason: null,
  queuePosition: null,
  deletedAt: '2026-11-23T05:59:48.415Z',
  durationMs: null,
};

export const refusedLocation: Operation = {
  id: '48619921-9bdd-4916-80cb-c4032121e95a',
  namespace: 'team-a',
  kind: 'backup_storage_location',
  name: 'loc-probe',
  uid: '48619921-9bdd-4916-80cb-c4032121e95a',
  veleroName: null,
  parentName: null,
  requester: 'alice',
  createdAt: '2026-11-23T05:59:34.000Z',
  startedAt: null,
  completedAt: null,
  phase: 'BackingOff',
  phaseRank: 20,
  nacPhase: 'BackingOff',
  itemsTotal: null,
  itemsDone: null,
  warnings: null,
  errors: null,
  failureReason: 'spec.backupStorageLocationSpec.credential.key: Secret "web-credentials" has no key "cloud"',
  queuePosition: null,
  deletedAt: null,
  durationMs: null,
};

export const restore: Operation = {
  id: '8f5abed0-b66d-4f6d-90e2-0a1ee9be7ca5',
  namespace: 'team-a',
  kind: 'restore',
  name: 'r-probe-fail',
  uid: '8f5abed0-b66d-4f6d-90e2-0a1ee9be7ca5',
  veleroName: 'team-a-r-probe-fail-fe602060-88cf-4014-a6ed-2fc0a0e4f8bc',
  parentName: 'ui-hist-1',
  requester: 'alice',
  createdAt: '2026-11-23T05:59:18.000Z',
  startedAt: '2026-11-23T05:59:19.000Z',
  completedAt: '2026-11-23T05:59:20.000Z',
  phase: 'Completed',
  phaseRank: 200,
  nacPhase: 'Created',
  itemsTotal: 9,
  itemsDone: 9,
  warnings: 0,
  errors: 0,
  failureReason: null,
  queuePosition: 0,
  deletedAt: null,
  durationMs: 1000,
};

export const runningBackup: Operation = {
  id: '190b5942-88bb-4412-8790-5f17e90e21df',
  namespace: 'team-a',
  kind: 'backup',
  name: 'ui-hist-1',
  uid: '190b5942-88bb-4412-8790-5f17e90e21df',
  veleroName: 'team-a-ui-hist-1-6bd66a9e-1d7b-42c5-af1f-b68dd2d78e23',
  parentName: null,
  requester: 'alice',
  createdAt: '2026-11-23T05:58:54.000Z',
  startedAt: '2026-11-23T05:58:54.000Z',
  completedAt: null,
  phase: 'InProgress',
  phaseRank: 130,
  nacPhase: 'Created',
  itemsTotal: 11,
  itemsDone: 6,
  warnings: null,
  errors: null,
  failureReason: null,
  queuePosition: 1,
  deletedAt: null,
  durationMs: null,
};

/** A backup that failed (the demo's emulator does not fail; shaped like a real Velero failure). */
export const failedBackup: Operation = {
  ...runningBackup,
  id: '6c3e89c4-d5c0-4bc3-9cf8-46646a61d855',
  uid: '6c3e89c4-d5c0-4bc3-9cf8-46646a61d855',
  name: 'nightly-db',
  veleroName: 'team-a-nightly-db-e683f7f8-5a46-4171-aa26-8dcdf701c34c',
  createdAt: '2026-11-22T02:00:00.000Z',
  startedAt: '2026-11-22T02:00:01.000Z',
  completedAt: '2026-11-22T02:04:01.000Z',
  phase: 'Failed',
  phaseRank: 200,
  itemsDone: 20,
  itemsTotal: 48,
  errors: 3,
  warnings: 1,
  failureReason: 'found a backup with status "InProgress" during the server starting, mark it as "Failed"',
  queuePosition: 0,
  durationMs: 240000,
};

export const historyPage: { items: Operation[]; continue: string } = {
  items: [scheduleRun, deletion, refusedLocation, restore, runningBackup, failedBackup],
  continue: 'MTc5NTQxMzU2MjAwMApiMjJlMWE1NS1kMmEwLTQ3ODEtYTA3Ny01MzNlOGQ0YWViMWQ',
};

export const completedBackupDetail: OperationDetail = {
  operation: { ...runningBackup, completedAt: '2026-11-23T05:58:55.000Z', phase: 'Completed', phaseRank: 200, itemsDone: 11, warnings: 0, errors: 0, queuePosition: 0, durationMs: 1000 },
  timeline: [
    { at: '2026-11-23T05:58:54.457Z', attribute: 'phase', value: 'New' },
    { at: '2026-11-23T05:58:54.457Z', attribute: 'condition/Accepted', value: 'True', reason: 'BackupAccepted', message: 'backup accepted' },
    { at: '2026-11-23T05:58:54.467Z', attribute: 'veleroPhase', value: 'New' },
    { at: '2026-11-23T05:58:54.468Z', attribute: 'veleroPhase', value: 'InProgress' },
    { at: '2026-11-23T05:58:54.473Z', attribute: 'phase', value: 'Created' },
    { at: '2026-11-23T05:58:54.473Z', attribute: 'queuePosition', value: '1' },
    { at: '2026-11-23T05:58:54.473Z', attribute: 'condition/Queued', value: 'True', reason: 'BackupScheduled', message: 'Created Velero Backup object' },
    { at: '2026-11-23T05:58:55.604Z', attribute: 'veleroPhase', value: 'Completed' },
    { at: '2026-11-23T05:58:55.605Z', attribute: 'queuePosition', value: '0' },
  ],
};

export const refusedLocationDetail: OperationDetail = {
  operation: refusedLocation,
  timeline: [
    { at: '2026-11-23T05:59:34.020Z', attribute: 'phase', value: 'BackingOff' },
    {
      at: '2026-11-23T05:59:34.020Z',
      attribute: 'condition/Accepted',
      value: 'False',
      reason: 'BslSpecValidation',
      message: 'spec.backupStorageLocationSpec.credential.key: Secret "web-credentials" has no key "cloud"',
    },
  ],
};

export const stats7d: NamespaceStatistics = {
  namespace: 'team-a',
  from: '2026-11-16T05:59:17.887Z',
  to: '2026-11-23T05:59:17.887Z',
  kinds: [
    { kind: 'backup', total: 6, byPhase: { Completed: 4, InProgress: 1, Queued: 1 }, successRate: 1.0, p50DurationMs: 1000, p95DurationMs: 2000, itemsDone: 46 },
    { kind: 'restore', total: 1, byPhase: { Completed: 1 }, successRate: 1.0, p50DurationMs: 1000, p95DurationMs: 1000, itemsDone: 9 },
    { kind: 'download', total: 6, byPhase: { Processed: 6 }, successRate: 0.0, p50DurationMs: null, p95DurationMs: null, itemsDone: 0 },
  ],
};

export const emptyStats: NamespaceStatistics = { namespace: 'team-a', from: '2026-11-16T05:58:50.922Z', to: '2026-11-23T05:58:50.922Z', kinds: [] };

export const coverage: NamespaceCoverage = {
  namespace: 'team-a',
  lastSuccessfulBackup: 'ui-overview-probe-20261123060000',
  lastSuccessfulBackupAt: '2026-11-23T06:00:10.000Z',
  lastSuccessfulBackupAgeSeconds: 5,
  failingSchedules: [],
};

export const uncovered: NamespaceCoverage = {
  namespace: 'team-a',
  lastSuccessfulBackup: null,
  lastSuccessfulBackupAt: null,
  lastSuccessfulBackupAgeSeconds: null,
  failingSchedules: [],
};

export const namespaceQueue: NamespaceQueue = {
  namespace: 'team-a',
  items: [
    { kind: 'backup', namespace: 'team-a', name: 'probe-partially-fail', phase: 'InProgress', state: 'running', position: 1, etaSeconds: 1, eta: { startInSeconds: 0, finishInSeconds: 1, samples: 4 } },
    { kind: 'backup', namespace: 'team-a', name: 'probe-fail', phase: 'Queued', state: 'pending', position: 1, etaSeconds: 1, eta: { startInSeconds: 0, finishInSeconds: 1, samples: 4 } },
    { kind: 'backup', namespace: 'team-a', name: 'ui-hist-3', phase: 'Queued', state: 'pending', position: 2, etaSeconds: null, eta: null },
  ],
};

export const clusterQueue: ClusterQueue = {
  backups: { pending: 2, running: 1, meanDurationSeconds: 2.5 },
  restores: { pending: 0, running: 0, meanDurationSeconds: null },
  mine: [
    ...namespaceQueue.items,
    { kind: 'restore', namespace: 'team-a-dev', name: 'r-dev', phase: null, state: 'pending', position: 1, etaSeconds: null, eta: null },
  ],
};

export const schedules: ListAnswer<NonAdminSchedule> = {
  apiVersion: 'oadp.openshift.io/v1alpha1',
  kind: 'NonAdminScheduleList',
  metadata: {},
  items: [
    {
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminSchedule',
      metadata: { creationTimestamp: '2026-11-23T05:59:36Z', name: 'ui-overview-probe', namespace: 'team-a', uid: '889ab7fb-1248-40ad-a00f-5559ace3ab55' },
      spec: { schedule: '*/2 * * * *', template: { backupSpec: { includedNamespaces: ['team-a'] } } },
      status: {
        nextRun: '2026-11-23T06:00:00Z',
        lastBackup: {
          name: 'ui-overview-probe-20261123055936',
          veleroBackupName: 'team-a-ui-overview-probe-f389bf86-1755-43d4-bb94-bc7b0231f141-20261123055936',
          phase: 'Completed',
          startTimestamp: '2026-11-23T05:59:36Z',
          completionTimestamp: '2026-11-23T05:59:41Z',
          expiration: '2026-12-23T05:59:36Z',
        },
        phase: 'Created',
        conditions: [{ lastTransitionTime: '2026-11-23T05:59:36Z', message: 'schedule accepted', reason: 'ScheduleAccepted', status: 'True', type: 'Accepted' }],
      },
    },
    {
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminSchedule',
      metadata: { creationTimestamp: '2026-11-20T01:00:00Z', name: 'nightly', namespace: 'team-a', uid: '0d1c7a55-8f7e-4a7b-9b0a-3a1d51a8e1f2' },
      spec: { schedule: '0 2 * * *', paused: true, template: { backupSpec: { includedNamespaces: ['team-a'] } } },
      status: { phase: 'Created' },
    },
  ],
};
