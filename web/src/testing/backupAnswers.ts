// Gateway answers recorded from `nac demo` (team-a, user alice), used by the backups pages' tests.
import type { Description, NonAdminBackup, OperationDetail, OperationPage, PolicyView, RequestPhase } from '../api/types';
import type { VeleroResults } from '../lib/failureSummary';
import { openPolicy } from './accessAnswers';

/** A policy with rules (as an administrator would configure them). */
export const STRICT_POLICY: PolicyView = {
  ...openPolicy,
  backup: {
    enforced: { snapshotVolumes: false },
    defaults: { ttl: '168h0m0s' },
    maximum: { ttl: '720h0m0s' },
    allowed: {},
  },
};

export const STORAGE_LOCATIONS = { apiVersion: 'oadp.openshift.io/v1alpha1', kind: 'NonAdminBackupStorageLocationList', metadata: {}, items: [], approvals: {} };

const VELERO_SPEC = { includedNamespaces: ['team-a'], labelSelector: { matchLabels: { app: 'web' } }, ttl: '24h', storageLocation: 'default' };

export function completedBackup(name = 'probe-1', overrides: { phase?: RequestPhase; veleroPhase?: string; resourceVersion?: string; done?: number; total?: number; position?: number } = {}): NonAdminBackup {
  return {
    apiVersion: 'oadp.openshift.io/v1alpha1',
    kind: 'NonAdminBackup',
    metadata: {
      creationTimestamp: '2026-11-23T05:59:01Z',
      name,
      namespace: 'team-a',
      resourceVersion: overrides.resourceVersion ?? '202',
      uid: 'e8917456-86c0-46aa-8261-52e7301910fb',
    },
    spec: { backupSpec: { labelSelector: { matchLabels: { app: 'web' } }, ttl: '24h' } },
    status: {
      veleroBackup: {
        name: `team-a-${name}-aa9cafa4-cbb2-4769-b5e1-85b8a9d19c67`,
        namespace: 'openshift-adp',
        nacuuid: `team-a-${name}-aa9cafa4-cbb2-4769-b5e1-85b8a9d19c67`,
        status: {
          expiration: '2026-11-24T05:59:01Z',
          phase: overrides.veleroPhase ?? 'Completed',
          startTimestamp: '2026-11-23T05:59:01Z',
          completionTimestamp: '2026-11-23T05:59:01Z',
          warnings: 0,
          errors: 0,
          progress: { totalItems: overrides.total ?? 6, itemsBackedUp: overrides.done ?? 6 },
        },
      },
      queueInfo: { estimatedQueuePosition: overrides.position ?? 0 },
      phase: overrides.phase ?? 'Created',
      conditions: [
        { lastTransitionTime: '2026-11-23T05:59:01Z', message: 'backup accepted', reason: 'BackupAccepted', status: 'True', type: 'Accepted' },
        { lastTransitionTime: '2026-11-23T05:59:01Z', message: 'Created Velero Backup object', reason: 'BackupScheduled', status: 'True', type: 'Queued' },
      ],
    },
  };
}

export function describeOf(backup: NonAdminBackup, extra: Partial<Description> = {}): Description {
  const velero = backup.status?.veleroBackup?.status;
  return {
    kind: 'NonAdminBackup',
    namespace: 'team-a',
    name: backup.metadata.name,
    requestPhase: backup.status?.phase,
    veleroPhase: velero?.phase,
    queuePosition: null,
    eta: null,
    conditions: backup.status?.conditions ?? [],
    effectiveSpec: VELERO_SPEC,
    progress: { totalItems: velero?.progress?.totalItems ?? null, itemsBackedUp: velero?.progress?.itemsBackedUp ?? null, volumeSnapshotsAttempted: null, volumeSnapshotsCompleted: null },
    started: velero?.startTimestamp,
    completed: velero?.completionTimestamp,
    expiration: velero?.expiration,
    errors: velero?.errors ?? 0,
    warnings: velero?.warnings ?? 0,
    failureReason: null,
    validationErrors: [],
    deletion: null,
    resourceList: null,
    resourceListUnavailable: null,
    ...extra,
  };
}

export const HISTORY_PAGE: OperationPage = {
  items: [
    {
      id: 'e8917456-86c0-46aa-8261-52e7301910fb',
      namespace: 'team-a',
      kind: 'backup',
      name: 'probe-1',
      uid: 'e8917456-86c0-46aa-8261-52e7301910fb',
      veleroName: 'team-a-probe-1-aa9cafa4-cbb2-4769-b5e1-85b8a9d19c67',
      parentName: null,
      requester: 'alice',
      createdAt: '2026-11-23T05:59:01.000Z',
      startedAt: '2026-11-23T05:59:01.000Z',
      completedAt: '2026-11-23T05:59:01.000Z',
      phase: 'Completed',
      phaseRank: 200,
      nacPhase: 'Created',
      itemsTotal: 6,
      itemsDone: 6,
      warnings: 0,
      errors: 0,
      failureReason: null,
      queuePosition: 0,
      deletedAt: null,
      durationMs: 0,
    },
  ],
};

export const HISTORY_DETAIL: OperationDetail = {
  operation: HISTORY_PAGE.items[0],
  timeline: [
    { at: '2026-11-23T05:59:01.272Z', attribute: 'phase', value: 'New' },
    { at: '2026-11-23T05:59:01.272Z', attribute: 'condition/Accepted', value: 'True', reason: 'BackupAccepted', message: 'backup accepted' },
    { at: '2026-11-23T05:59:01.281Z', attribute: 'queuePosition', value: '1' },
    { at: '2026-11-23T05:59:01.288Z', attribute: 'veleroPhase', value: 'InProgress' },
    { at: '2026-11-23T05:59:01.920Z', attribute: 'veleroPhase', value: 'PartiallyFailed' },
  ],
};

export const LOG = [
  'time="2026-11-23T05:59:01Z" level=info msg="Setting up backup temp file" backup=openshift-adp/team-a-probe-1-aa9cafa4',
  'time="2026-11-23T05:59:01Z" level=info msg="Starting backup" backup=openshift-adp/team-a-probe-1-aa9cafa4',
  'time="2026-11-23T05:59:01Z" level=info msg="Backed up item" backup=openshift-adp/team-a-probe-1-aa9cafa4 name=web-config namespace=team-a resource=configmaps',
  'time="2026-11-23T05:59:01Z" level=error msg="Error backing up item" backup=openshift-adp/team-a-probe-1-aa9cafa4 name=web-data namespace=team-a resource=persistentvolumeclaims',
  'time="2026-11-23T05:59:01Z" level=info msg="Backed up item" backup=openshift-adp/team-a-probe-1-aa9cafa4 name=web namespace=team-a resource=deployments.apps',
  'time="2026-11-23T05:59:01Z" level=info msg="Backup completed" backup=openshift-adp/team-a-probe-1-aa9cafa4',
  '',
].join('\n');

export const PARTIAL_RESULTS: VeleroResults = {
  errors: {
    namespaces: {
      'team-a': [
        'Error backing up item resource: /persistentvolumeclaims name: /web-data error: /error executing custom action (groupResource=persistentvolumeclaims, namespace=team-a, name=web-data): rpc error: code = Unknown desc = failed to get volumesnapshotclass for storageclass gp3-csi',
        'Error backing up item resource: /persistentvolumeclaims name: /db-data error: /error executing custom action (groupResource=persistentvolumeclaims, namespace=team-a, name=db-data): rpc error: code = Unknown desc = failed to get volumesnapshotclass for storageclass gp3-csi',
      ],
    },
  },
  warnings: {},
};
