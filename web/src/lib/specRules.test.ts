// Tests of the administrator's rules as the forms apply them.
import { describe, expect, it } from 'vitest';
import type { RulesView } from '../api/types';
import { allowedChoices, formatRuleValue, implicitValue, isUnset, ruleFor, ruleHint, ruleLines, ruleViolation } from './specRules';

const empty: RulesView = { enforced: {}, defaults: {}, maximum: {}, allowed: {} };

const strict: RulesView = {
  enforced: { restorePVs: false },
  defaults: { existingResourcePolicy: 'update' },
  maximum: { ttl: '720h0m0s', 'uploaderConfig.parallelFilesUpload': 8 },
  allowed: { existingResourcePolicy: ['none', 'update'], includedResources: ['deployments', 'configmaps'], provider: ['aws', null] },
};

describe('ruleFor', () => {
  it('collects the rules of one path', () => {
    expect(ruleFor(strict, 'existingResourcePolicy')).toEqual({ default: 'update', allowed: ['none', 'update'] });
    expect(ruleFor(strict, 'restorePVs')).toEqual({ enforced: false });
    expect(ruleFor(strict, 'labelSelector')).toEqual({});
    expect(ruleFor(undefined, 'ttl')).toEqual({});
  });
});

describe('isUnset', () => {
  it('treats absent, null and "" as unset, like the server', () => {
    expect([undefined, null, ''].map(isUnset)).toEqual([true, true, true]);
    expect([false, 0, 'x', []].map(isUnset)).toEqual([false, false, false, false]);
  });
});

describe('ruleViolation', () => {
  it('accepts anything without rules', () => {
    expect(ruleViolation(empty, 'existingResourcePolicy', 'update')).toBeNull();
    expect(ruleViolation(undefined, 'ttl', '99999h')).toBeNull();
  });

  it('refuses a value other than the enforced one, accepts the same or unset', () => {
    expect(ruleViolation(strict, 'restorePVs', true)).toBe('The administrator fixed this to false.');
    expect(ruleViolation(strict, 'restorePVs', false)).toBeNull();
    expect(ruleViolation(strict, 'restorePVs', undefined)).toBeNull();
  });

  it('compares enforced durations by length', () => {
    const rules: RulesView = { ...empty, enforced: { ttl: '720h' } };
    expect(ruleViolation(rules, 'ttl', '720h0m0s')).toBeNull();
    expect(ruleViolation(rules, 'ttl', '24h')).toBe('The administrator fixed this to 720h.');
  });

  it('checks each element of a list against the allow-list', () => {
    expect(ruleViolation(strict, 'includedResources', ['deployments'])).toBeNull();
    expect(ruleViolation(strict, 'includedResources', ['deployments', 'secrets'])).toBe('secrets is not allowed here; allowed: deployments, configmaps.');
  });

  it('refuses an unset value when the allow-list lacks null and nothing fills it', () => {
    expect(ruleViolation(strict, 'includedResources', [])).toBe('Choose a value; allowed: deployments, configmaps.');
    expect(ruleViolation(strict, 'provider', '')).toBeNull();
    // A default fills the unset value, so it is fine.
    expect(ruleViolation(strict, 'existingResourcePolicy', undefined)).toBeNull();
  });

  it('refuses durations and numbers above the maximum', () => {
    expect(ruleViolation(strict, 'ttl', '721h')).toBe('At most 720h0m0s is allowed.');
    expect(ruleViolation(strict, 'ttl', '30d')).toBeNull(); // not a duration: the field's own check reports it
    expect(ruleViolation(strict, 'ttl', '168h')).toBeNull();
    expect(ruleViolation(strict, 'uploaderConfig.parallelFilesUpload', 9)).toBe('At most 8 is allowed.');
    expect(ruleViolation(strict, 'uploaderConfig.parallelFilesUpload', 8)).toBeNull();
  });
});

describe('allowedChoices and implicitValue', () => {
  it('offers only allowed or enforced choices', () => {
    expect(allowedChoices(strict, 'existingResourcePolicy', ['none', 'update'])).toEqual(['none', 'update']);
    expect(allowedChoices({ ...empty, allowed: { existingResourcePolicy: ['none'] } }, 'existingResourcePolicy', ['none', 'update'])).toEqual(['none']);
    expect(allowedChoices({ ...empty, enforced: { existingResourcePolicy: 'update' } }, 'existingResourcePolicy', ['none', 'update'])).toEqual(['update']);
    expect(allowedChoices(empty, 'existingResourcePolicy', ['none', 'update'])).toEqual(['none', 'update']);
  });

  it('gives enforced, then default, then the fallback', () => {
    expect(implicitValue(strict, 'restorePVs', true)).toBe(false);
    expect(implicitValue(strict, 'existingResourcePolicy', 'none')).toBe('update');
    expect(implicitValue(strict, 'labelSelector', 'x')).toBe('x');
  });
});

describe('display helpers', () => {
  it('formats values', () => {
    expect(formatRuleValue(null)).toBe('(unset)');
    expect(formatRuleValue(['a', 'b'])).toBe('a, b');
    expect(formatRuleValue({ matchLabels: { app: 'web' } })).toBe('{"matchLabels":{"app":"web"}}');
  });

  it('lists every rule sorted by field', () => {
    expect(ruleLines(strict)).toEqual([
      { path: 'existingResourcePolicy', kind: 'default', value: 'update' },
      { path: 'existingResourcePolicy', kind: 'allowed', value: 'none, update' },
      { path: 'includedResources', kind: 'allowed', value: 'deployments, configmaps' },
      { path: 'provider', kind: 'allowed', value: 'aws, (unset)' },
      { path: 'restorePVs', kind: 'enforced', value: 'false' },
      { path: 'ttl', kind: 'maximum', value: '720h0m0s' },
      { path: 'uploaderConfig.parallelFilesUpload', kind: 'maximum', value: '8' },
    ]);
    expect(ruleLines(undefined)).toEqual([]);
  });

  it('writes a hint per field', () => {
    expect(ruleHint(strict, 'restorePVs')).toBe('Set by the administrator: false');
    expect(ruleHint(strict, 'existingResourcePolicy')).toBe('Default: update · Allowed: none, update');
    expect(ruleHint(strict, 'ttl')).toBe('At most 720h0m0s');
    expect(ruleHint(strict, 'labelSelector')).toBeNull();
  });
});
