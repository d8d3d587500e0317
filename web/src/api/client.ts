// The console's only way to the gateway: same-origin fetches of the public REST API, carrying
// the session cookie and, on every mutating call, the session's CSRF token. Calls name a path of
// openapi/openapi.json (`'/api/v1/namespaces/{namespace}/backups'`) with its parameters, and
// their answers have the document's types (schema.d.ts). Errors become `ApiError` with the
// server's problem+json.
import type { paths } from './schema';
import { isProblemDetails, type ProblemDetails, type SessionInfo } from './types';

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

// What the document says of one operation, read from the generated `paths`.

type Method = 'get' | 'post' | 'patch' | 'delete';
type SuccessStatus = 200 | 201 | 202 | 203 | 204;
type Responses<O> = O extends { responses: infer R } ? R : never;
type Successes<O> = Responses<O>[Extract<keyof Responses<O>, SuccessStatus>];
/** What a 2xx answer holds in `media`; `undefined` for one without content (204). A 2xx
 *  problem (202 while a manifest is being built) is left out: it is thrown. */
type ContentOf<R, Media extends string> = R extends { content: infer C } ? (Media extends keyof C ? C[Media] : never) : undefined;
type Answer<O, Media extends string> = Successes<O> extends infer R ? (R extends unknown ? ContentOf<R, Media> : never) : never;
type JsonAnswer<O> = Answer<O, 'application/json'>;
type TextAnswer<O> = Answer<O, 'text/plain'>;
type Operation<P extends keyof paths, M extends Method> = paths[P][M];

/** The paths whose `method` answers JSON (or nothing). */
export type JsonPath<M extends Method> = { [P in keyof paths]: [JsonAnswer<paths[P][M]>] extends [never] ? never : P }[keyof paths];
/** The paths whose GET answers text/plain. */
export type TextPath = { [P in keyof paths]: [TextAnswer<paths[P]['get']>] extends [never] ? never : P }[keyof paths];

type OperationParameters<O> = O extends { parameters: infer X } ? X : never;
type PathOption<O> = OperationParameters<O> extends { path: infer X } ? { path: X } : { path?: undefined };
type QueryOption<O> = OperationParameters<O> extends { query: infer Q } ? { query: Q } : OperationParameters<O> extends { query?: infer Q } ? ([Q] extends [undefined] ? { query?: undefined } : { query?: Q }) : { query?: undefined };
type BodyOption<O> = O extends { requestBody: { content: infer C } } ? { body: C[keyof C] } : { body?: undefined };

/** A call's path parameters, query and body, as the document types them. The
 *  `Idempotency-Key` and `X-CSRF-Token` headers are the client's (see `request`). */
export type CallOptions<O> = PathOption<O> &
  QueryOption<O> &
  BodyOption<O> & {
    signal?: AbortSignal;
    /** Sent as `Idempotency-Key` (creates). */
    idempotencyKey?: string;
  };
/** The options argument, optional when nothing in it is required. */
type Args<O> = object extends CallOptions<O> ? [options?: CallOptions<O>] : [options: CallOptions<O>];

/** What `request` sends: a path template of the document and its parts, untyped. */
interface RequestParts {
  path?: Record<string, string>;
  query?: object;
  body?: unknown;
  signal?: AbortSignal;
  idempotencyKey?: string;
}

/** `/api/v1/namespaces/{namespace}` with each `{parameter}` filled in (encoded). */
export function fillPath(template: string, parameters: Record<string, string> = {}): string {
  return template.replace(/\{([^}]+)\}/g, (_match, key: string) => {
    const value = parameters[key];
    if (value === undefined) throw new Error(`no value for {${key}} in ${template}`);
    return encodeURIComponent(value);
  });
}

/** `?a=1&b=x` of a query, leaving out unset and empty values; arrays repeat their key. */
export function queryString(query: object | undefined): string {
  const params = new URLSearchParams();
  const entries: [string, unknown][] = Object.entries(query ?? {});
  for (const [key, value] of entries) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const one of values) {
      if (typeof one === 'string' ? one !== '' : typeof one === 'number' || typeof one === 'boolean') params.append(key, String(one));
    }
  }
  const search = params.toString();
  return search ? `?${search}` : '';
}

