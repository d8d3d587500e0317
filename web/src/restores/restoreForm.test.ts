// Tests of the restore wizard's form logic: validation, request body, YAML object, CLI and 422 mapping.
import { describe, expect, it } from 'vitest';
import type { NonAdminBackup, RulesView } from '../api/types';
import { backupList, backupUiHist1 } from '../testing/objectAnswers';
import {
  buildRestoreRequest,
  errorsOfStep,
  initialRestoreForm,
  isRestorable,
  restoreCreateCli,
  restoreFieldOfPath,
  restoreManifest,
  validateRestoreForm,
  type RestoreForm,
} from './restoreForm';

const noRules: RulesView = { enforced: {}, defaults: {}, maximum: {}, allowed: {} };

function form(overrides: Partial<RestoreForm> = {}): RestoreForm {
  return { ...initialRestoreForm('ui-hist-1', 'ui-hist-1-20261123060000', noRules), ...overrides };
}

describe('initialRestoreForm', () => {
  it('starts with Velero defaults', () => {
    expect(initialRestoreForm('ui-hist-1', 'r1', noRules)).toEqual({
      name: 'r1',
      backupName: 'ui-hist-1',
      includedResources: '',
      excludedResources: '',
      labelSelector: '',
      restorePVs: true,
      existingResourcePolicy: 'none',
    });
  });

  it('takes enforced and default values from the policy', () => {
    const rules: RulesView = {
      ...noRules,
      enforced: { restorePVs: false },
      defaults: { existingResourcePolicy: 'update', excludedResources: ['secrets'], labelSelector: { matchLabels: { app: 'web' } } },
    };
    const initial = initialRestoreForm('b', 'r', rules);
    expect(initial.restorePVs).toBe(false);
    expect(initial.existingResourcePolicy).toBe('update');
    expect(initial.excludedResources).toBe('secrets');
    expect(initial.labelSelector).toBe('app=web');
  });
});

describe('isRestorable', () => {
  it('accepts Completed and PartiallyFailed backups only', () => {
    expect(isRestorable(backupUiHist1)).toBe(true);
    const failed = { ...backupUiHist1, status: { ...backupUiHist1.status, veleroBackup: { status: { phase: 'Failed' } } } } satisfies NonAdminBackup;
    expect(isRestorable(failed)).toBe(false);
    const partial = { ...backupUiHist1, status: { ...backupUiHist1.status, veleroBackup: { status: { phase: 'PartiallyFailed' } } } } satisfies NonAdminBackup;
    expect(isRestorable(partial)).toBe(true);
    const deleting = { ...backupUiHist1, metadata: { ...backupUiHist1.metadata, deletionTimestamp: '2026-11-23T06:00:00Z' } };
    expect(isRestorable(deleting)).toBe(false);
    const vanished = { ...backupUiHist1, status: { ...backupUiHist1.status, phase: 'BackingOff' } } satisfies NonAdminBackup;
    expect(isRestorable(vanished)).toBe(false);
  });
});

describe('validateRestoreForm', () => {
  it('accepts the initial form', () => {
    expect(validateRestoreForm(form(), noRules, backupList)).toEqual({});
  });

  it('reports each field problem', () => {
    const errors = validateRestoreForm(
      form({ name: 'Bad_Name', backupName: 'nope', includedResources: 'Pods', excludedResources: '', labelSelector: 'app in (', existingResourcePolicy: 'none' }),
      noRules,
      backupList,
    );
    expect(errors.name).toMatch(/^Use lowercase/);
    expect(errors.backupName).toBe('There is no backup named nope in this namespace.');
    expect(errors.includedResources).toMatch(/"Pods" is not a resource name/);
    expect(errors.labelSelector).toBe('unbalanced parentheses');
  });

  it('refuses a resource both included and excluded', () => {
    expect(validateRestoreForm(form({ includedResources: 'deployments, secrets', excludedResources: 'secrets' }), noRules).excludedResources).toBe(
      'Listed as both included and excluded: secrets.',
    );
  });

  it('applies the restore rules', () => {
    const rules: RulesView = { ...noRules, allowed: { existingResourcePolicy: ['none'] }, enforced: { restorePVs: false } };
    const errors = validateRestoreForm(form({ existingResourcePolicy: 'update', restorePVs: true }), rules);
    expect(errors.existingResourcePolicy).toBe('update is not allowed here; allowed: none.');
    expect(errors.restorePVs).toBe('The administrator fixed this to false.');
  });

  it('groups errors by wizard step', () => {
    const errors = validateRestoreForm(form({ backupName: '', name: '' }), noRules);
    expect(errorsOfStep(errors, 'backup')).toEqual({ backupName: 'Choose a backup to restore from.' });
    expect(errorsOfStep(errors, 'options')).toEqual({ name: 'Enter a name.' });
  });
});

