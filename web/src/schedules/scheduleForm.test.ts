// Tests of the schedule form logic: validation, request body, YAML and 422 mapping.
import { describe, expect, it } from 'vitest';
import type { RulesView } from '../api/types';
import { buildScheduleRequest, initialScheduleForm, scheduleFieldOfPath, scheduleManifest, validateScheduleForm, type ScheduleForm } from './scheduleForm';

const noRules: RulesView = { enforced: {}, defaults: {}, maximum: {}, allowed: {} };

function form(overrides: Partial<ScheduleForm> = {}): ScheduleForm {
  return { ...initialScheduleForm(), name: 'nightly', ...overrides };
}

describe('validateScheduleForm', () => {
  it('accepts the initial form once named', () => {
    expect(validateScheduleForm(form(), noRules)).toEqual({});
    expect(validateScheduleForm(initialScheduleForm(), noRules)).toEqual({ name: 'Enter a name.' });
  });

  it('validates the cron expression as typed', () => {
    expect(validateScheduleForm(form({ schedule: '61 * * *' }), noRules).schedule).toBe(
      'A schedule has 5 fields (minute hour day-of-month month day-of-week); this one has 4.',
    );
    expect(validateScheduleForm(form({ schedule: '0 25 * * *' }), noRules).schedule).toBe('Hour: 25 is outside 0–23.');
  });

  it('validates the TTL and its maximum', () => {
    expect(validateScheduleForm(form({ ttl: 'forever' }), noRules).ttl).toBe('"forever" is not a duration; write e.g. 720h, 24h30m or 168h0m0s.');
    expect(validateScheduleForm(form({ ttl: '0s' }), noRules).ttl).toBe('"0s" is not a duration; write e.g. 720h, 24h30m or 168h0m0s.');
    const rules: RulesView = { ...noRules, maximum: { ttl: '720h0m0s' } };
    expect(validateScheduleForm(form({ ttl: '800h' }), rules).ttl).toBe('At most 720h0m0s is allowed.');
    expect(validateScheduleForm(form({ ttl: '24h0m0s' }), rules).ttl).toBeUndefined();
  });

  it('validates the template against the backup rules', () => {
    const rules: RulesView = { ...noRules, allowed: { excludedResources: ['secrets'] } };
    const errors = validateScheduleForm(form({ excludedResources: 'configmaps', includedResources: 'Pods', labelSelector: 'a b' }), rules);
    expect(errors.excludedResources).toBe('configmaps is not allowed here; allowed: secrets.');
    expect(errors.includedResources).toMatch(/"Pods" is not a resource name/);
    expect(errors.labelSelector).toBeTruthy();
  });
});

describe('buildScheduleRequest', () => {
  it('builds the body the demo gateway accepted', () => {
    expect(buildScheduleRequest(form({ name: 'sched-probe', schedule: '*/5  * * * *', ttl: '24h0m0s', excludedResources: 'secrets', skipImmediately: true }))).toEqual({
      name: 'sched-probe',
      spec: { schedule: '*/5 * * * *', template: { backupSpec: { excludedResources: ['secrets'], ttl: '24h0m0s' } }, skipImmediately: true },
    });
  });

  it('sends a label selector and paused', () => {
    const request = buildScheduleRequest(form({ labelSelector: 'app=web', paused: true, schedule: '@daily' }));
    expect(request.spec).toEqual({ schedule: '@daily', template: { backupSpec: { labelSelector: { matchLabels: { app: 'web' } } } }, paused: true });
  });

  it('builds the NonAdminSchedule object', () => {
    expect(scheduleManifest('team-a', buildScheduleRequest(form()))).toEqual({
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminSchedule',
      metadata: { name: 'nightly', namespace: 'team-a' },
      spec: { schedule: '0 2 * * *', template: { backupSpec: {} } },
    });
  });
});

describe('scheduleFieldOfPath', () => {
  it('maps the paths of real 422 answers', () => {
    expect(scheduleFieldOfPath('spec.schedule')).toBe('schedule');
    expect(scheduleFieldOfPath('spec.template.backupSpec.ttl')).toBe('ttl');
    expect(scheduleFieldOfPath('spec.template.backupSpec.excludedResources[0]')).toBe('excludedResources');
    expect(scheduleFieldOfPath('spec.template.backupSpec.labelSelector.matchLabels')).toBe('labelSelector');
    expect(scheduleFieldOfPath('metadata.name')).toBe('name');
    expect(scheduleFieldOfPath('spec.template.backupSpec.includedNamespaces')).toBeNull();
  });
});