/** Builds `/api/v1/...?query` from parts, encoding each path segment (for links and "copy as"). */
export function apiPath(segments: string[], query?: object): string {
  return '/api/v1/' + segments.map(encodeURIComponent).join('/') + queryString(query);
}

/** Paths of one namespace's resources (for links and "copy as"). */
export function nsPath(namespace: string, ...rest: string[]): string {
  return apiPath(['namespaces', namespace, ...rest]);
}

async function parseProblem(response: Response): Promise<ProblemDetails | null> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json')) return null;
  try {
    const body: unknown = await response.json();
    return isProblemDetails(body) ? body : null;
  } catch {
    return null;
  }
}

/** One call to the gateway; the answer is JSON (parsed), text, or undefined (204). */
async function request(method: string, template: string, parts: RequestParts, accept: 'application/json' | 'text/plain'): Promise<unknown> {
  const headers: Record<string, string> = { Accept: accept };
  if (parts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  if (parts.idempotencyKey) headers['Idempotency-Key'] = parts.idempotencyKey;
  const url = fillPath(template, parts.path) + queryString(parts.query);
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: parts.body === undefined ? undefined : JSON.stringify(parts.body),
      signal: parts.signal,
    });
  } catch (error) {
    if (error instanceof Error && error.name === 'AbortError') throw error;
    throw new ApiError(0, null, 'network');
  }
  // A problem+json answer is an error even with a 2xx status: `202 Accepted` with
  // `Retry-After` says a backup's manifest is still being built.
  if (!response.ok || (response.headers.get('content-type') ?? '').includes('application/problem+json')) {
    const problem = await parseProblem(response);
    if (response.status === 401) sessionEnded();
    throw new ApiError(response.status, problem, problem?.detail ?? response.statusText);
  }
  if (accept === 'text/plain') return response.text();
  if (response.status === 204) return undefined;
  const type = response.headers.get('content-type') ?? '';
  return type.includes('json') ? response.json() : response.text();
}

// The typed calls. Each is an overload over an untyped implementation: the overload is the one
// place an answer gets its type, trusting the gateway to answer as openapi/openapi.json says (the
// Rust side's drift test keeps the document equal to its handlers, `npm run check:api` keeps
// schema.d.ts equal to the document).

function get<P extends JsonPath<'get'>>(path: P, ...[options]: Args<Operation<P, 'get'>>): Promise<JsonAnswer<Operation<P, 'get'>>>;
function get(path: string, options?: RequestParts): Promise<unknown> {
  return request('GET', path, options ?? {}, 'application/json');
}

function text<P extends TextPath>(path: P, ...[options]: Args<Operation<P, 'get'>>): Promise<string>;
function text(path: string, options?: RequestParts): Promise<unknown> {
  return request('GET', path, options ?? {}, 'text/plain');
}

function post<P extends JsonPath<'post'>>(path: P, ...[options]: Args<Operation<P, 'post'>>): Promise<JsonAnswer<Operation<P, 'post'>>>;
function post(path: string, options?: RequestParts): Promise<unknown> {
  return request('POST', path, options ?? {}, 'application/json');
}

function patch<P extends JsonPath<'patch'>>(path: P, ...[options]: Args<Operation<P, 'patch'>>): Promise<JsonAnswer<Operation<P, 'patch'>>>;
function patch(path: string, options?: RequestParts): Promise<unknown> {
  return request('PATCH', path, options ?? {}, 'application/json');
}

function del<P extends JsonPath<'delete'>>(path: P, ...[options]: Args<Operation<P, 'delete'>>): Promise<JsonAnswer<Operation<P, 'delete'>>>;
function del(path: string, options?: RequestParts): Promise<unknown> {
  return request('DELETE', path, options ?? {}, 'application/json');
}

/**
 * Calls by path template: `api.get('/api/v1/namespaces/{namespace}/queue', { path: { namespace } })`;
 * `text` reads a text/plain answer (logs and the other artifacts of `…/logs`).
 */
export const api = { get, text, post, patch, del };

/** Session calls (`/api/v1/session`). */
export const session = {
  current: (): Promise<SessionInfo> => api.get('/api/v1/session'),
  signIn: (token: string): Promise<SessionInfo> => api.post('/api/v1/session', { body: { token } }),
  signOut: (): Promise<void> => api.del('/api/v1/session'),
  config: () => api.get('/api/v1/session/config'),
};
