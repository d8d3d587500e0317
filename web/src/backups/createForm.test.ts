import { describe, expect, it } from 'vitest';
import type { RulesView } from '../api/types';
import {
  buildCreateBody,
  buildCreateCli,
  EMPTY_FORM,
  fieldRules,
  formatPolicyValue,
  hasErrors,
  initialForm,
  mapFieldErrors,
  validateForm,
  type BackupForm,
} from './createForm';

const RULES: RulesView = {
  enforced: { storageLocation: 'team-a-bsl', 'labelSelector.matchLabels["team"]': 'a' },
  defaults: { snapshotVolumes: false },
  maximum: { ttl: '720h0m0s' },
  allowed: { includedResources: ['configmaps', 'deployments', 'persistentvolumeclaims'] },
};

const form = (values: Partial<BackupForm>): BackupForm => ({ ...EMPTY_FORM, name: 'nightly', ...values });

describe('policy rules of a field', () => {
  it('collects enforced, default, maximum, allow-list and enforced parts', () => {
    expect(fieldRules(RULES, 'storageLocation').enforced).toBe('team-a-bsl');
    expect(fieldRules(RULES, 'ttl').maximum).toBe('720h0m0s');
    expect(fieldRules(RULES, 'snapshotVolumes').defaultValue).toBe(false);
    expect(fieldRules(RULES, 'labelSelector')).toEqual({
      enforced: undefined,
      defaultValue: undefined,
      maximum: undefined,
      allowed: undefined,
      enforcedParts: [{ path: 'labelSelector.matchLabels["team"]', value: 'a' }],
    });
    expect(fieldRules(undefined, 'ttl')).toEqual({ enforcedParts: [] });
  });
  it('fills enforced fields into the starting form', () => {
    expect(initialForm(RULES)).toEqual({ ...EMPTY_FORM, storageLocation: 'team-a-bsl' });
    expect(initialForm({ ...RULES, enforced: { labelSelector: { matchLabels: { app: 'web' } }, includedResources: ['configmaps', 'secrets'] } })).toMatchObject({
      labelSelector: 'app=web',
      includedResources: 'configmaps,secrets',
    });
  });
  it('formats policy values for people', () => {
    expect(formatPolicyValue('snapshotVolumes', false)).toBe('No');
    expect(formatPolicyValue('includedResources', ['a', 'b'])).toBe('a, b');
    expect(formatPolicyValue('labelSelector', { matchLabels: { app: 'web' } })).toBe('app=web');
    expect(formatPolicyValue('uploaderConfig', { parallelFilesUpload: 4 })).toBe('{"parallelFilesUpload":4}');
  });
});

describe('validateForm', () => {
  it('passes a good form', () => {
    const errors = validateForm(form({ ttl: '24h', includedResources: 'configmaps', labelSelector: 'app=web,team=a' }), RULES);
    expect(hasErrors(errors)).toBe(false);
  });
  it('reports each bad field', () => {
    const errors = validateForm(
      form({ name: 'Nightly_1', ttl: '800h', includedResources: 'secrets', labelSelector: 'team=b', snapshotVolumes: 'true' }),
      { ...RULES, allowed: { ...RULES.allowed, snapshotVolumes: [false] } },
    );
    expect(errors.name).toContain('lowercase');
    expect(errors.ttl).toBe('800h is longer than the maximum of 720h0m0s your administrator allows.');
    expect(errors.includedResources).toBe('"secrets" is not allowed here; allowed: configmaps, deployments, persistentvolumeclaims.');
    expect(errors.labelSelector).toBe('Your administrator enforces team=a.');
    expect(errors.snapshotVolumes).toBe('"Yes" is not allowed here; allowed: No.');
    expect(errors.excludedResources).toBeNull();
  });
  it('explains a broken selector', () => {
    expect(validateForm(form({ labelSelector: 'app in (web' }), undefined).labelSelector).toBe('Not a label selector: unbalanced parentheses.');
  });
});

describe('request body and CLI', () => {
  it('builds the short form with only what was set, enforced values included', () => {
    expect(
      buildCreateBody(
        form({ name: ' nightly ', includedResources: 'configmaps, deployments', labelSelector: 'app=web,tier!=db', ttl: '24h', snapshotVolumes: 'false', defaultVolumesToFsBackup: 'true' }),
        RULES,
      ),
    ).toEqual({
      name: 'nightly',
      spec: {
        backupSpec: {
          includedResources: ['configmaps', 'deployments'],
          labelSelector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
          ttl: '24h',
          storageLocation: 'team-a-bsl',
          snapshotVolumes: false,
          defaultVolumesToFsBackup: true,
        },
      },
    });
    expect(buildCreateBody(form({}))).toEqual({ name: 'nightly', spec: { backupSpec: {} } });
  });

  it('uses nac flags when they can say it all', () => {
    expect(
      buildCreateCli('team-a', 'nightly', {
        includedResources: ['configmaps', 'deployments'],
        excludedResources: ['events'],
        labelSelector: { matchLabels: { app: 'web', tier: 'front' } },
        ttl: '24h',
        storageLocation: 'team-a-bsl',
      }),
    ).toBe('nac backup create nightly -n team-a --include-resources configmaps,deployments --exclude-resources events --selector app=web,tier=front --ttl 24h --storage-location team-a-bsl');
    expect(buildCreateCli('team-a', 'all', { includedResources: ['*'] })).toBe("nac backup create all -n team-a --include-resources '*'");
  });

  it('passes a spec file when flags cannot say it', () => {
    expect(buildCreateCli('team-a', 'nightly', { ttl: '24h', snapshotVolumes: false })).toBe(
      ["cat > nightly-spec.yaml <<'EOF'", 'ttl: 24h', 'snapshotVolumes: false', 'EOF', 'nac backup create nightly -n team-a -f nightly-spec.yaml'].join('\n'),
    );
    expect(buildCreateCli('team-a', 'x', { labelSelector: { matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] } })).toContain('-f x-spec.yaml');
  });
});

describe('server field errors', () => {
  it('maps 422 field paths to inputs and keeps the rest for an alert', () => {
    // From the demo gateway: POST …/backups with includedNamespaces and a bad name/storage location.
    const mapped = mapFieldErrors([
      { field: 'metadata.name', message: "metadata.name must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)", reason: 'invalid' },
      { field: 'spec.backupSpec.storageLocation', message: 'NonAdminBackup spec.backupSpec.storageLocation "nope" is not a NonAdminBackupStorageLocation of this namespace', reason: 'invalid' },
      { field: 'spec.backupSpec.labelSelector.matchLabels', message: 'reserved label', reason: 'restricted' },
      { field: 'spec.backupSpec.includedResources[1]', message: 'not allowed', reason: 'restricted' },
      { field: 'spec.backupSpec.includedNamespaces', message: 'NonAdminBackup spec.backupSpec.includedNamespaces is restricted, can not contain namespaces other than: team-a', reason: 'restricted' },
    ]);
    expect(Object.keys(mapped.byField).sort()).toEqual(['includedResources', 'labelSelector', 'name', 'storageLocation']);
    expect(mapped.byField.storageLocation).toEqual(['NonAdminBackup spec.backupSpec.storageLocation "nope" is not a NonAdminBackupStorageLocation of this namespace']);
    expect(mapped.unmatched.map((e) => e.field)).toEqual(['spec.backupSpec.includedNamespaces']);
    expect(mapFieldErrors(undefined)).toEqual({ byField: {}, unmatched: [] });
  });
});
