// Create a backup (`/ns/:namespace/backups/new`): a form over the backup spec that first shows
// what the administrator enforces (enforced values read-only, defaults as placeholders, maxima as
// limits), validates as the user types, sends one Idempotency-Key per distinct request (double
// clicks never create two backups), shows the server's 422 field errors at their inputs, and
// opens the new backup on 201. "Preview (dry run)" posts the same body with `?dryRun=true` and
// shows what the backup would take (counts by kind, items, unreadable lists, running operations
// it would wait on) without creating anything. Without a storage location, the help says where
// the backup goes when the namespace uses the shared backup pool.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import {
  ActionGroup,
  Alert,
  Button,
  Checkbox,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  ExpandableSection,
  Form,
  FormGroup,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  Grid,
  GridItem,
  HelperText,
  HelperTextItem,
  List,
  ListItem,
  PageSection,
  Spinner,
  TextInput,
  Title,
} from '@patternfly/react-core';
import LockIcon from '@patternfly/react-icons/dist/esm/icons/lock-icon';
import { api, ApiError } from '../api/client';
import { isTenantObject, type BackupDryRun, type FieldError, type PolicyView, type RulesView } from '../api/types';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { usePolicy } from '../components/useCreateForm';
import { useLoad } from '../hooks';
import { idempotencyKeyFor, newIdempotencyKey } from '../lib/fields';
import { listPage } from '../lib/listAll';
import { fmt, t } from '../strings';
import { createAction } from '../backups/actions';
import { sharedStorageView, useSharedStorage } from '../locations/sharedStorage';
import { DryRunResult } from '../manifests/DryRunResult';
import {
  buildCreateBody,
  EMPTY_FORM,
  fieldRules,
  formatPolicyValue,
  hasErrors,
  initialForm,
  mapFieldErrors,
  validateForm,
  type BackupForm,
  type FieldRules,
  type FormField,
  type SpecField,
  type TriState,
} from '../backups/createForm';

const c = t.backups.create;

/** The order in which fields are checked and focused. */
const FIELD_ORDER: FormField[] = ['name', 'includedResources', 'excludedResources', 'labelSelector', 'ttl', 'storageLocation', 'snapshotVolumes', 'defaultVolumesToFsBackup'];

const inputId = (field: FormField) => `field-${field}`;

function PolicyPanel({ policy, error, loading }: { policy?: PolicyView; error: unknown; loading: boolean }) {
  if (loading && !policy) return <Spinner size="md" aria-label={c.policyLoading} />;
  if (error || !policy) return <Alert variant="warning" isInline title={c.policyUnavailable} data-testid="policy-panel" />;
  const rules = policy.backup;
  const sections: { title: string; entries: [string, unknown][] }[] = [
    { title: c.policyEnforced, entries: Object.entries(rules.enforced ?? {}) },
    { title: c.policyDefaults, entries: Object.entries(rules.defaults ?? {}) },
    { title: c.policyMaximum, entries: Object.entries(rules.maximum ?? {}) },
    { title: c.policyAllowed, entries: Object.entries(rules.allowed ?? {}) },
  ].filter((section) => section.entries.length > 0);
  return (
    <Alert variant="info" isInline title={c.policyTitle} data-testid="policy-panel">
      <Content component="p">{fmt(c.policyIntro, { namespace: policy.namespace })}</Content>
      {sections.length === 0 ? (
        <Content component="p">{c.policyNone}</Content>
      ) : (
        <DescriptionList isCompact isHorizontal data-testid="policy-rules">
          {sections.map((section) => (
            <DescriptionListGroup key={section.title}>
              <DescriptionListTerm>{section.title}</DescriptionListTerm>
              <DescriptionListDescription>
                <List isPlain>
                  {section.entries.map(([path, value]) => (
                    <ListItem key={path}>
                      <code>{path}</code>: {formatPolicyValue(path, value)}
                    </ListItem>
                  ))}
                </List>
              </DescriptionListDescription>
            </DescriptionListGroup>
          ))}
        </DescriptionList>
      )}
      {policy.restrictions.length > 0 && (
        <ExpandableSection toggleText={c.policyRestrictions} isIndented>
          <List data-testid="policy-restrictions">
            {policy.restrictions.map((restriction) => (
              <ListItem key={restriction}>{restriction}</ListItem>
            ))}
          </List>
        </ExpandableSection>
      )}
    </Alert>
  );
}

