// The create-backup form as data: its fields, the administrator's rules for each, validation,
// the request body, the equivalent `nac` command, and mapping the server's 422 field errors back
// onto the inputs.
import type { FieldError, RulesView } from '../api/types';
import { fieldErrorLists, nacManifest, resourceSelectionSpec, shellQuote, type ResourceSelection } from '../lib/fields';
import { formatLabelSelector, parseLabelSelector, type LabelSelector } from '../lib/labelSelector';
import { fmt, t } from '../strings';
import { toYaml } from '../yaml';
import { splitList, validateAllowed, validateDuration, validateObjectName, validateResources } from './validation';

/** A yes/no field that may also be left to the default (`''`). */
export type TriState = '' | 'true' | 'false';

export interface BackupForm extends ResourceSelection {
  name: string;
  ttl: string;
  storageLocation: string;
  snapshotVolumes: TriState;
  defaultVolumesToFsBackup: TriState;
}

export type FormField = keyof BackupForm;

/** The spec fields the form edits (all but the name), i.e. paths under `spec.backupSpec`. */
export const SPEC_FIELDS = [
  'includedResources',
  'excludedResources',
  'labelSelector',
  'ttl',
  'storageLocation',
  'snapshotVolumes',
  'defaultVolumesToFsBackup',
] as const satisfies readonly FormField[];

export type SpecField = (typeof SPEC_FIELDS)[number];

export const EMPTY_FORM: BackupForm = {
  name: '',
  includedResources: '',
  excludedResources: '',
  labelSelector: '',
  ttl: '',
  storageLocation: '',
  snapshotVolumes: '',
  defaultVolumesToFsBackup: '',
};

/** What the administrator says about one field. */
export interface FieldRules {
  /** The whole field's enforced value (the input is then read-only). */
  enforced?: unknown;
  defaultValue?: unknown;
  maximum?: unknown;
  allowed?: unknown[];
  /** Enforced values of parts of the field, e.g. `labelSelector.matchLabels["team"]`. */
  enforcedParts: { path: string; value: unknown }[];
}

const has = (record: Record<string, unknown> | undefined, key: string) =>
  !!record && Object.prototype.hasOwnProperty.call(record, key);

/** The rules of one spec field from the policy's backup rules (paths relative to `backupSpec`). */
export function fieldRules(rules: RulesView | undefined, field: SpecField): FieldRules {
  const enforcedParts = Object.entries(rules?.enforced ?? {})
    .filter(([path]) => path.startsWith(`${field}.`) || path.startsWith(`${field}[`))
    .map(([path, value]) => ({ path, value }));
  return {
    enforced: has(rules?.enforced, field) ? rules!.enforced[field] : undefined,
    defaultValue: has(rules?.defaults, field) ? rules!.defaults[field] : undefined,
    maximum: has(rules?.maximum, field) ? rules!.maximum[field] : undefined,
    allowed: has(rules?.allowed, field) ? (rules!.allowed[field] as unknown[]) : undefined,
    enforcedParts,
  };
}

/** A policy value as a person reads it (lists joined, selectors as text, yes/no). */
export function formatPolicyValue(path: string, value: unknown): string {
  if (value === null || value === undefined) return t.common.none;
  if (typeof value === 'boolean') return value ? t.common.yes : t.common.no;
  if (Array.isArray(value)) return value.map((item) => formatPolicyValue(path, item)).join(', ');
  if (typeof value === 'object') {
    if (path === 'labelSelector' || path.endsWith('Selector')) return formatLabelSelector(value);
    return JSON.stringify(value);
  }
  return plainText(value);
}

/** A JSON scalar as text (strings as they are). */
function plainText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

/** The text an input shows for a spec value (the inverse of what `buildBackupSpec` reads). */
export function formValueOf(field: SpecField, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (field === 'labelSelector') return formatLabelSelector(value);
  if (Array.isArray(value)) return value.map(plainText).join(',');
  return plainText(value);
}

/** The form's starting values: enforced fields are filled in (and shown read-only). */
export function initialForm(rules: RulesView | undefined): BackupForm {
  const form: BackupForm = { ...EMPTY_FORM };
  for (const field of SPEC_FIELDS) {
    const { enforced } = fieldRules(rules, field);
    if (enforced !== undefined) (form as unknown as Record<string, string>)[field] = formValueOf(field, enforced);
  }
  return form;
}

/** `labelSelector.matchLabels["team"]` / `labelSelector.matchLabels.team` → `team`. */
function matchLabelKey(path: string): string | null {
  const match = /^labelSelector\.matchLabels(?:\["(.+)"\]|\.(.+))$/.exec(path);
  return match ? (match[1] ?? match[2]) : null;
}

const v = t.backups.validation;

function validateTriState(value: TriState, allowed?: unknown[]): string | null {
  if (!value || !allowed || !allowed.length) return null;
  const asBoolean = value === 'true';
  return allowed.includes(asBoolean)
    ? null
    : fmt(v.notAllowed, { value: asBoolean ? t.common.yes : t.common.no, allowed: allowed.map((a) => formatPolicyValue('', a)).join(', ') });
}

