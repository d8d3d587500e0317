// The restore wizard's form: validation as the user types (including the administrator's restore
// rules), the request body of POST /restores, the NonAdminRestore YAML, the `nac` command line,
// and where the server's 422 field errors belong.
import type { NonAdminBackup, RulesView } from '../api/types';
import { nacManifest, objectNameError, relativePath, resourceSelectionErrors, resourceSelectionSpec, shellQuote, type ResourceSelection } from '../lib/fields';
import { formatLabelSelector } from '../lib/labelSelector';
import { implicitValue, ruleViolation } from '../lib/specRules';
import { fmt, t } from '../strings';

export type ExistingResourcePolicy = 'none' | 'update';
export const EXISTING_RESOURCE_POLICIES: ExistingResourcePolicy[] = ['none', 'update'];

export interface RestoreForm extends ResourceSelection {
  name: string;
  backupName: string;
  restorePVs: boolean;
  existingResourcePolicy: ExistingResourcePolicy;
}

export type RestoreField = keyof RestoreForm;
export type RestoreErrors = Partial<Record<RestoreField, string>>;

/** The wizard's steps, and the fields each one holds (the preview holds none). */
export type RestoreStep = 'backup' | 'options' | 'preview' | 'review';
export const STEP_OF_FIELD: Record<RestoreField, RestoreStep> = {
  backupName: 'backup',
  name: 'options',
  includedResources: 'options',
  excludedResources: 'options',
  labelSelector: 'options',
  restorePVs: 'options',
  existingResourcePolicy: 'options',
};

/** Phases a backup can be restored from. */
export const RESTORABLE_PHASES = ['Completed', 'PartiallyFailed'];

export function backupPhase(backup: NonAdminBackup): string | undefined {
  return backup.status?.veleroBackup?.status?.phase ?? backup.status?.phase;
}

export function isRestorable(backup: NonAdminBackup): boolean {
  // BackingOff after it completed: its Velero backup is gone (NAC refuses restores from it).
  return RESTORABLE_PHASES.includes(backupPhase(backup) ?? '') && !backup.metadata.deletionTimestamp && backup.status?.phase !== 'BackingOff';
}

/** The form's first values, with the policy's enforced or default choices filled in. */
export function initialRestoreForm(backupName: string, name: string, rules: RulesView | undefined): RestoreForm {
  const selector = implicitValue<unknown>(rules, 'labelSelector', undefined);
  return {
    name,
    backupName,
    includedResources: (implicitValue<string[]>(rules, 'includedResources', []) ?? []).join(', '),
    excludedResources: (implicitValue<string[]>(rules, 'excludedResources', []) ?? []).join(', '),
    labelSelector: selector ? formatLabelSelector(selector) : '',
    restorePVs: implicitValue(rules, 'restorePVs', true),
    existingResourcePolicy: implicitValue<ExistingResourcePolicy>(rules, 'existingResourcePolicy', 'none'),
  };
}

/** Every field's problem (empty when the form can be sent). */
export function validateRestoreForm(form: RestoreForm, rules: RulesView | undefined, backups?: NonAdminBackup[]): RestoreErrors {
  const errors: RestoreErrors = {};
  const nameError = objectNameError(form.name);
  if (nameError) errors.name = nameError;
  if (!form.backupName) errors.backupName = t.restores.form.backupRequired;
  else if (backups) {
    const backup = backups.find((b) => b.metadata.name === form.backupName);
    if (!backup) errors.backupName = fmt(t.restores.form.backupMissing, { name: form.backupName });
    else if (!isRestorable(backup)) errors.backupName = fmt(t.restores.form.backupNotRestorable, { phase: backupPhase(backup) ?? '—' });
  }
  Object.assign(errors, resourceSelectionErrors(form, rules));
  const pvViolation = ruleViolation(rules, 'restorePVs', form.restorePVs);
  if (pvViolation) errors.restorePVs = pvViolation;
  const policyViolation = ruleViolation(rules, 'existingResourcePolicy', form.existingResourcePolicy);
  if (policyViolation) errors.existingResourcePolicy = policyViolation;
  return errors;
}

/** The errors that stop a step's Next button. */
export function errorsOfStep(errors: RestoreErrors, step: RestoreStep): RestoreErrors {
  const out: RestoreErrors = {};
  for (const [field, message] of Object.entries(errors) as [RestoreField, string][]) {
    if (STEP_OF_FIELD[field] === step) out[field] = message;
  }
  return out;
}

export interface RestoreRequest {
  name: string;
  spec: { restoreSpec: Record<string, unknown> & { backupName: string } };
}

/**
 * The short-form body of POST /restores. Fields equal to what the server would use anyway
 * (Velero's default, or the policy's enforced/default value) are left out, so the body says
 * only what the user chose.
 */
export function buildRestoreRequest(form: RestoreForm, rules: RulesView | undefined): RestoreRequest {
  const restoreSpec: RestoreRequest['spec']['restoreSpec'] = { backupName: form.backupName, ...resourceSelectionSpec(form) };
  if (form.restorePVs !== implicitValue(rules, 'restorePVs', true)) restoreSpec.restorePVs = form.restorePVs;
  if (form.existingResourcePolicy !== implicitValue(rules, 'existingResourcePolicy', 'none')) {
    restoreSpec.existingResourcePolicy = form.existingResourcePolicy;
  }
  return { name: form.name, spec: { restoreSpec } };
}

/** The NonAdminRestore object a request creates (for "copy as YAML"). */
export function restoreManifest(namespace: string, request: RestoreRequest): Record<string, unknown> {
  return nacManifest('NonAdminRestore', namespace, request.name, request.spec);
}

/**
 * `nac restore create …` for a request, or null when it uses options the CLI has no flag for
 * (label selector, restorePVs, existingResourcePolicy): then YAML or curl are the way.
 */
export function restoreCreateCli(namespace: string, request: RestoreRequest): string | null {
  const spec = request.spec.restoreSpec;
  const supported = new Set(['backupName', 'includedResources', 'excludedResources']);
  if (Object.keys(spec).some((key) => !supported.has(key))) return null;
  const parts = ['nac restore create', shellQuote(request.name), '--from-backup', shellQuote(spec.backupName), '-n', shellQuote(namespace)];
  if (Array.isArray(spec.includedResources)) parts.push('--include-resources', shellQuote((spec.includedResources as string[]).join(',')));
  if (Array.isArray(spec.excludedResources)) parts.push('--exclude-resources', shellQuote((spec.excludedResources as string[]).join(',')));
  return parts.join(' ');
}

/** The form field a server error path belongs to (`spec.restoreSpec.includedResources[1]` → includedResources). */
export function restoreFieldOfPath(path: string): RestoreField | null {
  if (path === 'metadata.name' || path === 'name') return 'name';
  const relative = relativePath(path, 'spec.restoreSpec');
  if (relative === null) return null;
  const head = relative.split('.')[0];
  if (head === 'orLabelSelectors') return 'labelSelector';
  return head in STEP_OF_FIELD ? (head as RestoreField) : null;
}