/** Helper text under an input: the as-you-type error, the server's errors, then the rules. */
function FieldHelp({ field, help, error, serverErrors, rules }: { field: FormField; help?: string; error?: string | null; serverErrors?: string[]; rules?: FieldRules }) {
  const ruleItems: { key: string; text: string; enforced?: boolean }[] = [];
  if (rules?.enforced !== undefined) ruleItems.push({ key: 'enforced', text: fmt(c.enforcedHint, { value: formatPolicyValue(field, rules.enforced) }), enforced: true });
  for (const part of rules?.enforcedParts ?? []) {
    ruleItems.push({ key: part.path, text: fmt(c.enforcedHint, { value: `${part.path} = ${formatPolicyValue(part.path, part.value)}` }), enforced: true });
  }
  if (rules?.maximum !== undefined) ruleItems.push({ key: 'maximum', text: fmt(c.maximumHint, { value: formatPolicyValue(field, rules.maximum) }) });
  if (rules?.allowed) ruleItems.push({ key: 'allowed', text: fmt(c.allowedHint, { values: formatPolicyValue(field, rules.allowed.filter((a) => a !== null)) }) });
  return (
    <FormHelperText>
      <HelperText id={`${inputId(field)}-help`} isLiveRegion>
        {error && (
          <HelperTextItem variant="error" data-testid={`error-${field}`}>
            {error}
          </HelperTextItem>
        )}
        {(serverErrors ?? []).map((message) => (
          <HelperTextItem key={message} variant="error" data-testid={`server-error-${field}`}>
            {message}
          </HelperTextItem>
        ))}
        {ruleItems.map((item) => (
          <HelperTextItem key={item.key} icon={item.enforced ? <LockIcon /> : undefined} data-testid={item.enforced ? `enforced-${field}` : undefined}>
            {item.text}
          </HelperTextItem>
        ))}
        {!error && !serverErrors?.length && help && <HelperTextItem>{help}</HelperTextItem>}
      </HelperText>
    </FormHelperText>
  );
}

