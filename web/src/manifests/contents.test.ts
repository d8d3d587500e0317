import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import { contentsQuery, identityText, isFiltered, itemKey, kindFilterValue, kindTitle, labelsText, manifestDownloadPath, manifestMissing, NO_FILTER, totalOf } from './contents';
import { B1_CONTENTS, NAMESPACE_ITEM, WEB_CONFIG, WEB_DEPLOYMENT } from '../testing/manifestAnswers';

describe('manifest contents helpers', () => {
  it('names a kind by resource.group, so two groups with one kind name stay apart', () => {
    expect(kindFilterValue({ resource: 'deployments', group: 'apps' })).toBe('deployments.apps');
    expect(kindFilterValue({ resource: 'configmaps', group: '' })).toBe('configmaps');
    expect(kindTitle({ kind: 'Deployment', group: 'apps' })).toBe('Deployment (apps)');
    expect(kindTitle({ kind: 'ConfigMap', group: '' })).toBe('ConfigMap');
  });

  it('sends only the filters that are set, trimmed, and the continue token', () => {
    expect(contentsQuery(NO_FILTER)).toEqual({ limit: 100 });
    expect(contentsQuery({ kind: 'deployments.apps', q: '  web ', labelSelector: ' app=web ' }, 'dG9rZW4', 10)).toEqual({
      limit: 10,
      kind: 'deployments.apps',
      q: 'web',
      labelSelector: 'app=web',
      continue: 'dG9rZW4',
    });
    expect(isFiltered(NO_FILTER)).toBe(false);
    expect(isFiltered({ ...NO_FILTER, q: '   ' })).toBe(false);
    expect(isFiltered({ ...NO_FILTER, labelSelector: 'app' })).toBe(true);
  });

  it('shows labels sorted and items and identities as text', () => {
    expect(labelsText({ tier: 'front', app: 'web' })).toBe('app=web, tier=front');
    expect(labelsText(undefined)).toBe('');
    expect(itemKey(WEB_DEPLOYMENT)).toBe('deployments.apps/team-a/v1/web');
    expect(itemKey(NAMESPACE_ITEM)).toBe('namespaces//v1/team-a');
    expect(itemKey(WEB_CONFIG)).not.toBe(itemKey({ ...WEB_CONFIG, name: 'web-config-2' }));
    expect(identityText({ groupResource: 'deployments.apps', namespace: 'team-a', name: 'web' })).toBe('deployments.apps team-a/web');
    expect(identityText({ groupResource: 'namespaces', name: 'team-a' })).toBe('namespaces team-a');
    expect(totalOf(B1_CONTENTS.counts)).toBe(B1_CONTENTS.total);
  });

  it('downloads manifest.json from the same-origin API path, encoded', () => {
    expect(manifestDownloadPath('team-a', 'b1')).toBe('/api/v1/namespaces/team-a/backups/b1/manifest?download=true');
    expect(manifestDownloadPath('team-a', 'a.b')).toBe('/api/v1/namespaces/team-a/backups/a.b/manifest?download=true');
  });

  it('treats a 404 or a 202 (being built) as a missing manifest', () => {
    expect(manifestMissing(new ApiError(404, null, 'not found'))).toBe(true);
    expect(manifestMissing(new ApiError(202, null, 'manifest being built'))).toBe(true);
    expect(manifestMissing(new ApiError(403, null, 'forbidden'))).toBe(false);
    expect(manifestMissing(new Error('boom'))).toBe(false);
  });
});
