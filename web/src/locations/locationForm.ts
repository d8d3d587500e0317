// The storage-location form: providers and their usual config keys, validation as the user types
// (with the administrator's storage-location rules), the POST /storage-locations body, the
// NonAdminBackupStorageLocation YAML, the kubectl command creating the credential Secret, and
// where the server's 422 field errors belong.
import type { RulesView, StorageLocationSpec } from '../api/types';
import { nacManifest, objectNameError, relativePath, shellQuote } from '../lib/fields';
import { implicitValue, ruleViolation } from '../lib/specRules';
import { fmt, t } from '../strings';

/** Object-store plugins offered in the provider menu (any other name can be typed). */
export const PROVIDERS = ['aws', 'gcp', 'azure'] as const;

/** Config keys each provider commonly needs, offered as suggestions. */
export const CONFIG_HINTS: Record<string, string[]> = {
  aws: ['region', 's3ForcePathStyle', 's3Url', 'profile', 'insecureSkipTLSVerify', 'checksumAlgorithm'],
  gcp: ['serviceAccount', 'kmsKeyName', 'storeUrl'],
  azure: ['resourceGroup', 'storageAccount', 'subscriptionId', 'storageAccountKeyEnvVar', 'useAAD'],
};

export type AccessMode = 'ReadWrite' | 'ReadOnly';

export interface ConfigEntry {
  key: string;
  value: string;
}

export interface LocationForm {
  name: string;
  provider: string;
  bucket: string;
  prefix: string;
  config: ConfigEntry[];
  credentialName: string;
  credentialKey: string;
  isDefault: boolean;
  accessMode: AccessMode;
}

export type LocationField = 'name' | 'provider' | 'bucket' | 'prefix' | 'config' | 'credentialName' | 'credentialKey' | 'isDefault' | 'accessMode';
export type LocationErrors = Partial<Record<LocationField, string>>;

export function initialLocationForm(rules: RulesView | undefined): LocationForm {
  const provider = implicitValue<string>(rules, 'provider', 'aws');
  const config = implicitValue<Record<string, string>>(rules, 'config', {});
  return {
    name: '',
    provider,
    bucket: implicitValue<string>(rules, 'objectStorage.bucket', ''),
    prefix: implicitValue<string>(rules, 'objectStorage.prefix', ''),
    config: Object.keys(config).length
      ? Object.entries(config).map(([key, value]) => ({ key, value: String(value) }))
      : provider === 'aws'
        ? [{ key: 'region', value: '' }]
        : [],
    credentialName: '',
    credentialKey: 'cloud',
    isDefault: false,
    accessMode: implicitValue<AccessMode>(rules, 'accessMode', 'ReadWrite'),
  };
}

const BUCKET = /^[a-z0-9][a-z0-9._-]*[a-z0-9]$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY = /^[A-Za-z0-9][-A-Za-z0-9_.]*$/;

/** The config entries as an object (entries with an empty key are ignored). */
export function configObject(entries: ConfigEntry[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const key = entry.key.trim();
    if (key) out[key] = entry.value.trim();
  }
  return out;
}

