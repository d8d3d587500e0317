// Tests of artifact download paths and "not uploaded yet" detection.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import { artifactNotReady, artifactPath, veleroResultsOf } from './artifacts';

describe('artifacts', () => {
  it('builds the download path of a backup or restore artifact', () => {
    expect(artifactPath('team-a', 'backups', 'nightly', 'resource-list')).toBe('/api/v1/namespaces/team-a/backups/nightly/logs?artifact=resource-list');
    expect(artifactPath('team-a', 'restores', 'r2', 'log')).toBe('/api/v1/namespaces/team-a/restores/r2/logs?artifact=log');
  });

  it('tells "not uploaded yet" from real failures', () => {
    expect(artifactNotReady(new ApiError(409, null, 'artifact-unavailable'))).toBe(true);
    expect(artifactNotReady(new ApiError(404, null, 'not found'))).toBe(true);
    expect(artifactNotReady(new ApiError(403, null, 'forbidden'))).toBe(false);
    expect(artifactNotReady(new Error('boom'))).toBe(false);
  });

  it('reads Velero results and refuses other JSON', () => {
    const results = { errors: { namespaces: { 'team-a': ['error backing up item'] } }, warnings: { velero: ['slow'], cluster: null } };
    expect(veleroResultsOf(results)).toEqual(results);
    expect(veleroResultsOf({ errors: { velero: 'not a list' } })).toBeNull();
    expect(veleroResultsOf('text')).toBeNull();
  });
});
