// The console's only way to the gateway: same-origin fetches of the public REST API, carrying
// the session cookie and, on every mutating call, the session's CSRF token. Errors become
// `ApiError` with the server's problem+json.
import type { ProblemDetails, SessionInfo } from './types';

/** An answer that was not 2xx (or was a problem), with the server's problem when it sent one. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: ProblemDetails | null;
  constructor(status: number, problem: ProblemDetails | null, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
}

let csrfToken: string | null = null;
const unauthenticatedListeners = new Set<() => void>();

/** The CSRF token sent on mutating calls (set from the session answer). */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called whenever the gateway answers 401: the session ended. */
export function onUnauthenticated(listener: () => void): () => void {
  unauthenticatedListeners.add(listener);
  return () => unauthenticatedListeners.delete(listener);
}

/** Tells every listener the session ended (a 401, or a stream ending `unauthenticated`). */
export function sessionEnded(): void {
  unauthenticatedListeners.forEach((listener) => listener());
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** Answer as text instead of JSON (logs). */
  text?: boolean;
}

/** Builds `/api/v1/...?query` from parts, encoding each path segment. */
export function apiPath(segments: string[], query?: RequestOptions['query']): string {
  const path = '/api/v1/' + segments.map(encodeURIComponent).join('/');
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

async function parseProblem(response: Response): Promise<ProblemDetails | null> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json')) return null;
  try {
    return (await response.json()) as ProblemDetails;
  } catch {
    return null;
  }
}

/** One call to the gateway. `path` is absolute (`/api/v1/...`). */
export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: options.text ? 'text/plain' : 'application/json' };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  let url = path;
  if (options.query) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(options.query)) {
      if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
    }
    const search = params.toString();
    if (search) url += (url.includes('?') ? '&' : '?') + search;
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(0, null, 'network');
  }
  // A problem+json answer is an error even with a 2xx status: `202 Accepted` with
  // `Retry-After` says a backup's manifest is still being built.
  if (!response.ok || (response.headers.get('content-type') ?? '').includes('application/problem+json')) {
    const problem = await parseProblem(response);
    if (response.status === 401) sessionEnded();
    throw new ApiError(response.status, problem, problem?.detail ?? response.statusText);
  }
  if (options.text) return (await response.text()) as T;
  if (response.status === 204) return undefined as T;
  const type = response.headers.get('content-type') ?? '';
  return (type.includes('json') ? await response.json() : await response.text()) as T;
}

export const api = {
  get: <T>(path: string, options?: RequestOptions) => request<T>('GET', path, options),
  post: <T>(path: string, body: unknown, options?: RequestOptions) => request<T>('POST', path, { ...options, body }),
  patch: <T>(path: string, body: unknown, options?: RequestOptions) => request<T>('PATCH', path, { ...options, body }),
  del: <T>(path: string, options?: RequestOptions) => request<T>('DELETE', path, options),
};

/** Session calls (`/api/v1/session`). */
export const session = {
  current: () => api.get<SessionInfo>('/api/v1/session'),
  signIn: (token: string) => api.post<SessionInfo>('/api/v1/session', { token }),
  signOut: () => api.del<void>('/api/v1/session'),
  config: () => api.get<{ oauth: boolean }>('/api/v1/session/config'),
};

/** Paths of one namespace's resources. */
export function nsPath(namespace: string, ...rest: string[]): string {
  return apiPath(['namespaces', namespace, ...rest]);
}
