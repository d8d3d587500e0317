// The namespaces I may use and what I may do in each (from `/api/v1/namespaces`), shared by the
// header's picker, the navigation and every page that enables or explains actions.
import { createContext, useContext, type ReactNode } from 'react';
import { api, apiPath } from './api/client';
import type { NamespaceAccess } from './api/types';
import { useLoad, type Loaded } from './hooks';

const NamespacesContext = createContext<Loaded<NamespaceAccess[]> | null>(null);

export function NamespacesProvider({ user, children }: { user: string; children: ReactNode }) {
  const loaded = useLoad(
    (signal) => api.get<{ items: NamespaceAccess[] }>(apiPath(['namespaces']), { signal }).then((answer) => answer.items ?? []),
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
