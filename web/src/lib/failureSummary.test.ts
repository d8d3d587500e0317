// Tests of the failure summary: parsing and grouping Velero's result messages, when a summary is due, scope words.
import { describe, expect, it } from 'vitest';
import type { Description } from '../api/types';
import { t } from '../strings';
import { needsFailureSummary, normalizeCause, parseResultMessage, scopeText, summarizeFailure, type VeleroResults } from './failureSummary';

// Messages as Velero 1.14 writes them into `velero backup logs`' results file
// (log_counter_hook: "MSG resource: /R name: /N error: /E"), and older plugin wording.
const CSI_ERROR = (pvc: string) =>
  `Error backing up item resource: /persistentvolumeclaims name: /${pvc} error: /error executing custom action (groupResource=persistentvolumeclaims, namespace=team-a, name=${pvc}): rpc error: code = Unknown desc = failed to get volumesnapshotclass for storageclass gp3-csi: failed to get volumesnapshotclass for provisioner ebs.csi.aws.com, ensure that the desired volumesnapshot class has the velero.io/csi-volumesnapshot-class label`;
const KOPIA_ERROR = (pod: string, uid: string) =>
  `Error backing up item resource: /pods name: /${pod} error: /pod volume backup failed: data path backup failed: Failed to run kopia backup: unable to get local block device entry: resolveSymlink: lstat /host_pods/${uid}/volumes/kubernetes.io~csi/pvc-data/mount: no such file or directory`;

const RESULTS: VeleroResults = {
  errors: {
    namespaces: {
      'team-a': [
        CSI_ERROR('web-data'),
        KOPIA_ERROR('web-7d9c5b6f4-x2x9q', '3f1c2b7a-9d4e-4c1b-8a55-0c2f4d1e9b10'),
        CSI_ERROR('db-data'),
        KOPIA_ERROR('db-0', '9a8b7c6d-1e2f-4a3b-8c9d-0e1f2a3b4c5d'),
        CSI_ERROR('cache-data'),
      ],
    },
    velero: [
      'Error uploading log file error: /rpc error: code = Unknown desc = error putting object backups/team-a-nightly/team-a-nightly-logs.gz: AccessDenied: Access Denied',
    ],
  },
  warnings: {
    namespaces: {
      'team-a': [
        'Skipping pod volume backup of volume cache resource: /pods name: /web-7d9c5b6f4-x2x9q',
        'Skipping pod volume backup of volume cache resource: /pods name: /web-7d9c5b6f4-q8z1m',
      ],
    },
    cluster: ['Skipping the cluster-scoped resource namespaces: backup is scoped to namespace team-a'],
  },
};

