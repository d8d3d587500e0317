import { describe, expect, it } from 'vitest';
import { splitList, validateAllowed, validateDuration, validateObjectName, validateResources } from './validation';

describe('validateObjectName', () => {
  it.each(['nightly', 'nightly-2026-11-23', 'a.b', 'x1'])('accepts %s', (name) => expect(validateObjectName(name)).toBeNull());
  it.each([
    ['', 'Required.'],
    ['Bad_Name', 'lowercase'],
    ['-start', 'lowercase'],
    ['end-', 'lowercase'],
    ['a'.repeat(254), 'At most 253'],
  ])('refuses %j', (name, fragment) => expect(validateObjectName(name)).toContain(fragment));
});

describe('validateDuration', () => {
  it('accepts an empty field and durations up to the maximum', () => {
    expect(validateDuration('')).toBeNull();
    expect(validateDuration('720h', '720h0m0s')).toBeNull();
    expect(validateDuration('24h', '720h0m0s')).toBeNull();
  });
  it('explains a bad duration and one over the maximum', () => {
    expect(validateDuration('7d')).toContain('"7d" is not a Go duration');
    expect(validateDuration('721h', '720h0m0s')).toBe('721h is longer than the maximum of 720h0m0s your administrator allows.');
  });
});

describe('resources and allow-lists', () => {
  it('splits lists at commas and spaces', () => expect(splitList(' deployments, configmaps  secrets,,')).toEqual(['deployments', 'configmaps', 'secrets']));
  it('accepts resource names and *', () => expect(validateResources('deployments.apps, configmaps,*')).toBeNull());
  it('refuses what is no resource name', () => expect(validateResources('configmaps,Not-A-Resource!')).toContain('"Not-A-Resource!" is not a resource name'));
  it('checks allow-lists', () => {
    expect(validateResources('configmaps,secrets', ['configmaps'])).toBe('"secrets" is not allowed here; allowed: configmaps.');
    expect(validateAllowed('', ['a', null])).toBeNull();
    expect(validateAllowed('', ['a'])).toBe('Required.');
    expect(validateAllowed('b', ['a'])).toContain('"b" is not allowed');
    expect(validateAllowed('anything')).toBeNull();
  });
});
