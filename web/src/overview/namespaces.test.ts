// Tests of the picker's capabilities and namespace filter.
import { describe, expect, it } from 'vitest';
import type { NamespaceAccess } from '../api/types';
import { aliceNamespaces, ciBotNamespaces } from '../testing/accessAnswers';
import { capabilities, filterNamespaces, isReadOnly } from './namespaces';

describe('capabilities', () => {
  it('allows everything to a namespace owner', () => {
    expect(capabilities(aliceNamespaces.items[0]).filter((c) => !c.allowed)).toEqual([]);
    expect(capabilities(aliceNamespaces.items[0]).map((c) => c.key)).toEqual(['view', 'backup', 'restore', 'schedule', 'locations', 'download']);
  });
  it('shows what a CI bot may not do', () => {
    expect(capabilities(ciBotNamespaces.items[0])).toEqual([
      { key: 'view', allowed: true },
      { key: 'backup', allowed: true },
      { key: 'restore', allowed: false },
      { key: 'schedule', allowed: false },
      { key: 'locations', allowed: false },
      { key: 'download', allowed: false },
    ]);
    expect(isReadOnly(ciBotNamespaces.items[0])).toBe(false);
  });
  it('knows a viewer is read only', () => {
    expect(isReadOnly({ name: 'audit', permissions: { backups: ['get', 'list'] }, canDownload: true })).toBe(true);
  });
});

describe('filterNamespaces', () => {
  const list: NamespaceAccess[] = ['team-b', 'payments', 'team-a', 'Team-C'].map((name) => ({ name, permissions: {}, canDownload: false }));
  it('matches part of the name, ignoring case, sorted', () => {
    expect(filterNamespaces(list, 'TEAM').map((ns) => ns.name)).toEqual(['team-a', 'team-b', 'Team-C']);
    expect(filterNamespaces(list, ' pay ').map((ns) => ns.name)).toEqual(['payments']);
    expect(filterNamespaces(list, '').map((ns) => ns.name)).toEqual(['payments', 'team-a', 'team-b', 'Team-C']);
    expect(filterNamespaces(list, 'zzz')).toEqual([]);
  });
});
