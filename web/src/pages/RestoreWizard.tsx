// The restore wizard: 1. the backup (fixed from /backups/:name/restore, else picked among the
// Completed/PartiallyFailed ones), 2. what to restore within what the administrator allows,
// 3. a preview of what the restore would do (`?dryRun=true`: each object created, updated or
// skipped and why, in restore order, and running operations it would wait on), 4. review with
// copy-as, then create (Idempotency-Key) and go to the new restore. Fields are
// validated as typed; the server's 422 field errors appear on their step's fields.
import { useEffect, useMemo, useState } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router';
import {
  Alert,
  Checkbox,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Form,
  FormGroup,
  List,
  ListItem,
  PageSection,
  Radio,
  Spinner,
  Stack,
  Title,
  Wizard,
  WizardStep,
  useWizardContext,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { api } from '../api/client';
import { isTenantObject, tenantObject, type NonAdminBackup } from '../api/types';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { FieldHelper, PolicyPanel, ResourceSelectionFields, TextField } from '../components/FormFields';
import { PhaseLabel } from '../components/PhaseLabel';
import { useCreateForm, usePolicy } from '../components/useCreateForm';
import { formatTimestamp, formatUntil } from '../format';
import { useLoad } from '../hooks';
import { generatedName, parseNameList } from '../lib/fields';
import { listAll } from '../lib/listAll';
import { allowedChoices, ruleFor, ruleHint } from '../lib/specRules';
import { restoreCreateAction } from '../restores/actions';
import { RestorePreviewPanel } from '../manifests/RestorePreviewPanel';
import {
  EXISTING_RESOURCE_POLICIES,
  STEP_OF_FIELD,
  backupPhase,
  buildRestoreRequest,
  errorsOfStep,
  initialRestoreForm,
  isRestorable,
  restoreFieldOfPath,
  validateRestoreForm,
  type RestoreField,
  type RestoreForm,
  type RestoreStep,
} from '../restores/restoreForm';
import { fmt, t } from '../strings';

const w = t.restores.wizard;

const finishedAt = (backup: NonAdminBackup) => backup.status?.veleroBackup?.status?.completionTimestamp ?? backup.metadata.creationTimestamp ?? '';

/** Restorable backups, most recently finished first (pure). */
export function restorableBackups(backups: NonAdminBackup[]): NonAdminBackup[] {
  return backups.filter(isRestorable).sort((a, b) => finishedAt(b).localeCompare(finishedAt(a)) || a.metadata.name.localeCompare(b.metadata.name));
}

function BackupFacts({ backup }: { backup: NonAdminBackup }) {
  const status = backup.status?.veleroBackup?.status;
  const phase = backupPhase(backup);
  const location = backup.spec.backupSpec.storageLocation;
  return (
    <>
      <DescriptionList isHorizontal isCompact data-testid="backup-facts">
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupName}</DescriptionListTerm>
          <DescriptionListDescription>{backup.metadata.name}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupPhase}</DescriptionListTerm>
          <DescriptionListDescription>
            <PhaseLabel phase={phase} />
          </DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupWhen}</DescriptionListTerm>
          <DescriptionListDescription>{formatTimestamp(status?.completionTimestamp ?? backup.metadata.creationTimestamp)}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupItems}</DescriptionListTerm>
          <DescriptionListDescription>
            {status?.progress?.totalItems !== undefined ? fmt(t.common.items, { done: status.progress.itemsBackedUp ?? 0, total: status.progress.totalItems }) : t.common.none}
          </DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupWarnings}</DescriptionListTerm>
          <DescriptionListDescription>
            {status?.warnings ?? 0} / {status?.errors ?? 0}
          </DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupExpires}</DescriptionListTerm>
          <DescriptionListDescription>{status?.expiration ? `${formatTimestamp(status.expiration)} (${formatUntil(status.expiration)})` : t.common.none}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.backupLocation}</DescriptionListTerm>
          <DescriptionListDescription>{location || w.backupLocationDefault}</DescriptionListDescription>
        </DescriptionListGroup>
      </DescriptionList>
      {phase === 'PartiallyFailed' && <Alert variant="warning" isInline isPlain title={w.partialWarning} />}
    </>
  );
}

