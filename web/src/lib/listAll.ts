// Reads every page of a namespace list (following `metadata.continue`), keeping the storage
// locations' `approvals` map of all pages.
import { api, nsPath } from '../api/client';
import type { ObjectList } from '../api/types';

/** Safety stop: at most this many pages (500 objects each) are read. */
export const MAX_PAGES = 20;

export async function listAll<T>(
  namespace: string,
  resource: 'backups' | 'restores' | 'storage-locations' | 'schedules',
  signal?: AbortSignal,
): Promise<{ items: T[]; approvals: Record<string, string> }> {
  const items: T[] = [];
  const approvals: Record<string, string> = {};
  let next: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await api.get<ObjectList<T>>(nsPath(namespace, resource), { query: { limit: 500, continue: next }, signal });
    items.push(...(answer.items ?? []));
    Object.assign(approvals, answer.approvals ?? {});
    next = answer.metadata?.continue || undefined;
    if (!next) break;
  }
  return { items, approvals };
}
