// Add a storage location: provider, bucket, prefix, provider settings, the credential Secret (which
// must already exist: the kubectl command to create it is shown), default flag and access mode;
// shows the administrator's rules and whether approval is needed; validates as typed; shows the
// server's 422 field errors in place; copy as YAML / curl.
import { useMemo, useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import {
  Alert,
  Button,
  ClipboardCopy,
  Content,
  Form,
  FormGroup,
  FormSection,
  FormSelect,
  FormSelectOption,
  Grid,
  GridItem,
  PageSection,
  Radio,
  Spinner,
  Switch,
  TextInput,
} from '@patternfly/react-core';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import { api } from '../api/client';
import { CreateFormFooter, CreateFormHeading, FieldHelper, PolicyPanel, TextField } from '../components/FormFields';
import { useCreateForm, usePolicy } from '../components/useCreateForm';
import { ruleFor, ruleHint } from '../lib/specRules';
import {
  CONFIG_HINTS,
  PROVIDERS,
  buildLocationRequest,
  initialLocationForm,
  locationFieldOfPath,
  locationManifest,
  secretCommand,
  validateLocationForm,
  type LocationField,
  type LocationForm,
} from '../locations/locationForm';
import { may, useNamespaceAccess } from '../namespaces';
import { locationCreateAction } from '../restores/actions';
import { fmt, t } from '../strings';

const OTHER = '__other__';

export default function StorageLocationCreate() {
  const { namespace = '' } = useParams();
  const c = t.locations.create;
  const navigate = useNavigate();
  const access = useNamespaceAccess(namespace);
  const canCreate = may(access, 'storage-locations', 'create');
  const policy = usePolicy(namespace);
  const rules = policy.data?.storageLocation;
  const state = useCreateForm<LocationForm | null, LocationField>(null, locationFieldOfPath, 'name');
  const { form, setForm, update } = state;
  const [otherProvider, setOtherProvider] = useState(false);

  const policySettled = policy.data !== undefined || !!policy.error;
  // The form starts once the policy is known (set while rendering: React's pattern for state
  // that follows a value).
  if (!form && policySettled) {
    const initial = initialLocationForm(policy.data?.storageLocation);
    setForm(initial);
    setOtherProvider(!(PROVIDERS as readonly string[]).includes(initial.provider));
  }

  const clientErrors = useMemo(() => (form ? validateLocationForm(form, rules) : {}), [form, rules]);
  const shown = (field: LocationField) => state.shown(field, clientErrors);

  if (!form) {
    return (
      <PageSection data-testid="location-create-page">
        <Spinner aria-label={t.app.loading} />
      </PageSection>
    );
  }

  const setConfig = (index: number, part: 'key' | 'value', value: string) =>
    update(
      'config',
      form.config.map((entry, i) => (i === index ? { ...entry, [part]: value } : entry)),
      'config',
    );

  const request = buildLocationRequest(form);
  const action = locationCreateAction(namespace, request, locationManifest(namespace, request));
  const hints = (CONFIG_HINTS[form.provider] ?? []).filter((key) => !form.config.some((entry) => entry.key === key));
  const enforced = (path: string) => ruleFor(rules, path).enforced !== undefined;

  const list = `/ns/${encodeURIComponent(namespace)}/storage-locations`;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (state.showErrors(clientErrors)) return;
    await state.send(request, async (idempotencyKey) => {
      await api.post('/api/v1/namespaces/{namespace}/storage-locations', { path: { namespace }, body: request, idempotencyKey });
      void navigate(list);
    });
  };

  const approvalNote = policy.data ? (
    <Alert
      variant={policy.data.requireApprovalForStorageLocations ? 'warning' : 'info'}
      isInline
      isPlain
      title={policy.data.requireApprovalForStorageLocations ? c.approvalRequired : c.approvalNotRequired}
      data-testid="location-approval-note"
    />
  ) : null;

  return (
    <PageSection data-testid="location-create-page">
      <CreateFormHeading title={c.title} intro={fmt(c.intro, { namespace })} notAllowed={!canCreate && access ? t.locations.list.noCreate : null} policyFailed={!!policy.error}>
        {approvalNote}
      </CreateFormHeading>
      <Form onSubmit={(event) => void submit(event)} aria-label={c.title} data-testid="location-form" style={{ maxWidth: '48rem' }}>
        <TextField id="location-name" label={c.name} value={form.name} onChange={(v) => update('name', v)} error={shown('name')} hint={c.nameHelp} isRequired testId="location-name" />
        <FormGroup label={c.provider} fieldId="location-provider" isRequired>
          <FormSelect
            id="location-provider"
            value={otherProvider ? OTHER : form.provider}
            onChange={(_event, value) => {
              if (value === OTHER) {
                setOtherProvider(true);
                update('provider', '');
              } else {
                setOtherProvider(false);
                update('provider', value);
              }
            }}
            isDisabled={enforced('provider')}
            validated={shown('provider') && !otherProvider ? 'error' : 'default'}
            data-testid="location-provider"
          >
            {PROVIDERS.map((provider) => (
              <FormSelectOption key={provider} value={provider} label={provider} />
            ))}
            <FormSelectOption value={OTHER} label={c.providerOther} />
          </FormSelect>
          {!otherProvider && <FieldHelper id="location-provider" error={shown('provider')} hint={ruleHint(rules, 'provider')} />}
        </FormGroup>
        {otherProvider && (
          <TextField
            id="location-provider-other"
            label={c.providerOtherLabel}
            value={form.provider}
            onChange={(v) => update('provider', v)}
            error={shown('provider')}
            hint={ruleHint(rules, 'provider')}
            isRequired
            testId="location-provider-other"
          />
        )}
        <TextField
          id="location-bucket"
          label={c.bucket}
          value={form.bucket}
          onChange={(v) => update('bucket', v)}
          error={shown('bucket')}
          hint={ruleHint(rules, 'objectStorage.bucket')}
          isDisabled={enforced('objectStorage.bucket')}
          isRequired
          testId="location-bucket"
        />
        <TextField
          id="location-prefix"
          label={c.prefix}
          value={form.prefix}
          onChange={(v) => update('prefix', v)}
          error={shown('prefix')}
          hint={ruleHint(rules, 'objectStorage.prefix') ?? c.prefixHelp}
          isDisabled={enforced('objectStorage.prefix')}
          testId="location-prefix"
        />
        <FormGroup label={c.config} fieldId="location-config" role="group">
          {form.config.map((entry, index) => (
            <Grid hasGutter key={index} style={{ marginBottom: '0.5rem' }}>
              <GridItem span={12} md={5}>
                <TextInput
                  value={entry.key}
                  onChange={(_event, value) => setConfig(index, 'key', value)}
                  aria-label={fmt(c.configKeyLabel, { index: index + 1 })}
                  placeholder={c.configKey}
                  validated={shown('config') ? 'error' : 'default'}
                  data-testid={`location-config-key-${index}`}
                />
              </GridItem>
              <GridItem span={10} md={6}>
                <TextInput
                  value={entry.value}
                  onChange={(_event, value) => setConfig(index, 'value', value)}
                  aria-label={fmt(c.configValueLabel, { index: index + 1 })}
                  placeholder={c.configValue}
                  data-testid={`location-config-value-${index}`}
                />
              </GridItem>
              <GridItem span={2} md={1}>
                <Button
                  variant="plain"
                  icon={<MinusCircleIcon />}
                  aria-label={fmt(c.configRemove, { index: index + 1 })}
                  onClick={() =>
                    update(
                      'config',
                      form.config.filter((_entry, i) => i !== index),
                      'config',
                    )
                  }
                  data-testid={`location-config-remove-${index}`}
                />
              </GridItem>
            </Grid>
          ))}
          <Button variant="link" icon={<PlusCircleIcon />} onClick={() => update('config', [...form.config, { key: '', value: '' }], 'config')} data-testid="location-config-add">
            {c.configAdd}
          </Button>
          <FieldHelper
            id="location-config"
            error={shown('config')}
            hint={[ruleHint(rules, 'config'), hints.length ? fmt(c.configSuggest, { provider: form.provider, keys: hints.join(', ') }) : c.configHelp].filter(Boolean).join(' · ')}
          />
        </FormGroup>
        <FormSection title={c.credentials} titleElement="h2">
          <Content component="p">{fmt(c.secretExplain, { namespace })}</Content>
          <ClipboardCopy isReadOnly isCode hoverTip={t.common.copy} clickTip={t.common.copied} data-testid="location-secret-command">
            {secretCommand(namespace, form.credentialName, form.credentialKey)}
          </ClipboardCopy>
          <TextField
            id="location-secret-name"
            label={c.secretName}
            value={form.credentialName}
            onChange={(v) => update('credentialName', v)}
            error={shown('credentialName')}
            isRequired
            placeholder="cloud-credentials"
            testId="location-secret-name"
          />
          <TextField
            id="location-secret-key"
            label={c.secretKey}
            value={form.credentialKey}
            onChange={(v) => update('credentialKey', v)}
            error={shown('credentialKey')}
            isRequired
            testId="location-secret-key"
          />
        </FormSection>
        <FormGroup fieldId="location-default" role="group">
          <Switch
            id="location-default"
            label={c.isDefault}
            isChecked={form.isDefault}
            onChange={(_event, checked) => update('isDefault', checked)}
            isDisabled={enforced('default')}
            data-testid="location-default"
          />
          <FieldHelper id="location-default" error={shown('isDefault')} hint={ruleHint(rules, 'default') ?? c.isDefaultHelp} />
        </FormGroup>
        <FormGroup role="radiogroup" fieldId="location-access" label={c.accessMode} isStack>
          <Radio
            id="location-access-readwrite"
            name="location-access"
            label={c.readWrite}
            isChecked={form.accessMode === 'ReadWrite'}
            onChange={() => update('accessMode', 'ReadWrite')}
            isDisabled={enforced('accessMode')}
            data-testid="location-access-readwrite"
          />
          <Radio
            id="location-access-readonly"
            name="location-access"
            label={c.readOnly}
            isChecked={form.accessMode === 'ReadOnly'}
            onChange={() => update('accessMode', 'ReadOnly')}
            isDisabled={enforced('accessMode')}
            data-testid="location-access-readonly"
          />
          <FieldHelper id="location-access" error={shown('accessMode')} hint={ruleHint(rules, 'accessMode')} />
        </FormGroup>
        <PolicyPanel title={c.policy} rules={rules} restrictions={policy.data?.restrictions} />
        <CreateFormFooter testIdPrefix="location" sent={state} texts={c} action={action} mayNotSubmit={!canCreate && !!access} onCancel={() => void navigate(list)} />
      </Form>
    </PageSection>
  );
}
