// Gateway answers about backup manifests, recorded from `nac demo` (team-a, user alice: backups
// b1 of everything and b2 of configmaps, secrets, deployments and services), plus an owner graph
// with links (the demo's objects own nothing). Only tests import this.
import type { BackupDiff, BackupDryRun, ContentsPage, ManifestItem, OwnerGraph, RestorePreview, SharedStorage } from '../api/types';

const item = (group: string, kind: string, resource: string, name: string, extra: Partial<ManifestItem> = {}): ManifestItem => ({
  group,
  version: 'v1',
  kind,
  resource,
  namespace: 'team-a',
  name,
  ...extra,
});

export const WEB_CONFIG = item('', 'ConfigMap', 'configmaps', 'web-config', { labels: { app: 'web' }, uid: '376bf47e-bb24-4728-9242-c02fd3c7949d' });
export const WEB_DEPLOYMENT = item('apps', 'Deployment', 'deployments', 'web', { labels: { app: 'web' }, uid: '4c76b187-c915-4db7-adf9-234bde551c27' });
export const WEB_SECRET = item('', 'Secret', 'secrets', 'web-credentials', { labels: { app: 'web' }, uid: '363357d6-263a-429c-9480-79e23fd9f5db' });
export const SA_CI_BOT = item('', 'ServiceAccount', 'serviceaccounts', 'ci-bot', { uid: '84db7238-0c90-475d-ac5e-f36f4989c151' });
export const SA_DEFAULT = item('', 'ServiceAccount', 'serviceaccounts', 'default', { uid: '819be520-0f04-486c-857a-c26c879511c8' });
export const NAMESPACE_ITEM = item('', 'Namespace', 'namespaces', 'team-a', { namespace: undefined, labels: { 'kubernetes.io/metadata.name': 'team-a' }, uid: 'b4e43949-8d78-405a-a8e8-4cfbc4c11c75' });

const B1 = { namespace: 'team-a', name: 'b1', veleroBackup: 'team-a-b1-a21ac18b-3f71-4397-b0fc-21258c4b66e8', completedAt: '2026-11-23T12:11:05Z' };
const B2 = { namespace: 'team-a', name: 'b2', veleroBackup: 'team-a-b2-da879bd3-ee95-462f-afe0-41dee987d5cf', completedAt: '2026-11-23T12:11:22Z' };

const B1_COUNTS = [
  { group: '', kind: 'ConfigMap', resource: 'configmaps', count: 1 },
  { group: '', kind: 'Namespace', resource: 'namespaces', count: 1 },
  { group: '', kind: 'Secret', resource: 'secrets', count: 1 },
  { group: '', kind: 'ServiceAccount', resource: 'serviceaccounts', count: 2 },
  { group: 'apps', kind: 'Deployment', resource: 'deployments', count: 1 },
];

/** `GET …/backups/b1/contents` (no filter, page size 100). */
export const B1_CONTENTS: ContentsPage = {
  backup: B1,
  counts: B1_COUNTS,
  total: 6,
  matched: 6,
  items: [WEB_CONFIG, WEB_DEPLOYMENT, NAMESPACE_ITEM, WEB_SECRET, SA_CI_BOT, SA_DEFAULT],
};

/** `GET …/backups/b1/contents?kind=serviceaccounts&limit=1`: the first of two pages. */
export const B1_SERVICE_ACCOUNTS_PAGE_1: ContentsPage = { ...B1_CONTENTS, matched: 2, items: [SA_CI_BOT], continue: 'c2VydmljZWFjY291bnRz' };
export const B1_SERVICE_ACCOUNTS_PAGE_2: ContentsPage = { ...B1_CONTENTS, matched: 2, items: [SA_DEFAULT] };

/** An owner graph with links: a Deployment owns a ReplicaSet owning two Pods; a ConfigMap stands alone. */
export const OWNED_GRAPH: OwnerGraph = {
  nodes: [
    'configmaps/team-a/v1/web-config',
    'deployments.apps/team-a/v1/web',
    'pods/team-a/v1/web-7d4b9-a',
    'pods/team-a/v1/web-7d4b9-b',
    'replicasets.apps/team-a/v1/web-7d4b9',
  ],
  edges: [
    { owner: 'deployments.apps/team-a/v1/web', dependent: 'replicasets.apps/team-a/v1/web-7d4b9' },
    { owner: 'replicasets.apps/team-a/v1/web-7d4b9', dependent: 'pods/team-a/v1/web-7d4b9-a' },
    { owner: 'replicasets.apps/team-a/v1/web-7d4b9', dependent: 'pods/team-a/v1/web-7d4b9-b' },
  ],
  missingOwners: [{ dependent: 'pods/team-a/v1/web-7d4b9-b', ownerUid: '9f0c2d11-0000-4000-8000-000000000001' }],
};

