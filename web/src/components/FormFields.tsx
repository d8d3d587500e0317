// Form pieces shared by the restore wizard and the schedule and storage-location forms: a labelled
// text field whose helper text shows the error (as typed or from the server's 422) or the
// administrator's rule, the resource / label-selector fields, the "what the administrator sets"
// panel, and a create form's heading and footer (refusal, copy-as, submit and cancel).
import { useState, type ReactNode } from 'react';
import {
  ActionGroup,
  Alert,
  Button,
  Content,
  ExpandableSection,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  Label,
  List,
  ListItem,
  TextInput,
  Title,
} from '@patternfly/react-core';
import type { RulesView } from '../api/types';
import type { ResourceSelection } from '../lib/fields';
import { ruleFor, ruleHint, ruleLines, type RuleKind } from '../lib/specRules';
import { t } from '../strings';
import { CopyAs, type CopyableAction } from './CopyAs';
import { ErrorAlert } from './ErrorAlert';
import type { SendState } from './useCreateForm';

export interface TextFieldProps {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Shown (in red) instead of the hint when set. */
  error?: string | null;
  /** Help or the administrator's rule for this field. */
  hint?: ReactNode;
  isRequired?: boolean;
  isDisabled?: boolean;
  placeholder?: string;
  testId?: string;
  labelHelp?: ReactNode;
}

/** A text input with its label and one helper line (error first, else hint). */
export function TextField({ id, label, value, onChange, error, hint, isRequired, isDisabled, placeholder, testId }: TextFieldProps) {
  return (
    <FormGroup label={label} fieldId={id} isRequired={isRequired}>
      <TextInput
        id={id}
        name={id}
        value={value}
        onChange={(_event, next) => onChange(next)}
        validated={error ? 'error' : 'default'}
        isRequired={isRequired}
        isDisabled={isDisabled}
        placeholder={placeholder}
        aria-describedby={`${id}-helper`}
        aria-invalid={error ? true : undefined}
        data-testid={testId}
      />
      <FieldHelper id={id} error={error} hint={hint} />
    </FormGroup>
  );
}

/** The helper line under a field: the error, else the hint. */
export function FieldHelper({ id, error, hint }: { id: string; error?: string | null; hint?: ReactNode }) {
  if (!error && !hint) return null;
  return (
    <FormHelperText>
      <HelperText id={`${id}-helper`}>
        {error ? (
          <HelperTextItem variant="error" data-testid={`${id}-error`}>
            {error}
          </HelperTextItem>
        ) : (
          <HelperTextItem>{hint}</HelperTextItem>
        )}
      </HelperText>
    </FormHelperText>
  );
}

const KIND_COLOR: Record<RuleKind, 'red' | 'blue' | 'orange' | 'purple'> = { enforced: 'red', default: 'blue', maximum: 'orange', allowed: 'purple' };

/** The administrator's rules for one kind of spec and the restrictions that always apply. */
export function PolicyPanel({
  title,
  rules,
  restrictions,
  extra,
  testId = 'policy-panel',
  expanded = false,
}: {
  title: string;
  rules: RulesView | undefined;
  restrictions?: string[];
  extra?: ReactNode;
  testId?: string;
  expanded?: boolean;
}) {
  const p = t.restores.policy;
  const [open, setOpen] = useState(expanded);
  const lines = ruleLines(rules);
  const kindText: Record<RuleKind, string> = { enforced: p.enforced, default: p.default, maximum: p.maximum, allowed: p.allowed };
  return (
    <ExpandableSection toggleText={title} isIndented isExpanded={open} onToggle={(_event, value) => setOpen(value)} data-testid={testId}>
      <Content>
        {extra}
        {lines.length === 0 ? (
          <p>{p.none}</p>
        ) : (
          <List isPlain data-testid={`${testId}-rules`}>
            {lines.map((line) => (
              <ListItem key={`${line.path}/${line.kind}`}>
                <code>{line.path}</code>{' '}
                <Label isCompact color={KIND_COLOR[line.kind]}>
                  {kindText[line.kind]}
                </Label>{' '}
                {line.value}
              </ListItem>
            ))}
          </List>
        )}
        {restrictions && restrictions.length > 0 && (
          <>
            <p>
              <strong>{p.restrictions}</strong>
            </p>
            <List data-testid={`${testId}-restrictions`}>
              {restrictions.map((restriction) => (
                <ListItem key={restriction}>{restriction}</ListItem>
              ))}
            </List>
          </>
        )}
      </Content>
    </ExpandableSection>
  );
}

