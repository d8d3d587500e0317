// Tests of the copy-as descriptions of restore, storage-location and schedule actions.
import { describe, expect, it } from 'vitest';
import { curlCommand } from '../components/CopyAs';
import {
  locationDeleteAction,
  restoreCreateAction,
  restoreDeleteAction,
  restoreDescribeAction,
  restoreLogsAction,
  restoreResultsAction,
  scheduleDeleteAction,
  schedulePauseAction,
} from './actions';

describe('restore actions', () => {
  it('describes creation with YAML, curl and the nac CLI', () => {
    const action = restoreCreateAction('team-a', { name: 'r1', spec: { restoreSpec: { backupName: 'ui-hist-1' } } });
    expect(action.method).toBe('POST');
    expect(action.path).toBe('/api/v1/namespaces/team-a/restores');
    expect(action.cli).toBe('nac restore create r1 --from-backup ui-hist-1 -n team-a');
    expect(curlCommand(action, 'http://127.0.0.1:8090')).toBe(
      `curl -sS -X POST -H "Authorization: Bearer $NAC_TOKEN" -H 'Content-Type: application/json' --data '{"name":"r1","spec":{"restoreSpec":{"backupName":"ui-hist-1"}}}' 'http://127.0.0.1:8090/api/v1/namespaces/team-a/restores'`,
    );
  });

  it('leaves out the CLI when it cannot express the restore', () => {
    const action = restoreCreateAction('team-a', { name: 'r1', spec: { restoreSpec: { backupName: 'b', restorePVs: false } } });
    expect(action.cli).toBeUndefined();
  });

  it('describes get, logs, results and delete', () => {
    expect(restoreDescribeAction('team-a', 'r1')).toEqual({ method: 'GET', path: '/api/v1/namespaces/team-a/restores/r1/describe', cli: 'nac restore get r1 -n team-a -o yaml' });
    expect(restoreLogsAction('team-a', 'r1')).toEqual({ method: 'GET', path: '/api/v1/namespaces/team-a/restores/r1/logs?artifact=log', cli: 'nac restore logs r1 -n team-a' });
    expect(restoreResultsAction('team-a', 'r1').path).toBe('/api/v1/namespaces/team-a/restores/r1/logs?artifact=results');
    expect(restoreDeleteAction('team-a', 'r1')).toEqual({ method: 'DELETE', path: '/api/v1/namespaces/team-a/restores/r1', cli: 'nac restore delete r1 -n team-a', target: { resource: 'restores', namespace: 'team-a', name: 'r1' } });
  });
});

describe('storage-location and schedule actions', () => {
  it('describes deletion and pause/resume', () => {
    expect(locationDeleteAction('team-a', 'loc')).toEqual({ method: 'DELETE', path: '/api/v1/namespaces/team-a/storage-locations/loc', target: { resource: 'storage-locations', namespace: 'team-a', name: 'loc' } });
    expect(scheduleDeleteAction('team-a', 'nightly')).toEqual({ method: 'DELETE', path: '/api/v1/namespaces/team-a/schedules/nightly', target: { resource: 'schedules', namespace: 'team-a', name: 'nightly' } });
    const pause = schedulePauseAction('team-a', 'nightly', true);
    expect(curlCommand(pause, '')).toBe(
      `curl -sS -X PATCH -H "Authorization: Bearer $NAC_TOKEN" -H 'Content-Type: application/json' --data '{"paused":true}' '/api/v1/namespaces/team-a/schedules/nightly'`,
    );
  });
});