/** Moves the wizard to a step on request (after a refused create). */
function StepJumper({ target, onDone }: { target: RestoreStep | null; onDone: () => void }) {
  const { goToStepById } = useWizardContext();
  useEffect(() => {
    if (!target) return;
    goToStepById(target);
    onDone();
  }, [target, goToStepById, onDone]);
  return null;
}

export default function RestoreWizard() {
  const { namespace = '', name: fixedBackup } = useParams();
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const base = `/ns/${encodeURIComponent(namespace)}`;

  const policy = usePolicy(namespace);
  const backups = useLoad<NonAdminBackup[]>(
    (signal) =>
      fixedBackup
        ? api.get('/api/v1/namespaces/{namespace}/backups/{name}', { path: { namespace, name: fixedBackup }, signal }).then((backup) => [tenantObject('backups', backup)])
        : listAll(namespace, 'backups', signal).then((all) => all.items),
    `${namespace}/${fixedBackup ?? ''}`,
  );
  const rules = policy.data?.restore;

  const state = useCreateForm<RestoreForm | null, RestoreField>(null, restoreFieldOfPath, 'name');
  const { form, setForm, update, touched, serverErrors, unplaced, submitError, submitting } = state;
  const [jumpTo, setJumpTo] = useState<RestoreStep | null>(null);

  // The form starts once the policy answered (or failed: the server still enforces it).
  const policySettled = policy.data !== undefined || !!policy.error;
  useEffect(() => {
    if (form || !policySettled) return;
    const backup = fixedBackup ?? search.get('backup') ?? '';
    setForm(initialRestoreForm(backup, generatedName(`${backup || 'restore'}-restore`, new Date()), policy.data?.restore));
  }, [form, policySettled, fixedBackup, search, policy.data, setForm]);

  const clientErrors = useMemo(() => (form ? validateRestoreForm(form, rules, backups.data) : {}), [form, rules, backups.data]);
  const shownError = (field: RestoreField): string | undefined => state.shown(field, clientErrors);
  const stepHasShownErrors = (step: RestoreStep) => (Object.keys(STEP_OF_FIELD) as RestoreField[]).some((field) => STEP_OF_FIELD[field] === step && !!shownError(field));

  if (!form) {
    return (
      <PageSection data-testid="restore-wizard-page">
        <Spinner aria-label={t.app.loading} />
      </PageSection>
    );
  }

  const request = buildRestoreRequest(form, rules);
  const action = restoreCreateAction(namespace, request);
  const restorable = restorableBackups(backups.data ?? []);
  const selected = (backups.data ?? []).find((backup) => backup.metadata.name === form.backupName);
  const backupStepErrors = errorsOfStep(clientErrors, 'backup');
  const optionStepErrors = errorsOfStep(clientErrors, 'options');
  const policyChoices = allowedChoices(rules, 'existingResourcePolicy', EXISTING_RESOURCE_POLICIES);
  const pvRule = ruleFor(rules, 'restorePVs');
  const policyRule = ruleFor(rules, 'existingResourcePolicy');

  const submit = async () => {
    const allErrors = validateRestoreForm(form, rules, backups.data);
    if (state.showErrors(allErrors)) {
      setJumpTo(STEP_OF_FIELD[(Object.keys(allErrors) as RestoreField[])[0]]);
      return;
    }
    const placed = await state.send(request, async (idempotencyKey) => {
      const created = await api.post('/api/v1/namespaces/{namespace}/restores', { path: { namespace }, body: request, idempotencyKey });
      const createdName = isTenantObject('restores', created) ? created.metadata.name : request.name;
      void navigate(`${base}/restores/${encodeURIComponent(createdName)}`);
    });
    const refusedFields = Object.keys(placed ?? {}) as RestoreField[];
    if (refusedFields.length) setJumpTo(STEP_OF_FIELD[refusedFields[0]]);
  };

  const close = () => void navigate(fixedBackup ? `${base}/backups/${encodeURIComponent(fixedBackup)}` : `${base}/restores`);
  const nextProps = { 'data-testid': 'wizard-next' } as never;
  const backProps = { 'data-testid': 'wizard-back' } as never;

  const backupStep = (
    <Stack hasGutter>
      <Title headingLevel="h2" size="lg">
        {fixedBackup ? w.thisBackup : w.chooseBackup}
      </Title>
      {backups.error ? (
        <ErrorAlert error={backups.error} onRetry={backups.reload} />
      ) : !backups.data ? (
        <Spinner size="lg" aria-label={t.app.loading} />
      ) : fixedBackup ? null : restorable.length === 0 ? (
        <Alert variant="info" isInline title={w.noBackups} data-testid="backup-picker-empty" />
      ) : (
        <Table aria-label={w.pickerLabel} variant="compact" gridBreakPoint="grid-md" data-testid="backup-picker">
          <Thead>
            <Tr>
              <Th screenReaderText={w.chooseBackup} />
              <Th>{w.backupName}</Th>
              <Th>{w.backupPhase}</Th>
              <Th>{w.backupWhen}</Th>
              <Th>{w.backupItems}</Th>
            </Tr>
          </Thead>
          <Tbody>
            {restorable.map((backup, rowIndex) => {
              const status = backup.status?.veleroBackup?.status;
              return (
                <Tr key={backup.metadata.name} data-testid="backup-option" data-name={backup.metadata.name} isRowSelected={form.backupName === backup.metadata.name}>
                  <Td>
                    <Radio
                      id={`backup-${rowIndex}`}
                      name="backup"
                      aria-label={backup.metadata.name}
                      isChecked={form.backupName === backup.metadata.name}
                      onChange={() => update('backupName', backup.metadata.name)}
                    />
                  </Td>
                  <Td dataLabel={w.backupName}>{backup.metadata.name}</Td>
                  <Td dataLabel={w.backupPhase}>
                    <PhaseLabel phase={backupPhase(backup)} />
                  </Td>
                  <Td dataLabel={w.backupWhen}>{formatTimestamp(status?.completionTimestamp ?? backup.metadata.creationTimestamp)}</Td>
                  <Td dataLabel={w.backupItems}>{status?.progress?.totalItems ?? t.common.none}</Td>
                </Tr>
              );
            })}
          </Tbody>
        </Table>
      )}
      {selected && <BackupFacts backup={selected} />}
      <FieldHelper id="backup" error={(backups.data && (serverErrors.backupName ?? (fixedBackup || touched.has('backupName') ? backupStepErrors.backupName : undefined))) || undefined} />
    </Stack>
  );

  const optionsStep = (
    <Form onSubmit={(event) => event.preventDefault()} aria-label={w.stepOptions}>
      <Content component="p">{fmt(w.intro, { namespace })}</Content>
      <TextField id="restore-name" label={w.restoreName} value={form.name} onChange={(value) => update('name', value)} error={shownError('name')} hint={w.restoreNameHelp} isRequired testId="restore-name" />
      <ResourceSelectionFields idPrefix="restore" labels={w} values={form} errorOf={shownError} onChange={update} rules={rules} lockEnforced />
      <FormGroup fieldId="restore-pvs" label={w.reviewPVs}>
        <Checkbox
          id="restore-pvs"
          label={w.restorePVs}
          description={w.restorePVsHelp}
          isChecked={form.restorePVs}
          onChange={(_event, checked) => update('restorePVs', checked)}
          isDisabled={pvRule.enforced !== undefined}
          data-testid="restore-pvs"
        />
        <FieldHelper id="restore-pvs" error={shownError('restorePVs')} hint={ruleHint(rules, 'restorePVs')} />
      </FormGroup>
      <FormGroup role="radiogroup" fieldId="existing-policy" label={w.existingPolicy} isStack>
        {EXISTING_RESOURCE_POLICIES.map((choice) => (
          <Radio
            key={choice}
            id={`existing-policy-${choice}`}
            name="existing-policy"
            label={choice === 'none' ? w.existingNone : w.existingUpdate}
            isChecked={form.existingResourcePolicy === choice}
            isDisabled={!policyChoices.includes(choice) || policyRule.enforced !== undefined}
            onChange={() => update('existingResourcePolicy', choice)}
            data-testid={`existing-policy-${choice}`}
          />
        ))}
        <FieldHelper id="existing-policy" error={shownError('existingResourcePolicy')} hint={ruleHint(rules, 'existingResourcePolicy') ?? w.existingHelp} />
      </FormGroup>
      <Alert variant="info" isInline isPlain title={fmt(w.mappingNote, { namespace })} data-testid="mapping-note" />
      {policy.error ? <Alert variant="warning" isInline title={t.restores.policy.loadFailed} /> : null}
      <PolicyPanel title={t.restores.policy.title} rules={rules} restrictions={policy.data?.restrictions} />
    </Form>
  );

  const included = parseNameList(form.includedResources);
  const excluded = parseNameList(form.excludedResources);
  const reviewStep = (
    <Stack hasGutter data-testid="restore-review">
      <StepJumper target={jumpTo} onDone={() => setJumpTo(null)} />
      <Title headingLevel="h2" size="lg">
        {w.review}
      </Title>
      <DescriptionList isHorizontal isCompact>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewFrom}</DescriptionListTerm>
          <DescriptionListDescription>{form.backupName}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewName}</DescriptionListTerm>
          <DescriptionListDescription>{form.name}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewResources}</DescriptionListTerm>
          <DescriptionListDescription>
            {included.length ? included.join(', ') : w.reviewAllResources}
            {excluded.length ? ` — ${w.reviewExcluded} ${excluded.join(', ')}` : ''}
          </DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewSelector}</DescriptionListTerm>
          <DescriptionListDescription>{form.labelSelector.trim() || w.reviewEverything}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewPVs}</DescriptionListTerm>
          <DescriptionListDescription>{form.restorePVs ? t.common.yes : t.common.no}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>{w.reviewExisting}</DescriptionListTerm>
          <DescriptionListDescription>{form.existingResourcePolicy === 'update' ? w.existingUpdate : w.existingNone}</DescriptionListDescription>
        </DescriptionListGroup>
      </DescriptionList>
      {submitError ? (
        <div data-testid="restore-submit-error">
          <ErrorAlert error={submitError} />
        </div>
      ) : null}
      {unplaced.length > 0 && (
        <Alert variant="danger" isInline title={w.refusedOther} data-testid="restore-unplaced-errors">
          <List>
            {unplaced.map((error) => (
              <ListItem key={error.field}>
                <code>{error.field}</code>: {error.message}
              </ListItem>
            ))}
          </List>
        </Alert>
      )}
      <CopyAs title={w.copyTitle} action={action} />
      {!action.cli && <Content component="small">{w.cliUnavailable}</Content>}
    </Stack>
  );

  return (
    <PageSection data-testid="restore-wizard-page">
      <Title headingLevel="h1">{fixedBackup ? fmt(w.titleFrom, { backup: fixedBackup }) : w.title}</Title>
      <Wizard
        navAriaLabel={w.navLabel}
        onClose={close}
        onSave={() => void submit()}
        isVisitRequired={false}
        data-testid="restore-wizard"
        height="auto"
      >
        <WizardStep
          id="backup"
          name={w.stepBackup}
          status={stepHasShownErrors('backup') ? 'error' : 'default'}
          footer={{ isNextDisabled: !!backupStepErrors.backupName, nextButtonProps: nextProps, cancelButtonText: w.cancel }}
        >
          {backupStep}
        </WizardStep>
        <WizardStep
          id="options"
          name={w.stepOptions}
          status={stepHasShownErrors('options') ? 'error' : 'default'}
          isDisabled={!!backupStepErrors.backupName}
          footer={{ isNextDisabled: Object.keys(optionStepErrors).length > 0, nextButtonProps: nextProps, backButtonProps: backProps, cancelButtonText: w.cancel }}
        >
          {optionsStep}
        </WizardStep>
        <WizardStep
          id="preview"
          name={t.manifests.preview.step}
          isDisabled={Object.keys(clientErrors).length > 0}
          footer={{ isNextDisabled: Object.keys(clientErrors).length > 0, nextButtonProps: nextProps, backButtonProps: backProps, cancelButtonText: w.cancel }}
        >
          <RestorePreviewPanel namespace={namespace} request={request} />
        </WizardStep>
        <WizardStep
          id="review"
          name={w.stepReview}
          isDisabled={Object.keys(clientErrors).length > 0}
          footer={{
            nextButtonText: submitting ? w.creating : w.create,
            isNextDisabled: submitting || Object.keys(clientErrors).length > 0,
            nextButtonProps: nextProps,
            backButtonProps: backProps,
            cancelButtonText: w.cancel,
          }}
        >
          {reviewStep}
        </WizardStep>
      </Wizard>
    </PageSection>
  );
}