const PARTIAL: Pick<Description, 'veleroPhase' | 'requestPhase' | 'conditions' | 'failureReason' | 'validationErrors' | 'errors' | 'warnings'> = {
  requestPhase: 'Created',
  veleroPhase: 'PartiallyFailed',
  conditions: [
    { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted' },
    { type: 'Queued', status: 'True', reason: 'BackupScheduled', message: 'Created Velero Backup object' },
  ],
  failureReason: null,
  validationErrors: [],
  errors: 6,
  warnings: 3,
};

describe('parseResultMessage', () => {
  it('reads Velero 1.11+ messages with resource, name and a plugin error inside', () => {
    expect(parseResultMessage(CSI_ERROR('web-data'))).toEqual({
      context: 'Error backing up item',
      resource: 'persistentvolumeclaims',
      name: 'web-data',
      namespace: 'team-a',
      cause:
        'failed to get volumesnapshotclass for storageclass gp3-csi: failed to get volumesnapshotclass for provisioner ebs.csi.aws.com, ensure that the desired volumesnapshot class has the velero.io/csi-volumesnapshot-class label',
    });
  });
  it('reads the older plugin form and restore warnings', () => {
    expect(parseResultMessage('error executing custom action (groupResource=pods, namespace=team-a, name=web-1): timed out waiting for hook')).toMatchObject({
      resource: 'pods',
      namespace: 'team-a',
      name: 'web-1',
      cause: 'timed out waiting for hook',
    });
    expect(parseResultMessage('could not restore, ConfigMap "kube-root-ca.crt" already exists. Warning: the in-cluster version is different than the backed-up version.')).toEqual({
      resource: 'ConfigMap',
      name: 'kube-root-ca.crt',
      cause: 'could not restore, ConfigMap "…" already exists. Warning: the in-cluster version is different than the backed-up version',
    });
  });
  it('keeps an unstructured message as its own cause', () => {
    expect(parseResultMessage('simulated error backing up persistentvolumeclaims web-data')).toEqual({ cause: 'simulated error backing up persistentvolumeclaims web-data' });
  });
  it('normalizes names, quoted strings and uids away', () => {
    expect(normalizeCause('persistentvolumeclaims "web-data" not found for web-data.', 'web-data')).toBe('persistentvolumeclaims "…" not found for …');
    expect(normalizeCause('lstat /host_pods/3f1c2b7a-9d4e-4c1b-8a55-0c2f4d1e9b10/x')).toBe('lstat /host_pods/…/x');
  });
});

describe('summarizeFailure', () => {
  it('groups a partially failed backup by namespace, resource kind and cause, largest first', () => {
    const summary = summarizeFailure(RESULTS, PARTIAL);
    expect(summary.partiallyFailed).toBe(true);
    expect(summary.failed).toBe(false);
    expect(summary.errorCount).toBe(6);
    expect(summary.warningCount).toBe(3);
    expect(summary.errorGroups.map((g) => [g.scope, g.namespace, g.resource, g.count, g.objects])).toEqual([
      ['namespace', 'team-a', 'persistentvolumeclaims', 3, ['web-data', 'db-data', 'cache-data']],
      ['namespace', 'team-a', 'pods', 2, ['web-7d9c5b6f4-x2x9q', 'db-0']],
      ['velero', undefined, undefined, 1, []],
    ]);
    expect(summary.errorGroups[1].cause).toBe(
      'pod volume backup failed: data path backup failed: Failed to run kopia backup: unable to get local block device entry: resolveSymlink: lstat /host_pods/…/volumes/kubernetes.io~csi/pvc-data/mount: no such file or directory',
    );
    expect(summary.errorGroups[2]).toMatchObject({ context: 'Error uploading log file', cause: 'error putting object backups/team-a-nightly/team-a-nightly-logs.gz: AccessDenied: Access Denied' });
    expect(summary.errorGroups[0].examples).toHaveLength(3);
    expect(summary.warningGroups[0].context).toBeUndefined();
    expect(summary.warningGroups.map((g) => [g.scope, g.resource, g.count, g.cause])).toEqual([
      ['namespace', 'pods', 2, 'Skipping pod volume backup of volume cache'],
      ['cluster', undefined, 1, 'Skipping the cluster-scoped resource namespaces: backup is scoped to namespace team-a'],
    ]);
  });

  it('puts the failure reason and validation errors first, and falls back to Velero counters without results', () => {
    const summary = summarizeFailure(null, {
      ...PARTIAL,
      veleroPhase: 'FailedValidation',
      failureReason: '',
      validationErrors: ['an existing backup storage location wasn\'t specified at backup creation time and the default "default" wasn\'t found'],
      errors: 1,
      warnings: 0,
    });
    expect(summary).toMatchObject({ failed: true, partiallyFailed: false, hasResults: false, errorCount: 1, warningCount: 0, errorGroups: [] });
    expect(summary.failureReason).toBeUndefined();
    expect(summary.validationErrors).toHaveLength(1);

    const failed = summarizeFailure({ errors: {}, warnings: {} }, { ...PARTIAL, veleroPhase: 'Failed', failureReason: 'found a backup with status "InProgress" during the server starting, mark it as "Failed"' });
    expect(failed.failed).toBe(true);
    expect(failed.failureReason).toContain('mark it as "Failed"');
    expect(failed.errorCount).toBe(0);
  });

  it('reports NAC refusing the request', () => {
    const refused: typeof PARTIAL = {
      ...PARTIAL,
      requestPhase: 'BackingOff',
      veleroPhase: null,
      conditions: [{ type: 'Accepted', status: 'False', reason: 'InvalidBackupSpec', message: 'NonAdminBackup spec.backupSpec.includedNamespaces is restricted' }],
    };
    expect(needsFailureSummary(refused)).toBe(true);
    expect(summarizeFailure(null, refused)).toMatchObject({ failed: true, refusal: 'NonAdminBackup spec.backupSpec.includedNamespaces is restricted' });
  });

  it('is not needed for a running or completed backup', () => {
    expect(needsFailureSummary({ ...PARTIAL, veleroPhase: 'InProgress' })).toBe(false);
    expect(needsFailureSummary({ ...PARTIAL, veleroPhase: 'Completed' })).toBe(false);
    expect(needsFailureSummary(PARTIAL)).toBe(true);
    expect(needsFailureSummary(undefined)).toBe(false);
  });
});

describe('scopeText', () => {
  it('names Velero, the cluster or the namespace in the page\'s words', () => {
    expect(scopeText({ scope: 'velero' }, t.backups.failure)).toBe('Velero');
    expect(scopeText({ scope: 'cluster' }, t.restores.failure)).toBe('cluster-scoped resources');
    expect(scopeText({ scope: 'namespace', namespace: 'team-a' }, t.backups.failure)).toBe('namespace team-a');
  });
});