/**
 * The resources to include and exclude and the label selector (ids and data-testids
 * `PREFIX-included`, `PREFIX-excluded`, `PREFIX-selector`), hinted with the administrator's rules;
 * with `lockEnforced`, a field the administrator enforces cannot be edited.
 */
export function ResourceSelectionFields({
  idPrefix,
  labels,
  values,
  errorOf,
  onChange,
  rules,
  lockEnforced = false,
}: {
  idPrefix: string;
  labels: { includedResources: string; excludedResources: string; labelSelector: string };
  values: ResourceSelection;
  errorOf: (field: keyof ResourceSelection) => string | undefined;
  onChange: (field: keyof ResourceSelection, value: string) => void;
  rules: RulesView | undefined;
  lockEnforced?: boolean;
}) {
  const fields: { field: keyof ResourceSelection; id: string; help: string; placeholder: string }[] = [
    { field: 'includedResources', id: `${idPrefix}-included`, help: t.restores.fields.listHelp, placeholder: 'deployments, configmaps' },
    { field: 'excludedResources', id: `${idPrefix}-excluded`, help: t.restores.fields.listHelp, placeholder: 'secrets' },
    { field: 'labelSelector', id: `${idPrefix}-selector`, help: t.restores.fields.selectorHelp, placeholder: 'app=web' },
  ];
  return (
    <>
      {fields.map(({ field, id, help, placeholder }) => (
        <TextField
          key={field}
          id={id}
          label={labels[field]}
          value={values[field]}
          onChange={(value) => onChange(field, value)}
          error={errorOf(field)}
          hint={ruleHint(rules, field) ?? help}
          isDisabled={lockEnforced ? ruleFor(rules, field).enforced !== undefined : undefined}
          placeholder={placeholder}
          testId={id}
        />
      ))}
    </>
  );
}

/** A create form's title and intro, then why it cannot be sent or the policy is unknown. */
export function CreateFormHeading({ title, intro, notAllowed, policyFailed, children }: { title: string; intro: string; notAllowed: string | null; policyFailed: boolean; children?: ReactNode }) {
  return (
    <>
      <Title headingLevel="h1">{title}</Title>
      <Content component="p">{intro}</Content>
      {children}
      {notAllowed && <Alert variant="warning" isInline title={notAllowed} />}
      {policyFailed ? <Alert variant="warning" isInline title={t.restores.policy.loadFailed} /> : null}
    </>
  );
}

/**
 * The end of a create form: the failure (data-testid `PREFIX-submit-error`), "the server refused
 * some fields", copy as YAML / curl, and the submit and cancel buttons (`PREFIX-submit`, `PREFIX-cancel`).
 */
export function CreateFormFooter({
  testIdPrefix,
  sent,
  texts,
  action,
  mayNotSubmit,
  onCancel,
}: {
  testIdPrefix: string;
  sent: SendState;
  texts: { serverRefused: string; copyTitle: string; submit: string; cancel: string };
  action: CopyableAction;
  mayNotSubmit: boolean;
  onCancel: () => void;
}) {
  return (
    <>
      {sent.submitError ? (
        <div data-testid={`${testIdPrefix}-submit-error`}>
          <ErrorAlert error={sent.submitError} />
        </div>
      ) : null}
      {sent.unplaced.length === 0 && Object.keys(sent.serverErrors).length > 0 && <Alert variant="danger" isInline title={texts.serverRefused} />}
      <CopyAs title={texts.copyTitle} action={action} />
      <ActionGroup>
        <Button type="submit" variant="primary" isLoading={sent.submitting} isDisabled={sent.submitting} isAriaDisabled={mayNotSubmit} data-testid={`${testIdPrefix}-submit`}>
          {texts.submit}
        </Button>
        <Button variant="link" onClick={onCancel} data-testid={`${testIdPrefix}-cancel`}>
          {texts.cancel}
        </Button>
      </ActionGroup>
    </>
  );
}
