// Reads a namespace's list of one tenant resource: one page, or every page (following
// `metadata.continue`), keeping the storage locations' `approvals` map of all pages. Each item
// is still checked as it comes in (`tenantObject`): the document does not require metadata.
import { api } from '../api/client';
import { stringValues, tenantObject, type ListQuery, type TenantList, type TenantResource } from '../api/types';

/** Safety stop: at most this many pages (500 objects each) are read. */
export const MAX_PAGES = 20;

const LIST_PATHS = {
  backups: '/api/v1/namespaces/{namespace}/backups',
  restores: '/api/v1/namespaces/{namespace}/restores',
  'storage-locations': '/api/v1/namespaces/{namespace}/storage-locations',
  schedules: '/api/v1/namespaces/{namespace}/schedules',
} as const;

/** One page of a list. */
export async function listPage<R extends TenantResource>(namespace: string, resource: R, query: ListQuery, signal?: AbortSignal): Promise<TenantList<R>> {
  const path: (typeof LIST_PATHS)[TenantResource] = LIST_PATHS[resource];
  const answer = await api.get(path, { path: { namespace }, query, signal });
  const token = answer.metadata.continue;
  return {
    items: answer.items.map((item) => tenantObject(resource, item)),
    continue: typeof token === 'string' && token ? token : undefined,
    approvals: stringValues('approvals' in answer ? answer.approvals : undefined),
  };
}

/** Every page of a list (at most {@link MAX_PAGES}). */
export async function listAll<R extends TenantResource>(namespace: string, resource: R, signal?: AbortSignal): Promise<Omit<TenantList<R>, 'continue'>> {
  const items: TenantList<R>['items'] = [];
  const approvals: Record<string, string> = {};
  let next: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await listPage(namespace, resource, { limit: 500, continue: next }, signal);
    items.push(...answer.items);
    Object.assign(approvals, answer.approvals);
    next = answer.continue;
    if (!next) break;
  }
  return { items, approvals };
}
