import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeGateway } from '../testing/gateway';
import { ApiError, api, apiPath, fillPath, queryString, setCsrfToken } from './client';

function answer(status: number, body: unknown, type: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': type, ...headers } });
}

describe('request', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    setCsrfToken(null);
  });

  it('turns a 202 problem (a manifest being built) into an ApiError, not data', async () => {
    const problem = { type: 'https://nac.openshift.io/problems/manifest-pending', title: 'Manifest being built', status: 202, detail: 'its manifest is being built; retry in 2 s', code: 'manifest-pending' };
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(answer(202, problem, 'application/problem+json', { 'Retry-After': '2' }))));
    const failure: unknown = await api.get('/api/v1/namespaces/{namespace}/backups/{name}/manifest', { path: { namespace: 'team-a', name: 'b1' } }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure instanceof ApiError && failure.status).toBe(202);
    expect(failure instanceof ApiError && failure.problem?.code).toBe('manifest-pending');
  });

  it('answers the data of a plain 2xx', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(answer(202, { metadata: { name: 'b1' } }, 'application/json'))));
    await expect(api.get('/api/v1/namespaces/{namespace}/backups/{name}', { path: { namespace: 'team-a', name: 'b1' } })).resolves.toEqual({ metadata: { name: 'b1' } });
  });

  it('keeps an error body that is not a problem out of ApiError.problem', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(answer(500, { message: 'oops' }, 'application/json'))));
    const failure: unknown = await api.get('/api/v1/queue').catch((error: unknown) => error);
    expect(failure instanceof ApiError && failure.status).toBe(500);
    expect(failure instanceof ApiError && failure.problem).toBeNull();
  });

  it('fills the path, sends the query, body, CSRF token and idempotency key', async () => {
    const { calls } = fakeGateway({ 'POST /api/v1/namespaces/team%20a/restores': { status: 201, body: { metadata: { name: 'r1' }, spec: { restoreSpec: {} } } } });
    setCsrfToken('csrf-1');
    await api.post('/api/v1/namespaces/{namespace}/restores', { path: { namespace: 'team a' }, query: { dryRun: false }, body: { spec: { restoreSpec: { backupName: 'b1' } } }, idempotencyKey: 'key-1' });
    expect(calls[0].url).toBe('/api/v1/namespaces/team%20a/restores?dryRun=false');
    expect(calls[0].headers).toMatchObject({ 'X-CSRF-Token': 'csrf-1', 'Idempotency-Key': 'key-1', 'Content-Type': 'application/json' });
    expect(calls[0].body).toEqual({ spec: { restoreSpec: { backupName: 'b1' } } });
  });

  it('reads a text/plain artifact as text, whatever its content type', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(answer(200, { errors: {} }, 'application/json'))));
    await expect(api.text('/api/v1/namespaces/{namespace}/backups/{name}/logs', { path: { namespace: 'team-a', name: 'b1' }, query: { artifact: 'results' } })).resolves.toBe('{"errors":{}}');
  });
});

describe('paths and queries', () => {
  it('encodes path parameters and refuses a missing one', () => {
    expect(fillPath('/api/v1/namespaces/{namespace}/backups/{name}', { namespace: 'team-a', name: 'a/b' })).toBe('/api/v1/namespaces/team-a/backups/a%2Fb');
    expect(() => fillPath('/api/v1/namespaces/{namespace}', {})).toThrow('no value for {namespace}');
  });

  it('leaves out unset and empty values and repeats arrays', () => {
    expect(queryString({ a: 1, b: '', c: undefined, d: null, e: false, kind: ['backup', 'restore'] })).toBe('?a=1&e=false&kind=backup&kind=restore');
    expect(queryString({})).toBe('');
    expect(apiPath(['namespaces', 'team a', 'backups'], { limit: 5 })).toBe('/api/v1/namespaces/team%20a/backups?limit=5');
  });
});
