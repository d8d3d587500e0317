// Who the demo's users are in team-a and what its administrator allows, as the demo gateway
// answers (GET /namespaces, GET /namespaces/team-a/policy); only tests import this.
import type { NamespaceAccess, PolicyView } from '../api/types';

/** alice: everything in team-a, downloads included. */
export const aliceNamespaces: { items: NamespaceAccess[] } = {
  items: [
    {
      name: 'team-a',
      permissions: {
        backups: ['get', 'list', 'watch', 'create', 'delete'],
        restores: ['get', 'list', 'watch', 'create', 'delete'],
        schedules: ['get', 'list', 'watch', 'create', 'delete'],
        'storage-locations': ['get', 'list', 'watch', 'create', 'delete'],
      },
      canDownload: true,
    },
  ],
};

/** ci-bot: may only create and read backups, no downloads. */
export const ciBotNamespaces: { items: NamespaceAccess[] } = {
  items: [{ name: 'team-a', permissions: { backups: ['get', 'list', 'watch', 'create'] }, canDownload: false }],
};

/** Someone who may only read backups and not download. */
export const readOnlyNamespaces: { items: NamespaceAccess[] } = {
  items: [{ name: 'team-a', permissions: { backups: ['get', 'list', 'watch'] }, canDownload: false }],
};

/** The route answering "who am I allowed to be" with alice's namespaces. */
export const SIGNED_IN_AS_ALICE = { 'GET /api/v1/namespaces': { body: aliceNamespaces } };

/** team-a's policy without rules (only the restrictions that always apply). */
export const openPolicy: PolicyView = {
  namespace: 'team-a',
  backup: { enforced: {}, defaults: {}, maximum: {}, allowed: {} },
  restore: { enforced: {}, defaults: {}, maximum: {}, allowed: {} },
  storageLocation: { enforced: {}, defaults: {}, maximum: {}, allowed: {} },
  requireApprovalForStorageLocations: false,
  restrictions: [
    'backups and restores stay in namespace team-a (includedNamespaces, excludedNamespaces and namespaceMapping are restricted)',
    'cluster-scoped resources are never backed up or restored',
    'volume snapshot locations are chosen by the administrator',
    "NAC's and Velero's own kinds and labels are reserved",
  ],
};
