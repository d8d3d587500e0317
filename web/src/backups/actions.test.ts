import { describe, expect, it } from 'vitest';
import { curlCommand } from '../components/CopyAs';
import { createAction, deleteAction, describeAction, logsAction, restoreAction, restoreNameFor } from './actions';

describe('copy-as actions of backups', () => {
  it('builds the create with YAML object, curl body and nac command', () => {
    const action = createAction('team-a', { name: 'nightly', spec: { backupSpec: { ttl: '24h', includedResources: ['configmaps'] } } });
    expect(action.method).toBe('POST');
    expect(action.path).toBe('/api/v1/namespaces/team-a/backups');
    expect(action.object).toEqual({
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminBackup',
      metadata: { name: 'nightly', namespace: 'team-a' },
      spec: { backupSpec: { ttl: '24h', includedResources: ['configmaps'] } },
    });
    expect(action.cli).toBe('nac backup create nightly -n team-a --include-resources configmaps --ttl 24h');
    expect(curlCommand(action, 'https://nac.example')).toBe(
      `curl -sS -X POST -H "Authorization: Bearer $NAC_TOKEN" -H 'Content-Type: application/json' --data '{"name":"nightly","spec":{"backupSpec":{"ttl":"24h","includedResources":["configmaps"]}}}' 'https://nac.example/api/v1/namespaces/team-a/backups'`,
    );
  });

  it('builds describe, logs, delete and restore', () => {
    expect(describeAction('team-a', 'nightly')).toEqual({
      method: 'GET',
      path: '/api/v1/namespaces/team-a/backups/nightly/describe?details=true',
      cli: 'nac backup get nightly -n team-a -o yaml',
    });
    expect(logsAction('team-a', 'nightly')).toEqual({ method: 'GET', path: '/api/v1/namespaces/team-a/backups/nightly/logs?artifact=log', cli: 'nac backup logs nightly -n team-a' });
    expect(deleteAction('team-a', 'nightly')).toEqual({ method: 'DELETE', path: '/api/v1/namespaces/team-a/backups/nightly', cli: 'nac backup delete nightly -n team-a', target: { resource: 'backups', namespace: 'team-a', name: 'nightly' } });
    const restore = restoreAction('team-a', 'nightly');
    expect(restore.body).toEqual({ name: 'nightly-restore', spec: { restoreSpec: { backupName: 'nightly' } } });
    expect(restore.cli).toBe('nac restore create nightly-restore -n team-a --from-backup nightly');
    expect(restoreNameFor('x'.repeat(253))).toHaveLength(253);
  });
});
