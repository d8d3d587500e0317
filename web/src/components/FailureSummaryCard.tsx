// "Why did this fail", at the top of a failed or partially failed backup or restore: a lead
// (refusal or headline), Velero's reason and validation errors, then the result messages grouped
// by scope, resource and cause (errors listed, warnings folded away), and a closing note.
import type { ReactNode } from 'react';
import { Alert, Content, ExpandableSection, List, ListItem } from '@patternfly/react-core';
import type { FailureGroup, FailureSummary } from '../lib/failureSummary';
import { fmt } from '../strings';

export interface FailureCardTexts {
  title: string;
  titlePartial: string;
  /** `{reason}` */
  reason: string;
  validation: string;
  /** `{count}× {cause}` */
  group: string;
  /** `{count}` warnings (the folded section's toggle). */
  warnings: string;
}

export interface FailureSummaryCardProps {
  summary: FailureSummary;
  /** Partially failed (a warning) rather than failed (danger). */
  partial: boolean;
  texts: FailureCardTexts;
  /** The small line under a group's headline (where, which objects). */
  describeGroup: (group: FailureGroup) => string;
  lead?: ReactNode;
  /** Above the error groups. */
  errorsIntro?: ReactNode;
  footer?: ReactNode;
  actionLinks?: ReactNode;
}

function Groups({ groups, texts, describeGroup, testId }: { groups: FailureGroup[]; texts: FailureCardTexts; describeGroup: (group: FailureGroup) => string; testId: string }) {
  return (
    <List data-testid={testId}>
      {groups.map((group) => (
        <ListItem key={`${group.scope}/${group.namespace}/${group.resource}/${group.context}/${group.cause}`} data-testid="failure-group">
          <strong>{fmt(texts.group, { count: group.count, cause: group.cause })}</strong>
          <br />
          <small>{describeGroup(group)}</small>
        </ListItem>
      ))}
    </List>
  );
}

export function FailureSummaryCard({ summary, partial, texts, describeGroup, lead, errorsIntro, footer, actionLinks }: FailureSummaryCardProps) {
  return (
    <Alert variant={partial ? 'warning' : 'danger'} title={partial ? texts.titlePartial : texts.title} data-testid="failure-summary" actionLinks={actionLinks}>
      <Content>
        {lead}
        {summary.failureReason && <p data-testid="failure-reason">{fmt(texts.reason, { reason: summary.failureReason })}</p>}
        {summary.validationErrors.length > 0 && (
          <>
            <p>{texts.validation}</p>
            <List data-testid="failure-validation">
              {summary.validationErrors.map((error) => (
                <ListItem key={error}>{error}</ListItem>
              ))}
            </List>
          </>
        )}
        {summary.errorGroups.length > 0 && (
          <>
            {errorsIntro}
            <Groups groups={summary.errorGroups} texts={texts} describeGroup={describeGroup} testId="failure-error-groups" />
          </>
        )}
        {summary.warningGroups.length > 0 && (
          <ExpandableSection toggleText={fmt(texts.warnings, { count: summary.warningCount })} isIndented>
            <Groups groups={summary.warningGroups} texts={texts} describeGroup={describeGroup} testId="failure-warning-groups" />
          </ExpandableSection>
        )}
        {footer}
      </Content>
    </Alert>
  );
}
