// Tests of the guards that check what the OpenAPI document leaves open.
import { describe, expect, it } from 'vitest';
import { descriptionConditions, isProblemDetails, isTenantObject, parseChangeEvent, resourceListOf, stringValues } from './types';

describe('guards', () => {
  it('takes an object as a tenant object only with metadata.name and its spec', () => {
    expect(isTenantObject('backups', { metadata: { name: 'b1' }, spec: { backupSpec: {} } })).toBe(true);
    expect(isTenantObject('backups', { metadata: {}, spec: { backupSpec: {} } })).toBe(false);
    expect(isTenantObject('schedules', { metadata: { name: 's1' }, spec: { backupSpec: {} } })).toBe(false);
    expect(isTenantObject('restores', null)).toBe(false);
  });

  it('parses change events and skips malformed ones', () => {
    const data = JSON.stringify({ namespace: 'team-a', resource: 'backups', name: 'b1', object: { metadata: { name: 'b1' } } });
    expect(parseChangeEvent('MODIFIED', data)).toEqual({ type: 'MODIFIED', namespace: 'team-a', resource: 'backups', name: 'b1', object: { metadata: { name: 'b1' } } });
    expect(parseChangeEvent('MODIFIED', '{not json')).toBeNull();
    expect(parseChangeEvent('MODIFIED', JSON.stringify({ namespace: 'team-a', resource: 'pods', name: 'p' }))).toBeNull();
    expect(parseChangeEvent('ready', data)).toBeNull();
  });

  it('reads problems, conditions, string maps and resource lists', () => {
    expect(isProblemDetails({ type: 't', title: 'Forbidden', status: 403, detail: 'no', code: 'forbidden' })).toBe(true);
    expect(isProblemDetails({ message: 'oops' })).toBe(false);
    expect(descriptionConditions({ conditions: [{ type: 'Accepted', status: 'True', reason: 'BackupAccepted' }, { status: 'True' }] })).toEqual([
      { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: undefined, lastTransitionTime: undefined },
    ]);
    expect(stringValues({ a: 'Approved', b: 3 })).toEqual({ a: 'Approved' });
    expect(resourceListOf({ 'v1/ConfigMap': ['team-a/web'] })).toEqual({ 'v1/ConfigMap': ['team-a/web'] });
    expect(resourceListOf({ 'v1/ConfigMap': [1] })).toBeNull();
    expect(resourceListOf(['v1/ConfigMap'])).toBeNull();
  });
});
