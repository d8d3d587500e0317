// The schedule form: validation as the user types (cron, the template backup spec against the
// administrator's backup rules), the POST /schedules body, the NonAdminSchedule YAML, and where
// the server's 422 field errors belong.
import type { RulesView } from '../api/types';
import { parseGoDuration } from '../lib/duration';
import { nacManifest, objectNameError, relativePath, resourceSelectionErrors, resourceSelectionSpec, type ResourceSelection } from '../lib/fields';
import { ruleViolation } from '../lib/specRules';
import { fmt, t } from '../strings';
import { validateCron } from './cron';

export interface ScheduleForm extends ResourceSelection {
  name: string;
  schedule: string;
  ttl: string;
  paused: boolean;
  skipImmediately: boolean;
}

export type ScheduleField = keyof ScheduleForm;
export type ScheduleErrors = Partial<Record<ScheduleField, string>>;

export function initialScheduleForm(): ScheduleForm {
  return {
    name: '',
    schedule: '0 2 * * *',
    includedResources: '',
    excludedResources: '',
    labelSelector: '',
    ttl: '',
    paused: false,
    skipImmediately: false,
  };
}

export function validateScheduleForm(form: ScheduleForm, backupRules: RulesView | undefined): ScheduleErrors {
  const errors: ScheduleErrors = {};
  const nameError = objectNameError(form.name.trim());
  if (nameError) errors.name = nameError;
  const cronError = validateCron(form.schedule);
  if (cronError) errors.schedule = cronError;
  Object.assign(errors, resourceSelectionErrors(form, backupRules));
  const ttl = form.ttl.trim();
  if (ttl) {
    const seconds = parseGoDuration(ttl);
    if (seconds === null || seconds <= 0) errors.ttl = fmt(t.schedules.validation.ttlInvalid, { value: ttl });
  }
  if (!errors.ttl) {
    const violation = ruleViolation(backupRules, 'ttl', ttl || undefined);
    if (violation) errors.ttl = violation;
  }
  return errors;
}

export interface ScheduleRequest {
  name: string;
  spec: { schedule: string; template: { backupSpec: Record<string, unknown> }; paused?: boolean; skipImmediately?: boolean };
}

/** The short-form body of POST /schedules. */
export function buildScheduleRequest(form: ScheduleForm): ScheduleRequest {
  const backupSpec = resourceSelectionSpec(form);
  if (form.ttl.trim()) backupSpec.ttl = form.ttl.trim();
  const spec: ScheduleRequest['spec'] = { schedule: form.schedule.trim().replace(/\s+/g, ' '), template: { backupSpec } };
  if (form.paused) spec.paused = true;
  if (form.skipImmediately) spec.skipImmediately = true;
  return { name: form.name.trim(), spec };
}

/** The NonAdminSchedule a request creates (for "copy as YAML"). */
export function scheduleManifest(namespace: string, request: ScheduleRequest): Record<string, unknown> {
  return nacManifest('NonAdminSchedule', namespace, request.name, request.spec);
}

/** The form field a server error path belongs to. */
export function scheduleFieldOfPath(path: string): ScheduleField | null {
  if (path === 'metadata.name' || path === 'name') return 'name';
  const relative = relativePath(path, 'spec');
  if (relative === null) return null;
  if (relative === 'schedule') return 'schedule';
  if (relative === 'paused') return 'paused';
  if (relative === 'skipImmediately') return 'skipImmediately';
  const template = relativePath(path, 'spec.template.backupSpec');
  if (template === null) return null;
  const head = template.split('.')[0];
  if (head === 'includedResources' || head === 'includedNamespaceScopedResources') return 'includedResources';
  if (head === 'excludedResources' || head === 'excludedNamespaceScopedResources') return 'excludedResources';
  if (head === 'labelSelector' || head === 'orLabelSelectors') return 'labelSelector';
  if (head === 'ttl') return 'ttl';
  return null;
}
