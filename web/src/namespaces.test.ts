// Tests of following "my namespaces" page by page.
import { describe, expect, it } from 'vitest';
import type { NamespaceAccess } from './api/types';
import type { NamespaceList } from './api/types';
import { loadAllNamespaces, MAX_NAMESPACE_PAGES } from './namespaces';

const access = (name: string): NamespaceAccess => ({ name, permissions: { backups: ['list'] }, canDownload: false });

describe('loadAllNamespaces', () => {
  it('follows continue tokens across pages, empty ones included', async () => {
    const pages: Record<string, NamespaceList> = {
      first: { items: [access('team-a')], continue: 'c1' },
      c1: { items: [], continue: 'c2' },
      c2: { items: [access('team-c')] },
    };
    const asked: (string | undefined)[] = [];
    const all = await loadAllNamespaces((token) => {
      asked.push(token);
      return Promise.resolve(pages[token ?? 'first']);
    });
    expect(all.map((entry) => entry.name)).toEqual(['team-a', 'team-c']);
    expect(asked).toEqual([undefined, 'c1', 'c2']);
  });

  it('reads a single page without continue as before', async () => {
    const all = await loadAllNamespaces(() => Promise.resolve({ items: [access('team-b')] }));
    expect(all.map((entry) => entry.name)).toEqual(['team-b']);
  });

  it('stops after a bounded number of pages', async () => {
    let calls = 0;
    await loadAllNamespaces(() => {
      calls += 1;
      return Promise.resolve({ items: [], continue: 'again' });
    });
    expect(calls).toBe(MAX_NAMESPACE_PAGES);
  });
});
