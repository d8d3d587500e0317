// Tests of the shared form-field helpers.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import {
  fieldErrorLists,
  generatedName,
  idempotencyKeyFor,
  nacManifest,
  newIdempotencyKey,
  objectNameError,
  overlapping,
  parseNameList,
  placeFieldErrors,
  refusalToFieldErrors,
  relativePath,
  resourceListError,
  resourceSelectionErrors,
  resourceSelectionSpec,
  shellQuote,
} from './fields';

describe('objectNameError', () => {
  it('accepts RFC 1123 subdomains', () => {
    expect(objectNameError('restore-nightly-1')).toBeNull();
    expect(objectNameError('a.b-c')).toBeNull();
  });
  it('explains what is wrong', () => {
    expect(objectNameError('')).toBe('Enter a name.');
    expect(objectNameError('Bad_Name')).toBe("Use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.");
    expect(objectNameError('-x')).toMatch(/^Use lowercase/);
    expect(objectNameError('x'.repeat(254))).toBe('At most 253 characters.');
    expect(objectNameError('x'.repeat(64), 63)).toBe('At most 63 characters.');
  });
});

describe('resource lists', () => {
  it('splits on commas and spaces, dropping empties and repeats', () => {
    expect(parseNameList(' deployments, configmaps,,secrets deployments ')).toEqual(['deployments', 'configmaps', 'secrets']);
    expect(parseNameList('')).toEqual([]);
  });
  it('checks resource names', () => {
    expect(resourceListError(['deployments', 'routes.route.openshift.io'])).toBeNull();
    expect(resourceListError(['Deployments'])).toBe('"Deployments" is not a resource name (e.g. deployments, configmaps, routes.route.openshift.io).');
    expect(resourceListError(['*', 'pods'])).toBe('"*" means every resource; do not list others with it.');
    expect(resourceListError(['*'])).toBeNull();
  });
  it('finds resources both included and excluded', () => {
    expect(overlapping(['pods', 'secrets', '*'], ['secrets', '*'])).toEqual(['secrets']);
  });
});

describe('generatedName', () => {
  it('appends a UTC stamp and stays a valid short name', () => {
    const at = new Date('2026-11-23T05:59:02.123Z');
    expect(generatedName('ui-hist-1', at)).toBe('ui-hist-1-20261123055902');
    const long = generatedName('a'.repeat(80), at);
    expect(long.length).toBeLessThanOrEqual(63);
    expect(objectNameError(long)).toBeNull();
    expect(generatedName('x.', at)).toBe('x-20261123055902');
  });
});

describe('idempotencyKeyFor', () => {
  it('keeps the key while the body is the same and changes it with the body', () => {
    let n = 0;
    const next = () => `key-${++n}`;
    const first = idempotencyKeyFor(null, '{"a":1}', next);
    expect(first).toEqual({ body: '{"a":1}', key: 'key-1' });
    expect(idempotencyKeyFor(first, '{"a":1}', next)).toBe(first);
    expect(idempotencyKeyFor(first, '{"a":2}', next)).toEqual({ body: '{"a":2}', key: 'key-2' });
  });
  it('makes a fresh idempotency key each time', () => {
    const a = newIdempotencyKey();
    const b = newIdempotencyKey();
    expect(a).not.toBe(b);
    expect(a.length).toBeGreaterThanOrEqual(32);
  });
});

describe('resource selection', () => {
  const rules = { enforced: {}, defaults: {}, maximum: {}, allowed: { includedResources: ['configmaps', 'secrets'] } };
  it('checks both lists, their overlap and the selector against the rules', () => {
    expect(resourceSelectionErrors({ includedResources: 'configmaps', excludedResources: '', labelSelector: 'app=web' }, rules)).toEqual({});
    const errors = resourceSelectionErrors({ includedResources: 'deployments', excludedResources: 'Bad_Name', labelSelector: 'app in (' }, rules);
    expect(errors.includedResources).toBe('deployments is not allowed here; allowed: configmaps, secrets.');
    expect(errors.excludedResources).toContain('"Bad_Name" is not a resource name');
    expect(errors.labelSelector).toContain('unbalanced parentheses');
    expect(resourceSelectionErrors({ includedResources: 'configmaps', excludedResources: 'configmaps', labelSelector: '' }, undefined).excludedResources).toContain('configmaps');
  });
  it('puts only what was filled in into the spec', () => {
    expect(resourceSelectionSpec({ includedResources: '', excludedResources: '', labelSelector: ' ' })).toEqual({});
    expect(resourceSelectionSpec({ includedResources: 'configmaps, secrets, configmaps', excludedResources: 'events', labelSelector: 'app=web' })).toEqual({
      includedResources: ['configmaps', 'secrets'],
      excludedResources: ['events'],
      labelSelector: { matchLabels: { app: 'web' } },
    });
  });
  it('builds the NAC object a request creates', () => {
    expect(nacManifest('NonAdminSchedule', 'team-a', 'nightly', { schedule: '@daily' })).toEqual({
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminSchedule',
      metadata: { name: 'nightly', namespace: 'team-a' },
      spec: { schedule: '@daily' },
    });
  });
});

