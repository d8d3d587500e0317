// What I may do in each namespace, as the picker shows it, and filtering the namespace list
// (pure; unit-tested in namespaces.test.ts).
import type { NamespaceAccess } from '../api/types';
import { may } from '../namespaces';

export type CapabilityKey = 'view' | 'backup' | 'restore' | 'schedule' | 'locations' | 'download';

export interface Capability {
  key: CapabilityKey;
  allowed: boolean;
}

/** The picker's capabilities of one namespace, in a fixed order. */
export function capabilities(access: NamespaceAccess): Capability[] {
  return [
    { key: 'view', allowed: may(access, 'backups', 'list') || may(access, 'backups', 'get') },
    { key: 'backup', allowed: may(access, 'backups', 'create') },
    { key: 'restore', allowed: may(access, 'restores', 'create') },
    { key: 'schedule', allowed: may(access, 'schedules', 'create') },
    { key: 'locations', allowed: may(access, 'storage-locations', 'create') },
    { key: 'download', allowed: !!access.canDownload },
  ];
}

/** Whether I may only look (no create of anything). */
export function isReadOnly(access: NamespaceAccess): boolean {
  return !capabilities(access).some((capability) => capability.key !== 'view' && capability.key !== 'download' && capability.allowed);
}

/** Namespaces whose name contains `query` (case-insensitive), sorted by name. */
export function filterNamespaces(namespaces: readonly NamespaceAccess[], query: string): NamespaceAccess[] {
  const needle = query.trim().toLowerCase();
  return namespaces.filter((access) => access.name.toLowerCase().includes(needle)).sort((a, b) => a.name.localeCompare(b.name));
}

/** Show the filter box from this many namespaces on. */
export const FILTER_FROM = 7;
