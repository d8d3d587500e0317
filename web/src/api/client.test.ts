import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, api } from './client';

function answer(status: number, body: unknown, type: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': type, ...headers } });
}

describe('request', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('turns a 202 problem (a manifest being built) into an ApiError, not data', async () => {
    const problem = { type: 'https://nac.openshift.io/problems/manifest-pending', title: 'Manifest being built', status: 202, detail: 'its manifest is being built; retry in 2 s', code: 'manifest-pending' };
    vi.stubGlobal('fetch', vi.fn(async () => answer(202, problem, 'application/problem+json', { 'Retry-After': '2' })));
    const failure = await api.get('/api/v1/namespaces/team-a/backups/b1/manifest').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).status).toBe(202);
    expect((failure as ApiError).problem?.code).toBe('manifest-pending');
  });

  it('answers the data of a plain 2xx', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => answer(202, { metadata: { name: 'b1' } }, 'application/json')));
    await expect(api.get('/api/v1/namespaces/team-a/backups')).resolves.toEqual({ metadata: { name: 'b1' } });
  });
});
