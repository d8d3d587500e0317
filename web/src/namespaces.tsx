// The namespaces I may use and what I may do in each (from `/api/v1/namespaces`), shared by the
// header's picker, the navigation and every page that enables or explains actions.
import { createContext, useContext, type ReactNode } from 'react';
import { api } from './api/client';
import type { NamespaceAccess, NamespaceList } from './api/types';
import { useLoad, type Loaded } from './hooks';

const NamespacesContext = createContext<Loaded<NamespaceAccess[]> | null>(null);

/** Most pages followed (the gateway checks a bounded number of namespaces per request). */
export const MAX_NAMESPACE_PAGES = 200;

/** Every namespace I may use: follows `continue` from page to page (a page may be empty). */
export async function loadAllNamespaces(
  page: (continueToken: string | undefined) => Promise<NamespaceList>,
): Promise<NamespaceAccess[]> {
  const items: NamespaceAccess[] = [];
  let token: string | undefined;
  for (let count = 0; count < MAX_NAMESPACE_PAGES; count += 1) {
    const answer = await page(token);
    items.push(...answer.items);
    token = answer.continue ?? undefined;
    if (!token) break;
  }
  return items;
}

export function NamespacesProvider({ user, children }: { user: string; children: ReactNode }) {
  const loaded = useLoad(
    (signal) =>
      loadAllNamespaces((token) =>
        api.get('/api/v1/namespaces', { query: { continue: token }, signal }),
      ),
    user,
  );
  return <NamespacesContext.Provider value={loaded}>{children}</NamespacesContext.Provider>;
}

export function useNamespaces(): Loaded<NamespaceAccess[]> {
  const value = useContext(NamespacesContext);
  if (!value) throw new Error('useNamespaces outside NamespacesProvider');
  return value;
}

/** Whether `access` allows `verb` on `resource` (`backups`, `restores`, …) (pure). */
export function may(access: NamespaceAccess | undefined, resource: string, verb: string): boolean {
  return !!access?.permissions?.[resource]?.includes(verb);
}

/** The access entry of one namespace, if I may use it. */
export function useNamespaceAccess(namespace: string | undefined): NamespaceAccess | undefined {
  const { data } = useNamespaces();
  return data?.find((entry) => entry.name === namespace);
}