/** `GET …/backups/b2/diff?against=b1`, with one changed item added to the recording. */
export const B2_AGAINST_B1: BackupDiff = {
  from: B1,
  to: B2,
  added: [item('', 'Service', 'services', 'web', { labels: { app: 'web' } })],
  removed: [NAMESPACE_ITEM, SA_CI_BOT, SA_DEFAULT],
  changed: [
    {
      identity: { groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' },
      fields: ['labels'],
      before: WEB_CONFIG,
      after: { ...WEB_CONFIG, labels: { app: 'web', tier: 'front' } },
    },
  ],
  unchanged: 2,
};

/** `POST …/backups?dryRun=true` of configmaps, secrets and deployments, with an overlap and an unreadable list. */
export const DRY_RUN: BackupDryRun = {
  apiVersion: 'oadp.openshift.io/v1alpha1',
  kind: 'BackupDryRun',
  backup: { apiVersion: 'oadp.openshift.io/v1alpha1', kind: 'NonAdminBackup', metadata: { name: 'nightly-1', namespace: 'team-a' }, spec: { backupSpec: { includedResources: ['configmaps', 'secrets', 'deployments'] } } },
  counts: [
    { group: '', kind: 'ConfigMap', resource: 'configmaps', count: 1 },
    { group: '', kind: 'Secret', resource: 'secrets', count: 1 },
    { group: 'apps', kind: 'Deployment', resource: 'deployments', count: 1 },
  ],
  totalItems: 3,
  items: [WEB_CONFIG, WEB_DEPLOYMENT, WEB_SECRET],
  unreadable: [{ group: '', version: 'v1', kind: 'Secret', resource: 'secrets', namespace: 'team-a', reason: 'Forbidden', message: 'secrets is forbidden: User "alice" cannot list resource "secrets"' }],
  overlaps: [
    {
      operation: 'backup b1',
      total: 2,
      items: [
        { groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' },
        { groupResource: 'deployments.apps', namespace: 'team-a', name: 'web' },
      ],
      truncated: false,
    },
  ],
};

/** `POST …/restores?dryRun=true` from b1 (configmaps), with a created and an undetermined item added. */
export const RESTORE_PREVIEW: RestorePreview = {
  apiVersion: 'oadp.openshift.io/v1alpha1',
  kind: 'RestorePreview',
  restore: { apiVersion: 'oadp.openshift.io/v1alpha1', kind: 'NonAdminRestore', metadata: { name: 'undo-1', namespace: 'team-a' } },
  backupName: 'ui-hist-1',
  entries: [
    { group: '', version: 'v1', kind: 'Namespace', resource: 'namespaces', name: 'team-a', action: 'Skip', reason: 'NamespaceExists', message: 'Namespace team-a already exists' },
    {
      group: '',
      version: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'team-a',
      targetNamespace: 'team-a',
      name: 'web-config',
      action: 'Skip',
      reason: 'Identical',
      message: 'Restore of ConfigMap, web-config skipped: it already exists in the cluster and is the same as the backed up version',
    },
    { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'team-a', targetNamespace: 'team-a', name: 'web-extra', action: 'Create', reason: 'Absent', message: 'Restoring ConfigMap web-extra' },
    {
      group: '',
      version: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'team-a',
      targetNamespace: 'team-a',
      name: 'web-hidden',
      action: 'Undetermined',
      reason: 'LiveStateUnknown',
      message: 'configmaps could not be read: whether web-hidden exists is not known',
      warning: true,
    },
  ],
  counts: { total: 3, create: 1, update: 0, skip: 1, fail: 0, undetermined: 1, excluded: 0, warnings: 1, namespacesCreated: 0 },
  overlaps: [{ operation: 'backup nightly', total: 1, items: [{ groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' }], truncated: false }],
};

/** `GET …/sharedstorage` of a namespace deleted 1 day before 2026-11-23T12:00:00Z. */
export const RETAINED_STORAGE: SharedStorage = {
  configured: true,
  state: 'Retained',
  message: 'the namespace was deleted; its backups are kept until 2026-11-30T12:00:00Z',
  purgeAfter: '2026-11-30T12:00:00Z',
};

export const READY_STORAGE: SharedStorage = {
  configured: true,
  state: 'Ready',
  message: 'backups without a storage location are stored in the namespace\u2019s own prefix of the shared backup pool',
};