/** Every field's error (null when fine), against the administrator's rules. */
export function validateForm(form: BackupForm, rules: RulesView | undefined): Record<FormField, string | null> {
  const r = (field: SpecField) => fieldRules(rules, field);
  const selector = parseLabelSelector(form.labelSelector);
  let selectorError = selector.ok ? null : fmt(v.selectorInvalid, { error: selector.error });
  if (selector.ok && !selectorError) {
    for (const part of r('labelSelector').enforcedParts) {
      const key = matchLabelKey(part.path);
      const term = key ? selector.terms.find((candidate) => candidate.key === key) : undefined;
      if (key && term && !(term.operator === 'Equals' && term.values[0] === part.value)) {
        selectorError = fmt(v.enforcedDiffers, { value: `${key}=${String(part.value)}` });
      }
    }
  }
  return {
    name: validateObjectName(form.name.trim()),
    includedResources: validateResources(form.includedResources, r('includedResources').allowed),
    excludedResources: validateResources(form.excludedResources, r('excludedResources').allowed),
    labelSelector: selectorError,
    ttl: validateDuration(form.ttl, r('ttl').maximum) ?? (form.ttl.trim() ? validateAllowed(form.ttl.trim(), r('ttl').allowed) : null),
    storageLocation: validateAllowed(form.storageLocation, r('storageLocation').allowed),
    snapshotVolumes: validateTriState(form.snapshotVolumes, r('snapshotVolumes').allowed),
    defaultVolumesToFsBackup: validateTriState(form.defaultVolumesToFsBackup, r('defaultVolumesToFsBackup').allowed),
  };
}

/** Whether any field has an error. */
export function hasErrors(errors: Record<string, string | null | undefined>): boolean {
  return Object.values(errors).some(Boolean);
}

/** `spec.backupSpec` of the form: only what was set, enforced fields with their enforced value. */
export function buildBackupSpec(form: BackupForm, rules?: RulesView): Record<string, unknown> {
  const spec = resourceSelectionSpec(form, splitList);
  if (form.ttl.trim()) spec.ttl = form.ttl.trim();
  if (form.storageLocation) spec.storageLocation = form.storageLocation;
  if (form.snapshotVolumes) spec.snapshotVolumes = form.snapshotVolumes === 'true';
  if (form.defaultVolumesToFsBackup) spec.defaultVolumesToFsBackup = form.defaultVolumesToFsBackup === 'true';
  for (const field of SPEC_FIELDS) {
    const { enforced } = fieldRules(rules, field);
    if (enforced !== undefined && enforced !== null && enforced !== '') spec[field] = enforced;
  }
  return spec;
}

/** The POST body: the gateway's short form. */
export function buildCreateBody(form: BackupForm, rules?: RulesView): { name: string; spec: { backupSpec: Record<string, unknown> } } {
  return { name: form.name.trim(), spec: { backupSpec: buildBackupSpec(form, rules) } };
}

/** The NonAdminBackup object the body creates (for "copy as YAML"). */
export function backupObject(namespace: string, name: string, backupSpec: Record<string, unknown>) {
  return nacManifest('NonAdminBackup', namespace, name, { backupSpec });
}

/**
 * The `nac backup create` command of a spec: flags when they can say it all
 * (`--include-resources`, `--exclude-resources`, `--selector` of plain key=value labels,
 * `--ttl`, `--storage-location`), else the spec in a YAML file passed with `-f`.
 */
export function buildCreateCli(namespace: string, name: string, backupSpec: Record<string, unknown>): string {
  const base = ['nac', 'backup', 'create', shellQuote(name || 'NAME'), '-n', shellQuote(namespace)];
  const flagFields = new Set(['includedResources', 'excludedResources', 'labelSelector', 'ttl', 'storageLocation']);
  const selector = backupSpec.labelSelector as LabelSelector | undefined;
  const flagsSayAll =
    Object.keys(backupSpec).every((key) => flagFields.has(key)) &&
    (!selector || (!selector.matchExpressions?.length && Object.keys(selector).every((key) => key === 'matchLabels')));
  if (!flagsSayAll) {
    const file = `${name || 'backup'}-spec.yaml`;
    return [`cat > ${shellQuote(file)} <<'EOF'`, toYaml(backupSpec).trimEnd(), 'EOF', [...base, '-f', shellQuote(file)].join(' ')].join('\n');
  }
  const flags: string[] = [];
  const list = (value: unknown) => (value as string[]).join(',');
  if (backupSpec.includedResources) flags.push('--include-resources', shellQuote(list(backupSpec.includedResources)));
  if (backupSpec.excludedResources) flags.push('--exclude-resources', shellQuote(list(backupSpec.excludedResources)));
  if (selector) flags.push('--selector', shellQuote(formatLabelSelector(selector)));
  if (backupSpec.ttl) flags.push('--ttl', shellQuote(plainText(backupSpec.ttl)));
  if (backupSpec.storageLocation) flags.push('--storage-location', shellQuote(plainText(backupSpec.storageLocation)));
  return [...base, ...flags].join(' ');
}

/** The form field a server error's `field` path belongs to, or null. */
export function formFieldOf(path: string): FormField | null {
  if (path === 'metadata.name' || path === 'name') return 'name';
  const match = /^spec\.backupSpec\.([A-Za-z]+)/.exec(path) ?? /^backupSpec\.([A-Za-z]+)/.exec(path);
  if (!match) return null;
  return (SPEC_FIELDS as readonly string[]).includes(match[1]) ? (match[1] as FormField) : null;
}

/** Splits the server's 422 field errors into those shown at an input and the rest. */
export function mapFieldErrors(errors: FieldError[] | undefined): {
  byField: Partial<Record<FormField, string[]>>;
  unmatched: FieldError[];
} {
  const { byField, unplaced } = fieldErrorLists(errors, formFieldOf);
  return { byField, unmatched: unplaced };
}
