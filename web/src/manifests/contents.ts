// Reading a backup's manifest for people (pure, unit-tested): the contents browser's query, kinds
// and items as text, where manifest.json downloads from, and whether a failed read only means the
// manifest is not there (yet).
import { ApiError, apiPath } from '../api/client';
import type { ContentsQuery, ItemIdentity, KindCount, ManifestItem } from '../api/types';

/** Items per page of the contents browser. */
export const CONTENTS_PAGE_SIZE = 100;

export interface ContentsFilter {
  /** A kind's filter value ({@link kindFilterValue}); empty: all kinds. */
  kind: string;
  /** Text in the item's name. */
  q: string;
  /** A label selector. */
  labelSelector: string;
}

export const NO_FILTER: ContentsFilter = { kind: '', q: '', labelSelector: '' };

/**
 * The value the contents endpoint filters a kind on: `resource.group` (or the plural alone for
 * the core group), which names one kind even when two groups have a kind of the same name.
 */
export function kindFilterValue(kind: Pick<KindCount, 'resource' | 'group'>): string {
  return kind.group ? `${kind.resource}.${kind.group}` : kind.resource;
}

/** "Deployment (apps)", "ConfigMap" (core group). */
export function kindTitle(kind: Pick<KindCount, 'kind' | 'group'>): string {
  return kind.group ? `${kind.kind} (${kind.group})` : kind.kind;
}

/** The query of one contents page (empty filters left out). */
export function contentsQuery(filter: ContentsFilter, continueToken?: string | null, limit = CONTENTS_PAGE_SIZE): ContentsQuery {
  const query: ContentsQuery = { limit };
  if (filter.kind) query.kind = filter.kind;
  if (filter.q.trim()) query.q = filter.q.trim();
  if (filter.labelSelector.trim()) query.labelSelector = filter.labelSelector.trim();
  if (continueToken) query.continue = continueToken;
  return query;
}

/** Whether any filter is set. */
export function isFiltered(filter: ContentsFilter): boolean {
  return !!(filter.kind || filter.q.trim() || filter.labelSelector.trim());
}

/** Total items of a manifest's counts. */
export function totalOf(counts: KindCount[]): number {
  return counts.reduce((sum, count) => sum + count.count, 0);
}

/** "app=web, tier=db" (sorted by key), or "" without labels. */
export function labelsText(labels: Record<string, string> | undefined | null): string {
  return Object.entries(labels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}=${value}`)
    .join(', ');
}

/** A stable React key of an item. */
export function itemKey(item: Pick<ManifestItem, 'group' | 'resource' | 'namespace' | 'version' | 'name'>): string {
  return `${kindFilterValue(item)}/${item.namespace ?? ''}/${item.version}/${item.name}`;
}

/** "deployments.apps team-a/web", "namespaces team-a" (cluster-scoped). */
export function identityText(identity: ItemIdentity): string {
  return identity.namespace ? `${identity.groupResource} ${identity.namespace}/${identity.name}` : `${identity.groupResource} ${identity.name}`;
}

/** `…/backups/{name}/manifest?download=true`: the same-origin link the session cookie authorizes. */
export function manifestDownloadPath(namespace: string, name: string): string {
  return apiPath(['namespaces', namespace, 'backups', name, 'manifest'], { download: true });
}

/**
 * Whether a manifest read failed only because NAC holds no manifest of the backup (yet): 404, or
 * 202 (the backup completed and its manifest is being built; ask again after `Retry-After`).
 */
export function manifestMissing(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 202);
}