describe('server field errors', () => {
  it('strips prefixes and indexes', () => {
    expect(relativePath('spec.restoreSpec.includedResources[1]', 'spec.restoreSpec')).toBe('includedResources');
    expect(relativePath('spec.restoreSpec', 'spec.restoreSpec')).toBe('');
    expect(relativePath('metadata.name', 'spec.restoreSpec')).toBeNull();
  });
  it('places errors on fields and keeps the rest', () => {
    const placed = placeFieldErrors(
      [
        { field: 'metadata.name', message: 'bad name', reason: 'invalid' },
        { field: 'spec.restoreSpec.namespaceMapping', message: 'restricted', reason: 'restricted' },
        { field: 'metadata.name', message: 'too long', reason: 'invalid' },
      ],
      (path) => (path === 'metadata.name' ? 'name' : null),
    );
    expect(placed.byField).toEqual({ name: 'bad name too long' });
    expect(placed.unplaced.map((e) => e.field)).toEqual(['spec.restoreSpec.namespaceMapping']);
    expect(fieldErrorLists([{ field: 'metadata.name', message: 'bad name', reason: 'invalid' }, { field: 'metadata.name', message: 'too long', reason: 'invalid' }], () => 'name').byField).toEqual({ name: ['bad name', 'too long'] });
  });
});

describe('shellQuote', () => {
  it('quotes only when needed', () => {
    expect(shellQuote('team-a')).toBe('team-a');
    expect(shellQuote('app in (web)')).toBe("'app in (web)'");
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('app=web')).toBe('app=web');
    expect(shellQuote('')).toBe("''");
  });
});

describe('refusalToFieldErrors', () => {
  const map = (path: string) => (path === 'metadata.name' ? 'name' : path === 'spec.restoreSpec.backupName' ? 'backupName' : null);

  it('places a real 422 answer', () => {
    const error = new ApiError(422, {
      type: 'https://nac.openshift.io/problems/invalid',
      title: 'Invalid request',
      status: 422,
      detail: 'the NonAdminRestore is refused by policy: …',
      code: 'invalid',
      errors: [{ field: 'spec.restoreSpec.backupName', message: 'NonAdminRestore spec.restoreSpec.backupName is invalid: NonAdminBackup "nope" not found in this namespace', reason: 'invalid' }],
    }, 'x');
    expect(refusalToFieldErrors(error, map, 'name')).toEqual({
      byField: { backupName: 'NonAdminRestore spec.restoreSpec.backupName is invalid: NonAdminBackup "nope" not found in this namespace' },
      unplaced: [],
    });
  });

  it('puts a real 409 "already exists" on the name', () => {
    const error = new ApiError(409, {
      type: 'https://nac.openshift.io/problems/already-exists',
      title: 'Already exists',
      status: 409,
      detail: 'NonAdminRestore "r-probe-1" already exists in namespace team-a',
      code: 'already-exists',
    }, 'x');
    expect(refusalToFieldErrors(error, map, 'name')).toEqual({ byField: { name: 'NonAdminRestore "r-probe-1" already exists in namespace team-a' }, unplaced: [] });
  });

  it('leaves other failures alone', () => {
    expect(refusalToFieldErrors(new ApiError(403, null, 'Forbidden'), map, 'name')).toBeNull();
    expect(refusalToFieldErrors(new Error('x'), map, 'name')).toBeNull();
  });
});
