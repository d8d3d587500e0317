import { describe, expect, it } from 'vitest';
import { filterResourceList } from './ResourceListView';
import { resultSections } from './ResultsView';

// The demo's resource list of probe-1 (GET …/logs?artifact=resource-list).
const RESOURCE_LIST = {
  'apps/v1/Deployment': ['team-a/web'],
  'v1/ConfigMap': ['team-a/web-config'],
  'v1/Namespace': ['team-a'],
  'v1/PersistentVolumeClaim': ['team-a/web-data'],
  'v1/Secret': ['team-a/web-credentials'],
  'v1/Service': ['team-a/web'],
};

describe('filterResourceList', () => {
  it('keeps kinds or names containing the filter, kinds sorted', () => {
    expect(filterResourceList(RESOURCE_LIST, '').map(([kind]) => kind)).toEqual(Object.keys(RESOURCE_LIST).sort());
    expect(filterResourceList(RESOURCE_LIST, 'web-')).toEqual([
      ['v1/ConfigMap', ['team-a/web-config']],
      ['v1/PersistentVolumeClaim', ['team-a/web-data']],
      ['v1/Secret', ['team-a/web-credentials']],
    ]);
    expect(filterResourceList(RESOURCE_LIST, 'deployment')).toEqual([['apps/v1/Deployment', ['team-a/web']]]);
    expect(filterResourceList(null, 'x')).toEqual([]);
  });
});

describe('resultSections', () => {
  it('orders Velero, cluster, then namespaces by name, skipping empty ones', () => {
    expect(
      resultSections({ namespaces: { 'team-b': ['b'], 'team-a': ['a1', 'a2'], empty: [] }, velero: ['v'], cluster: [] }).map((s) => [s.title, s.messages.length]),
    ).toEqual([
      ['Velero', 1],
      ['Namespace team-a', 2],
      ['Namespace team-b', 1],
    ]);
    expect(resultSections(undefined)).toEqual([]);
  });
});
