// The signed-in session: who I am, my groups, when the session ends, and sign-in/sign-out.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { onUnauthenticated, session as sessionApi, setCsrfToken } from './api/client';
import type { SessionInfo } from './api/types';

interface SessionState {
  /** undefined while checking, null when signed out. */
  session: SessionInfo | null | undefined;
  signIn: (token: string) => Promise<void>;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const accept = useCallback((info: SessionInfo | null) => {
    setCsrfToken(info?.csrfToken ?? null);
    setSession(info);
  }, []);
  useEffect(() => {
    sessionApi
      .current()
      .then(accept)
      .catch(() => accept(null));
    return onUnauthenticated(() => accept(null));
  }, [accept]);
  // The session expires on its own: drop it when its time comes.
  useEffect(() => {
    if (!session) return;
    const left = Date.parse(session.expiresAt) - Date.now();
    if (Number.isNaN(left)) return;
    const timer = setTimeout(() => accept(null), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [session, accept]);
  const signIn = useCallback(async (token: string) => accept(await sessionApi.signIn(token)), [accept]);
  const signOut = useCallback(async () => {
    try {
      await sessionApi.signOut();
    } finally {
      accept(null);
    }
  }, [accept]);
  const value = useMemo(() => ({ session, signIn, signOut }), [session, signIn, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}