export function validateLocationForm(form: LocationForm, rules: RulesView | undefined): LocationErrors {
  const errors: LocationErrors = {};
  const nameError = objectNameError(form.name);
  if (nameError) errors.name = nameError;
  const l = t.locations.validation;
  const provider = form.provider.trim();
  if (!provider) errors.provider = l.providerRequired;
  else if (!/^[a-z0-9][-a-z0-9_./]*$/.test(provider)) errors.provider = l.providerInvalid;
  else {
    const violation = ruleViolation(rules, 'provider', provider);
    if (violation) errors.provider = violation;
  }
  const bucket = form.bucket.trim();
  if (!bucket) errors.bucket = l.bucketRequired;
  else if (bucket.length < 3 || bucket.length > 222 || !BUCKET.test(bucket)) errors.bucket = l.bucketInvalid;
  else {
    const violation = ruleViolation(rules, 'objectStorage.bucket', bucket);
    if (violation) errors.bucket = violation;
  }
  const prefix = form.prefix.trim();
  if (prefix.startsWith('/') || prefix.includes('//') || /\s/.test(prefix)) errors.prefix = l.prefixInvalid;
  else {
    const violation = ruleViolation(rules, 'objectStorage.prefix', prefix);
    if (violation) errors.prefix = violation;
  }
  const keys = form.config.map((entry) => entry.key.trim()).filter(Boolean);
  const duplicate = keys.find((key, index) => keys.indexOf(key) !== index);
  const badKey = keys.find((key) => !CONFIG_KEY.test(key));
  const missingKey = form.config.find((entry) => !entry.key.trim() && entry.value.trim());
  if (duplicate) errors.config = fmt(l.configDuplicate, { key: duplicate });
  else if (badKey) errors.config = fmt(l.configKeyInvalid, { key: badKey });
  else if (missingKey) errors.config = l.configKeyMissing;
  else {
    const violation = ruleViolation(rules, 'config', Object.keys(configObject(form.config)).length ? configObject(form.config) : undefined);
    if (violation) errors.config = violation;
  }
  const secretError = objectNameError(form.credentialName.trim());
  if (secretError) errors.credentialName = form.credentialName.trim() ? secretError : l.secretRequired;
  const key = form.credentialKey.trim();
  if (!key) errors.credentialKey = l.keyRequired;
  else if (key.length > 253 || !SECRET_KEY.test(key)) errors.credentialKey = l.keyInvalid;
  const accessViolation = ruleViolation(rules, 'accessMode', form.accessMode);
  if (accessViolation) errors.accessMode = accessViolation;
  const defaultViolation = form.isDefault ? ruleViolation(rules, 'default', true) : null;
  if (defaultViolation) errors.isDefault = defaultViolation;
  return errors;
}

export interface LocationRequest {
  name: string;
  spec: { backupStorageLocationSpec: StorageLocationSpec };
}

/** The short-form body of POST /storage-locations. */
export function buildLocationRequest(form: LocationForm): LocationRequest {
  const objectStorage: StorageLocationSpec['objectStorage'] = { bucket: form.bucket.trim() };
  if (form.prefix.trim()) objectStorage.prefix = form.prefix.trim();
  const spec: StorageLocationSpec = { provider: form.provider.trim(), objectStorage };
  const config = configObject(form.config);
  if (Object.keys(config).length) spec.config = config;
  spec.credential = { name: form.credentialName.trim(), key: form.credentialKey.trim() };
  if (form.isDefault) spec.default = true;
  spec.accessMode = form.accessMode;
  return { name: form.name.trim(), spec: { backupStorageLocationSpec: spec } };
}

/** The NonAdminBackupStorageLocation a request creates (for "copy as YAML"). */
export function locationManifest(namespace: string, request: LocationRequest): Record<string, unknown> {
  return nacManifest('NonAdminBackupStorageLocation', namespace, request.name, request.spec);
}

/** `kubectl create secret generic NAME --from-file=KEY=./credentials -n NS`. */
export function secretCommand(namespace: string, secretName: string, key: string): string {
  const name = secretName.trim() || 'cloud-credentials';
  const file = key.trim() || 'cloud';
  return `kubectl create secret generic ${shellQuote(name)} --from-file=${shellQuote(`${file}=./credentials`)} -n ${shellQuote(namespace)}`;
}

/** The form field a server error path belongs to. */
export function locationFieldOfPath(path: string): LocationField | null {
  if (path === 'metadata.name' || path === 'name') return 'name';
  const relative = relativePath(path, 'spec.backupStorageLocationSpec');
  if (relative === null) return null;
  if (relative === 'provider') return 'provider';
  if (relative === 'objectStorage.bucket' || relative === 'objectStorage') return 'bucket';
  if (relative === 'objectStorage.prefix') return 'prefix';
  if (relative === 'config' || relative.startsWith('config.')) return 'config';
  if (relative === 'credential' || relative === 'credential.name') return 'credentialName';
  if (relative === 'credential.key') return 'credentialKey';
  if (relative === 'default') return 'isDefault';
  if (relative === 'accessMode') return 'accessMode';
  return null;
}
