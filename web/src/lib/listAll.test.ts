// Tests of reading every page of a list.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeGateway } from '../testing/gateway';
import { listAll } from './listAll';

afterEach(() => vi.unstubAllGlobals());

describe('listAll', () => {
  it('follows continue tokens and merges approvals', async () => {
    const { calls } = fakeGateway({
      'GET /api/v1/namespaces/team-a/storage-locations': ({ query }) =>
        query.get('continue')
          ? { body: { apiVersion: 'v1', kind: 'L', metadata: {}, items: [{ metadata: { name: 'b' }, spec: { backupStorageLocationSpec: {} } }], approvals: { b: 'Approved' } } }
          : { body: { apiVersion: 'v1', kind: 'L', metadata: { continue: 'tok 1' }, items: [{ metadata: { name: 'a' }, spec: { backupStorageLocationSpec: {} } }], approvals: { a: 'Pending' } } },
    });
    const all = await listAll('team-a', 'storage-locations');
    expect(all.items.map((item) => item.metadata.name)).toEqual(['a', 'b']);
    expect(all.approvals).toEqual({ a: 'Pending', b: 'Approved' });
    expect(calls.map((call) => call.url)).toEqual([
      '/api/v1/namespaces/team-a/storage-locations?limit=500',
      '/api/v1/namespaces/team-a/storage-locations?limit=500&continue=tok+1',
    ]);
  });

  it('refuses an item that is not a storage location', async () => {
    fakeGateway({ 'GET /api/v1/namespaces/team-a/storage-locations': { body: { apiVersion: 'v1', kind: 'L', metadata: {}, items: [{ metadata: {} }] } } });
    await expect(listAll('team-a', 'storage-locations')).rejects.toThrow('storage-locations object without metadata.name');
  });

  it('copes with lists without approvals', async () => {
    fakeGateway({ 'GET /api/v1/namespaces/team-a/restores': { body: { apiVersion: 'v1', kind: 'L', metadata: {}, items: [] } } });
    expect(await listAll('team-a', 'restores')).toEqual({ items: [], approvals: {} });
  });
});
