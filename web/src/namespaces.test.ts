// Tests of following "my namespaces" page by page.
import { describe, expect, it } from 'vitest';
import type { NamespaceAccess } from './api/types';
import { loadAllNamespaces, MAX_NAMESPACE_PAGES, type NamespacePage } from './namespaces';

const access = (name: string): NamespaceAccess => ({ name, permissions: { backups: ['list'] }, canDownload: false });

describe('loadAllNamespaces', () => {
  it('follows continue tokens across pages, empty ones included', async () => {
    const pages: Record<string, NamespacePage> = {
      first: { items: [access('team-a')], continue: 'c1' },
      c1: { items: [], continue: 'c2' },
      c2: { items: [access('team-c')] },
    };
    const asked: (string | undefined)[] = [];
    const all = await loadAllNamespaces(async (token) => {
      asked.push(token);
      return pages[token ?? 'first'];
    });
    expect(all.map((entry) => entry.name)).toEqual(['team-a', 'team-c']);
    expect(asked).toEqual([undefined, 'c1', 'c2']);
  });

  it('reads a single page without continue as before', async () => {
    const all = await loadAllNamespaces(async () => ({ items: [access('team-b')] }));
    expect(all.map((entry) => entry.name)).toEqual(['team-b']);
  });

  it('stops after a bounded number of pages', async () => {
    let calls = 0;
    await loadAllNamespaces(async () => {
      calls += 1;
      return { items: [], continue: 'again' };
    });
    expect(calls).toBe(MAX_NAMESPACE_PAGES);
  });
});