export default function BackupCreate() {
  const { namespace = '' } = useParams();
  const navigate = useNavigate();
  const policy = usePolicy(namespace);
  const locations = useLoad(
    (signal) => listPage(namespace, 'storage-locations', {}, signal),
    `${namespace}/storage-locations`,
  );
  const rules: RulesView | undefined = policy.data?.backup;
  const sharedStorage = sharedStorageView(useSharedStorage(namespace).data);

  const [form, setForm] = useState<BackupForm>(EMPTY_FORM);
  const [touched, setTouched] = useState<Partial<Record<FormField, boolean>>>({});
  const [showAll, setShowAll] = useState(false);
  const [serverErrors, setServerErrors] = useState<Partial<Record<FormField, string[]>>>({});
  const [unmatched, setUnmatched] = useState<FieldError[]>([]);
  const [failure, setFailure] = useState<unknown>();
  const [submitting, setSubmitting] = useState(false);
  const [previewing, setPreviewing] = useState(false);
  const [dryRun, setDryRun] = useState<{ body: string; result: BackupDryRun }>();
  const submittingRef = useRef(false);

  // Enforced values are filled in once the policy is known (without overwriting what was typed).
  const filledFrom = useRef<RulesView>(undefined);
  useEffect(() => {
    if (!rules || filledFrom.current === rules) return;
    filledFrom.current = rules;
    const enforced = initialForm(rules);
    setForm((current) => {
      const next = { ...current };
      for (const field of FIELD_ORDER) {
        if (field !== 'name' && fieldRules(rules, field).enforced !== undefined) (next as Record<string, string>)[field] = enforced[field];
      }
      return next;
    });
  }, [rules]);

  const errors = validateForm(form, rules);
  const body = buildCreateBody(form, rules);
  const bodyText = JSON.stringify(body);
  // One key per distinct request: a double click or a retry after a lost answer reuses it.
  const keyRef = useRef<{ body: string; key: string } | null>(null);

  const set = <K extends FormField>(field: K, value: BackupForm[K]) => {
    setForm((current) => ({ ...current, [field]: value }));
    setTouched((current) => ({ ...current, [field]: true }));
    setServerErrors((current) => ({ ...current, [field]: undefined }));
  };
  const visibleError = (field: FormField) => (touched[field] || showAll ? errors[field] : null);
  const validated = (field: FormField) => (visibleError(field) || serverErrors[field]?.length ? 'error' : 'default');
  const describedBy = (field: FormField) => `${inputId(field)}-help`;

  /** Sends the body (created, or with `dryRun` only previewed); 422 field errors go to their inputs. */
  const send = async (dryRunOnly: boolean) => {
    if (submittingRef.current) return;
    setShowAll(true);
    if (hasErrors(errors)) {
      const first = FIELD_ORDER.find((field) => errors[field]);
      if (first) document.getElementById(inputId(first))?.focus();
      return;
    }
    submittingRef.current = true;
    (dryRunOnly ? setPreviewing : setSubmitting)(true);
    setFailure(undefined);
    setUnmatched([]);
    setServerErrors({});
    try {
      if (dryRunOnly) {
        const result = await api.post('/api/v1/namespaces/{namespace}/backups', { path: { namespace }, query: { dryRun: true }, body });
        // A dry run answers 200 with what the backup would take (201 and 202 are a created backup).
        if (!('totalItems' in result)) throw new Error('the gateway created a backup instead of previewing it');
        setDryRun({ body: bodyText, result });
      } else {
        keyRef.current = idempotencyKeyFor(keyRef.current, bodyText, newIdempotencyKey);
        const created = await api.post('/api/v1/namespaces/{namespace}/backups', { path: { namespace }, body, idempotencyKey: keyRef.current.key });
        const createdName = isTenantObject('backups', created) ? created.metadata.name : body.name;
        void navigate(`/ns/${encodeURIComponent(namespace)}/backups/${encodeURIComponent(createdName)}`);
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 422) {
        const mapped = mapFieldErrors(error.problem?.errors);
        setServerErrors(mapped.byField);
        setUnmatched(mapped.unmatched);
        if (!error.problem?.errors?.length) setFailure(error);
        const first = FIELD_ORDER.find((field) => mapped.byField[field]?.length);
        if (first) document.getElementById(inputId(first))?.focus();
      } else {
        setFailure(error);
      }
    } finally {
      submittingRef.current = false;
      (dryRunOnly ? setPreviewing : setSubmitting)(false);
    }
  };
  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    return send(false);
  };

  const r = (field: SpecField) => fieldRules(rules, field);
  const placeholderOf = (field: SpecField) => {
    const { defaultValue } = r(field);
    return defaultValue !== undefined ? fmt(c.defaultHint, { value: formatPolicyValue(field, defaultValue) }) : undefined;
  };

  const textField = (field: SpecField, label: string, help: string) => {
    const rule = r(field);
    const enforced = rule.enforced !== undefined;
    return (
      <FormGroup label={label} fieldId={inputId(field)}>
        <TextInput
          id={inputId(field)}
          value={form[field]}
          onChange={(_event, value) => set(field, value)}
          readOnlyVariant={enforced ? 'default' : undefined}
          placeholder={placeholderOf(field)}
          validated={validated(field)}
          aria-describedby={describedBy(field)}
          data-testid={inputId(field)}
        />
        <FieldHelp field={field} help={help} error={visibleError(field)} serverErrors={serverErrors[field]} rules={rule} />
      </FormGroup>
    );
  };

  const triField = (field: 'snapshotVolumes' | 'defaultVolumesToFsBackup', label: string, help: string) => {
    const rule = r(field);
    const enforced = rule.enforced !== undefined;
    const defaultLabel = rule.defaultValue !== undefined ? `${c.triDefault} (${formatPolicyValue(field, rule.defaultValue)})` : c.triDefault;
    return (
      <FormGroup label={label} fieldId={inputId(field)}>
        <FormSelect
          id={inputId(field)}
          value={form[field]}
          onChange={(_event, value) => set(field, value as TriState)}
          isDisabled={enforced}
          validated={validated(field)}
          aria-describedby={describedBy(field)}
          data-testid={inputId(field)}
        >
          <FormSelectOption value="" label={defaultLabel} />
          <FormSelectOption value="true" label={c.triYes} />
          <FormSelectOption value="false" label={c.triNo} />
        </FormSelect>
        <FieldHelp field={field} help={help} error={visibleError(field)} serverErrors={serverErrors[field]} rules={rule} />
      </FormGroup>
    );
  };

  const locationRule = r('storageLocation');
  const locationItems = (locations.data?.items ?? []).filter(
    (location) => !locationRule.allowed || locationRule.allowed.includes(location.metadata.name),
  );
  const storageLocationField = (
    <FormGroup label={c.storageLocation} fieldId={inputId('storageLocation')}>
      {locationRule.enforced !== undefined ? (
        <TextInput id={inputId('storageLocation')} value={form.storageLocation} readOnlyVariant="default" aria-describedby={describedBy('storageLocation')} data-testid={inputId('storageLocation')} />
      ) : (
        <FormSelect
          id={inputId('storageLocation')}
          value={form.storageLocation}
          onChange={(_event, value) => set('storageLocation', value)}
          validated={validated('storageLocation')}
          aria-describedby={describedBy('storageLocation')}
          data-testid={inputId('storageLocation')}
        >
          <FormSelectOption value="" label={placeholderOf('storageLocation') ?? (sharedStorage ? t.manifests.sharedStorage.defaultOption : c.storageLocationDefault)} />
          {locationItems.map((location) => {
            const phase = location.status?.veleroBackupStorageLocation?.status?.phase ?? location.status?.phase;
            return (
              <FormSelectOption
                key={location.metadata.name}
                value={location.metadata.name}
                label={phase ? fmt(c.storageLocationPhase, { name: location.metadata.name, phase }) : location.metadata.name}
              />
            );
          })}
        </FormSelect>
      )}
      <FieldHelp
        field="storageLocation"
        help={
          sharedStorage && !form.storageLocation
            ? fmt(t.manifests.sharedStorage.createHelp, { state: sharedStorage.stateLabel })
            : locations.error
              ? c.storageLocationsUnavailable
              : locations.data && locations.data.items.length === 0
                ? c.storageLocationNone
                : undefined
        }
        error={visibleError('storageLocation')}
        serverErrors={serverErrors.storageLocation}
        rules={locationRule}
      />
    </FormGroup>
  );

  return (
    <>
      <PageSection data-testid="backup-create">
        <Title headingLevel="h1">{c.title}</Title>
        <Content component="p">{fmt(c.intro, { namespace })}</Content>
      </PageSection>
      <PageSection>
        <PolicyPanel policy={policy.data} error={policy.error} loading={policy.loading} />
      </PageSection>
      <PageSection>
        <Form onSubmit={(event) => void submit(event)} noValidate maxWidth="60rem">
          <FormGroup label={c.name} isRequired fieldId={inputId('name')}>
            <TextInput
              id={inputId('name')}
              isRequired
              value={form.name}
              onChange={(_event, value) => set('name', value)}
              validated={validated('name')}
              aria-describedby={describedBy('name')}
              autoComplete="off"
              spellCheck={false}
              data-testid={inputId('name')}
            />
            <FieldHelp field="name" help={c.nameHelp} error={visibleError('name')} serverErrors={serverErrors.name} />
          </FormGroup>
          <Grid hasGutter md={6}>
            <GridItem>{textField('includedResources', c.includedResources, c.includedResourcesHelp)}</GridItem>
            <GridItem>{textField('excludedResources', c.excludedResources, c.excludedResourcesHelp)}</GridItem>
          </Grid>
          {textField('labelSelector', c.labelSelector, c.labelSelectorHelp)}
          <Grid hasGutter md={6}>
            <GridItem>{textField('ttl', c.ttl, c.ttlHelp)}</GridItem>
            <GridItem>{storageLocationField}</GridItem>
          </Grid>
          <Grid hasGutter md={6}>
            <GridItem>{triField('snapshotVolumes', c.snapshotVolumes, c.snapshotVolumesHelp)}</GridItem>
            <GridItem>{triField('defaultVolumesToFsBackup', c.defaultVolumesToFsBackup, c.defaultVolumesToFsBackupHelp)}</GridItem>
          </Grid>
          <Checkbox
            id="cluster-resources"
            label={c.clusterResourcesLabel}
            description={c.clusterResources}
            isChecked={false}
            isDisabled
            data-testid="cluster-resources"
          />
          {unmatched.length > 0 && (
            <Alert variant="danger" isInline title={c.serverRefused} data-testid="create-server-errors">
              <List>
                {unmatched.map((error) => (
                  <ListItem key={`${error.field}/${error.message}`}>
                    {error.field && <code>{error.field}</code>} {error.message}
                  </ListItem>
                ))}
              </List>
            </Alert>
          )}
          <ErrorAlert error={failure} />
          {showAll && hasErrors(errors) && <Alert variant="danger" isInline isPlain title={c.fixFirst} />}
          <ActionGroup>
            <Button type="submit" variant="primary" isLoading={submitting} isDisabled={submitting || previewing} data-testid="create-submit">
              {submitting ? c.submitting : c.submit}
            </Button>
            <Button variant="secondary" onClick={() => void send(true)} isLoading={previewing} isDisabled={submitting || previewing} data-testid="create-preview">
              {previewing ? t.manifests.dryRun.running : t.manifests.dryRun.button}
            </Button>
            <Button variant="link" component={(props: object) => <Link {...props} to={`/ns/${encodeURIComponent(namespace)}/backups`} />} data-testid="create-cancel">
              {c.cancel}
            </Button>
          </ActionGroup>
        </Form>
      </PageSection>
      {dryRun && (
        <PageSection>
          <DryRunResult result={dryRun.result} namespace={namespace} stale={dryRun.body !== bodyText} />
        </PageSection>
      )}
      <PageSection>
        <CopyAs title={c.copyAs} action={createAction(namespace, body)} />
      </PageSection>
    </>
  );
}
