// Tests of the storage-location form logic: validation, request body, YAML, Secret command, 422 mapping.
import { describe, expect, it } from 'vitest';
import type { RulesView } from '../api/types';
import {
  buildLocationRequest,
  configObject,
  initialLocationForm,
  locationFieldOfPath,
  locationManifest,
  secretCommand,
  validateLocationForm,
  type LocationForm,
} from './locationForm';

const noRules: RulesView = { enforced: {}, defaults: {}, maximum: {}, allowed: {} };

function form(overrides: Partial<LocationForm> = {}): LocationForm {
  return {
    ...initialLocationForm(noRules),
    name: 'loc-probe',
    bucket: 'my-bucket',
    prefix: 'team-a',
    config: [{ key: 'region', value: 'us-east-1' }],
    credentialName: 'web-credentials',
    ...overrides,
  };
}

describe('initialLocationForm', () => {
  it('starts on aws with a region setting and key "cloud"', () => {
    expect(initialLocationForm(noRules)).toEqual({
      name: '',
      provider: 'aws',
      bucket: '',
      prefix: '',
      config: [{ key: 'region', value: '' }],
      credentialName: '',
      credentialKey: 'cloud',
      isDefault: false,
      accessMode: 'ReadWrite',
    });
  });

  it('takes enforced values from the policy', () => {
    const rules: RulesView = { ...noRules, enforced: { provider: 'gcp', 'objectStorage.bucket': 'shared' }, defaults: { config: { serviceAccount: 'x@y' } } };
    const initial = initialLocationForm(rules);
    expect(initial.provider).toBe('gcp');
    expect(initial.bucket).toBe('shared');
    expect(initial.config).toEqual([{ key: 'serviceAccount', value: 'x@y' }]);
  });
});

describe('validateLocationForm', () => {
  it('accepts a complete form', () => {
    expect(validateLocationForm(form(), noRules)).toEqual({});
  });

  it('reports missing required fields like the server does', () => {
    const errors = validateLocationForm(form({ name: '', provider: '', bucket: '', credentialName: '', credentialKey: '' }), noRules);
    expect(errors).toEqual({
      name: 'Enter a name.',
      provider: 'Choose a provider.',
      bucket: 'Enter the bucket name.',
      credentialName: 'Enter the name of the Secret holding the credentials.',
      credentialKey: 'Enter the key of the credentials in the Secret.',
    });
  });

  it('checks formats', () => {
    const errors = validateLocationForm(
      form({ bucket: 'My Bucket', prefix: '/abs', credentialName: 'Bad_Secret', credentialKey: 'a b', provider: 'AWS!' }),
      noRules,
    );
    expect(errors.bucket).toMatch(/^A bucket name has 3 or more/);
    expect(errors.prefix).toBe("The prefix must not start with '/', contain '//' or spaces.");
    expect(errors.credentialName).toMatch(/^Use lowercase/);
    expect(errors.credentialKey).toBe("A Secret key has letters, digits, '-', '_' and '.' only.");
    expect(errors.provider).toBe('A provider is a plugin name like aws, gcp or azure.');
  });

  it('checks the provider settings', () => {
    expect(validateLocationForm(form({ config: [{ key: 'region', value: 'a' }, { key: 'region', value: 'b' }] }), noRules).config).toBe(
      'The setting region is listed twice.',
    );
    expect(validateLocationForm(form({ config: [{ key: '', value: 'x' }] }), noRules).config).toBe('A setting has a value but no key.');
    expect(validateLocationForm(form({ config: [{ key: 'bad key', value: 'x' }] }), noRules).config).toBe('"bad key" is not a valid setting name.');
    expect(validateLocationForm(form({ config: [{ key: '', value: '' }] }), noRules).config).toBeUndefined();
  });

  it('applies the storage-location rules', () => {
    const rules: RulesView = { ...noRules, allowed: { provider: ['aws'], accessMode: ['ReadOnly'] }, enforced: { default: false } };
    const errors = validateLocationForm(form({ provider: 'gcp', isDefault: true }), rules);
    expect(errors.provider).toBe('gcp is not allowed here; allowed: aws.');
    expect(errors.accessMode).toBe('ReadWrite is not allowed here; allowed: ReadOnly.');
    expect(errors.isDefault).toBe('The administrator fixed this to false.');
  });
});

describe('buildLocationRequest', () => {
  it('builds the body the demo gateway accepted', () => {
    expect(buildLocationRequest(form())).toEqual({
      name: 'loc-probe',
      spec: {
        backupStorageLocationSpec: {
          provider: 'aws',
          objectStorage: { bucket: 'my-bucket', prefix: 'team-a' },
          config: { region: 'us-east-1' },
          credential: { name: 'web-credentials', key: 'cloud' },
          accessMode: 'ReadWrite',
        },
      },
    });
  });

  it('leaves out empty parts and sends the default flag', () => {
    const spec = buildLocationRequest(form({ prefix: ' ', config: [{ key: 'region', value: '' }, { key: '', value: '' }], isDefault: true })).spec
      .backupStorageLocationSpec;
    expect(spec.objectStorage).toEqual({ bucket: 'my-bucket' });
    expect(spec.config).toEqual({ region: '' });
    expect(spec.default).toBe(true);
  });

  it('drops entries without a key from the config', () => {
    expect(configObject([{ key: ' a ', value: ' 1 ' }, { key: '', value: '2' }])).toEqual({ a: '1' });
  });

  it('builds the NonAdminBackupStorageLocation object', () => {
    const manifest = locationManifest('team-a', buildLocationRequest(form()));
    expect(manifest).toMatchObject({ apiVersion: 'oadp.openshift.io/v1alpha1', kind: 'NonAdminBackupStorageLocation', metadata: { name: 'loc-probe', namespace: 'team-a' } });
  });
});

describe('secretCommand', () => {
  it('creates the credential Secret from a file', () => {
    expect(secretCommand('team-a', 'cloud-credentials', 'cloud')).toBe('kubectl create secret generic cloud-credentials --from-file=cloud=./credentials -n team-a');
    expect(secretCommand('team-a', '', '')).toBe('kubectl create secret generic cloud-credentials --from-file=cloud=./credentials -n team-a');
  });
});

describe('locationFieldOfPath', () => {
  it('maps the paths of real 422 answers', () => {
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.credential.name')).toBe('credentialName');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.credential')).toBe('credentialName');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.credential.key')).toBe('credentialKey');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.provider')).toBe('provider');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.objectStorage.bucket')).toBe('bucket');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.config.region')).toBe('config');
    expect(locationFieldOfPath('metadata.name')).toBe('name');
    expect(locationFieldOfPath('spec.backupStorageLocationSpec.backupSyncPeriod')).toBeNull();
  });
});
