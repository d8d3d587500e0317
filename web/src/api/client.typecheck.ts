// Compile-time checks of the typed client (`tsc -b` runs them; nothing imports this file): calls
// that do not match openapi/openapi.json fail to type-check, matching ones get the document's types.
import { api } from './client';
import type { components } from './schema';

export async function typedCalls(signal: AbortSignal): Promise<unknown[]> {
  // @ts-expect-error a path parameter is missing
  await api.get('/api/v1/namespaces/{namespace}/queue', { signal });
  // @ts-expect-error a path parameter the path does not have
  await api.get('/api/v1/namespaces/{namespace}/queue', { path: { ns: 'team-a' } });
  // @ts-expect-error not a path of the document
  await api.get('/api/v1/nope');
  // @ts-expect-error an artifact the operation does not have
  await api.get('/api/v1/namespaces/{namespace}/backups/{name}/logs', { path: { namespace: 'team-a', name: 'b1' }, query: { artifact: 'tarball' } });
  // @ts-expect-error a query parameter the operation does not have
  await api.get('/api/v1/queue', { query: { limit: 5 } });
  // @ts-expect-error a body of another shape
  await api.post('/api/v1/session', { body: { user: 'alice' } });
  const queue = await api.get('/api/v1/namespaces/{namespace}/queue', { path: { namespace: 'team-a' }, signal });
  const names: string[] = queue.items.map((item) => item.name);
  const signedOut: undefined = await api.del('/api/v1/session');
  const log: string = await api.text('/api/v1/namespaces/{namespace}/restores/{name}/logs', { path: { namespace: 'team-a', name: 'r1' }, query: { artifact: 'log' } });
  // The results and the resource list are JSON: api.get gets the document's type.
  const results = await api.get('/api/v1/namespaces/{namespace}/backups/{name}/logs', { path: { namespace: 'team-a', name: 'b1' }, query: { artifact: 'results' } });
  const documented: components['schemas']['JsonArtifact'] = results;
  return [names, signedOut, log, documented];
}
