// Create a schedule: name, cron expression validated and explained as typed ("every day at
// 02:00", next runs), what each run backs up (resources, label selector, TTL within the
// administrator's backup rules), paused and skip-immediately; the server's 422 field errors in
// place; copy as YAML / curl.
import { useMemo, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { Alert, Checkbox, Form, FormGroup, FormSection, PageSection, ToggleGroup, ToggleGroupItem } from '@patternfly/react-core';
import { api } from '../api/client';
import { CreateFormFooter, CreateFormHeading, FieldHelper, PolicyPanel, ResourceSelectionFields, TextField } from '../components/FormFields';
import { useCreateForm, usePolicy } from '../components/useCreateForm';
import { ruleHint } from '../lib/specRules';
import { may, useNamespaceAccess } from '../namespaces';
import { scheduleCreateAction } from '../restores/actions';
import { describeCron, nextRuns, parseCron } from '../schedules/cron';
import {
  buildScheduleRequest,
  initialScheduleForm,
  scheduleFieldOfPath,
  scheduleManifest,
  validateScheduleForm,
  type ScheduleField,
  type ScheduleForm,
} from '../schedules/scheduleForm';
import { fmt, t } from '../strings';

const PRESETS: { id: string; label: string; cron: string }[] = [
  { id: 'hourly', label: t.schedules.create.presetHourly, cron: '@hourly' },
  { id: 'nightly', label: t.schedules.create.presetNightly, cron: '0 2 * * *' },
  { id: 'weekdays', label: t.schedules.create.presetWeekdays, cron: '0 18 * * 1-5' },
  { id: 'weekly', label: t.schedules.create.presetWeekly, cron: '0 3 * * 0' },
  { id: 'monthly', label: t.schedules.create.presetMonthly, cron: '@monthly' },
];

/** "2026-11-24 02:00" in UTC (pure). */
export function utcMinute(date: Date): string {
  return date.toISOString().slice(0, 16).replace('T', ' ');
}

export default function ScheduleCreate() {
  const { namespace = '' } = useParams();
  const c = t.schedules.create;
  const navigate = useNavigate();
  const access = useNamespaceAccess(namespace);
  const canCreate = may(access, 'schedules', 'create');
  const policy = usePolicy(namespace);
  const rules = policy.data?.backup;
  const state = useCreateForm<ScheduleForm, ScheduleField>(initialScheduleForm, scheduleFieldOfPath, 'name');
  const { form, update } = state;

  const clientErrors = useMemo(() => validateScheduleForm(form, rules), [form, rules]);
  const shown = (field: ScheduleField) => state.shown(field, clientErrors);

  const parsed = useMemo(() => parseCron(form.schedule), [form.schedule]);
  const upcoming = useMemo(() => (parsed.ok ? nextRuns(parsed.cron, new Date(), 3) : []), [parsed]);
  const request = buildScheduleRequest(form);
  const action = scheduleCreateAction(namespace, request, scheduleManifest(namespace, request));
  const cronError = shown('schedule') ?? (!parsed.ok && form.schedule.trim() ? parsed.error : undefined);

  const list = `/ns/${encodeURIComponent(namespace)}/schedules`;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (state.showErrors(clientErrors)) return;
    await state.send(request, async (idempotencyKey) => {
      await api.post('/api/v1/namespaces/{namespace}/schedules', { path: { namespace }, body: request, idempotencyKey });
      void navigate(list);
    });
  };

  return (
    <PageSection data-testid="schedule-create-page">
      <CreateFormHeading title={c.title} intro={fmt(c.intro, { namespace })} notAllowed={!canCreate && access ? t.schedules.list.noCreate : null} policyFailed={!!policy.error} />
      <Form onSubmit={(event) => void submit(event)} aria-label={c.title} data-testid="schedule-form" style={{ maxWidth: '48rem' }}>
        <TextField id="schedule-name" label={c.name} value={form.name} onChange={(v) => update('name', v)} error={shown('name')} hint={c.nameHelp} isRequired testId="schedule-name" />
        <FormGroup label={c.schedule} fieldId="schedule-presets" role="group">
          <ToggleGroup aria-label={c.presets} isCompact>
            {PRESETS.map((preset) => (
              <ToggleGroupItem
                key={preset.id}
                text={preset.label}
                buttonId={`schedule-preset-${preset.id}`}
                isSelected={form.schedule.trim() === preset.cron}
                onChange={() => update('schedule', preset.cron)}
                data-testid={`schedule-preset-${preset.id}`}
              />
            ))}
          </ToggleGroup>
        </FormGroup>
        <TextField
          id="schedule-cron"
          label={c.cronLabel}
          value={form.schedule}
          onChange={(v) => update('schedule', v)}
          error={cronError}
          hint={c.scheduleHelp}
          isRequired
          placeholder="0 2 * * *"
          testId="schedule-cron"
        />
        {parsed.ok && (
          <Alert variant="info" isInline isPlain title={describeCron(parsed.cron)} data-testid="schedule-cron-words">
            <span data-testid="schedule-next-runs">
              {upcoming.length ? fmt(c.nextRuns, { times: upcoming.map(utcMinute).join(', ') }) : null}
            </span>
          </Alert>
        )}
        <FormSection title={c.template} titleElement="h2">
          <ResourceSelectionFields idPrefix="schedule" labels={c} values={form} errorOf={shown} onChange={update} rules={rules} />
          <TextField
            id="schedule-ttl"
            label={c.ttl}
            value={form.ttl}
            onChange={(v) => update('ttl', v)}
            error={shown('ttl')}
            hint={[ruleHint(rules, 'ttl'), c.ttlHelp].filter(Boolean).join(' · ')}
            placeholder="720h"
            testId="schedule-ttl"
          />
        </FormSection>
        <FormGroup fieldId="schedule-paused" role="group" label={c.options}>
          <Checkbox id="schedule-paused" label={c.paused} description={c.pausedHelp} isChecked={form.paused} onChange={(_event, checked) => update('paused', checked)} data-testid="schedule-paused" />
          <Checkbox
            id="schedule-skip"
            label={c.skipImmediately}
            description={c.skipImmediatelyHelp}
            isChecked={form.skipImmediately}
            onChange={(_event, checked) => update('skipImmediately', checked)}
            data-testid="schedule-skip"
          />
          <FieldHelper id="schedule-options" error={shown('paused') ?? shown('skipImmediately')} />
        </FormGroup>
        <PolicyPanel title={c.policy} rules={rules} restrictions={policy.data?.restrictions} />
        <CreateFormFooter testIdPrefix="schedule" sent={state} texts={c} action={action} mayNotSubmit={!canCreate && !!access} onCancel={() => void navigate(list)} />
      </Form>
    </PageSection>
  );
}