describe('buildRestoreRequest', () => {
  it('sends only the backup when nothing else was chosen', () => {
    expect(buildRestoreRequest(form({ name: 'r1' }), noRules)).toEqual({ name: 'r1', spec: { restoreSpec: { backupName: 'ui-hist-1' } } });
  });

  it('sends the chosen options', () => {
    const request = buildRestoreRequest(
      form({
        name: 'r1',
        includedResources: 'deployments, configmaps',
        excludedResources: 'secrets',
        labelSelector: 'app=web,tier!=db',
        restorePVs: false,
        existingResourcePolicy: 'update',
      }),
      noRules,
    );
    expect(request).toEqual({
      name: 'r1',
      spec: {
        restoreSpec: {
          backupName: 'ui-hist-1',
          includedResources: ['deployments', 'configmaps'],
          excludedResources: ['secrets'],
          labelSelector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
          restorePVs: false,
          existingResourcePolicy: 'update',
        },
      },
    });
  });

  it('leaves out what the policy fills in anyway, but sends a choice against its default', () => {
    const rules: RulesView = { ...noRules, defaults: { existingResourcePolicy: 'update' } };
    expect(buildRestoreRequest(form({ name: 'r', existingResourcePolicy: 'update' }), rules).spec.restoreSpec).toEqual({ backupName: 'ui-hist-1' });
    expect(buildRestoreRequest(form({ name: 'r', existingResourcePolicy: 'none' }), rules).spec.restoreSpec).toEqual({
      backupName: 'ui-hist-1',
      existingResourcePolicy: 'none',
    });
  });
});

describe('copy as YAML / CLI', () => {
  it('builds the NonAdminRestore object', () => {
    const request = buildRestoreRequest(form({ name: 'r1' }), noRules);
    expect(restoreManifest('team-a', request)).toEqual({
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminRestore',
      metadata: { name: 'r1', namespace: 'team-a' },
      spec: { restoreSpec: { backupName: 'ui-hist-1' } },
    });
  });

  it('builds the nac command when the CLI can express the options', () => {
    expect(restoreCreateCli('team-a', buildRestoreRequest(form({ name: 'r1' }), noRules))).toBe('nac restore create r1 --from-backup ui-hist-1 -n team-a');
    expect(
      restoreCreateCli('team-a', buildRestoreRequest(form({ name: 'r1', includedResources: 'deployments configmaps', excludedResources: 'secrets' }), noRules)),
    ).toBe('nac restore create r1 --from-backup ui-hist-1 -n team-a --include-resources deployments,configmaps --exclude-resources secrets');
  });

  it('gives no command for options the CLI lacks', () => {
    expect(restoreCreateCli('team-a', buildRestoreRequest(form({ name: 'r1', restorePVs: false }), noRules))).toBeNull();
    expect(restoreCreateCli('team-a', buildRestoreRequest(form({ name: 'r1', labelSelector: 'app=web' }), noRules))).toBeNull();
  });
});

describe('restoreFieldOfPath', () => {
  it('maps the paths of real 422 answers', () => {
    expect(restoreFieldOfPath('metadata.name')).toBe('name');
    expect(restoreFieldOfPath('spec.restoreSpec.backupName')).toBe('backupName');
    expect(restoreFieldOfPath('spec.restoreSpec.includedResources[0]')).toBe('includedResources');
    expect(restoreFieldOfPath('spec.restoreSpec.labelSelector.matchLabels')).toBe('labelSelector');
    expect(restoreFieldOfPath('spec.restoreSpec.existingResourcePolicy')).toBe('existingResourcePolicy');
    expect(restoreFieldOfPath('spec.restoreSpec.namespaceMapping')).toBeNull();
    expect(restoreFieldOfPath('spec.restoreSpec.includedNamespaces')).toBeNull();
  });
});
