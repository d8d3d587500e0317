// A backup's "why did this fail" card: NAC's refusal first, then the shared card with the errors
// counted and grouped by cause (what Velero was doing, where, which objects), a link to the log,
// and why the grouped results may be missing.
import { AlertActionLink } from '@patternfly/react-core';
import { FailureSummaryCard } from '../components/FailureSummaryCard';
import { scopeText, type FailureGroup, type FailureSummary } from '../lib/failureSummary';
import { fmt, t } from '../strings';

const MAX_OBJECTS = 5;

function describeGroup(group: FailureGroup): string {
  const f = t.backups.failure;
  const shown = group.objects.slice(0, MAX_OBJECTS).join(', ');
  const more = group.objects.length - MAX_OBJECTS;
  const where = [group.resource, fmt(f.groupScope, { scope: scopeText(group, f) })].filter(Boolean).join(' ');
  const objects = shown ? ` · ${fmt(f.objects, { names: shown })}${more > 0 ? ` ${fmt(f.moreObjects, { count: more })}` : ''}` : '';
  return `${group.context ? `${group.context} · ` : ''}${where}${objects}`;
}

export interface BackupFailureSummaryProps {
  summary: FailureSummary;
  /** Why there are no grouped results: not allowed to download, or none uploaded. */
  resultsNote?: 'notAllowed' | 'missing' | null;
  onOpenLogs?: () => void;
}

export function BackupFailureSummary({ summary, resultsNote, onOpenLogs }: BackupFailureSummaryProps) {
  const f = t.backups.failure;
  return (
    <FailureSummaryCard
      summary={summary}
      partial={summary.partiallyFailed}
      texts={f}
      describeGroup={describeGroup}
      lead={summary.refusal && <p data-testid="failure-refusal">{fmt(f.refused, { message: summary.refusal })}</p>}
      errorsIntro={
        <p>
          {fmt(f.errorsCount, { count: summary.errorCount })} — {f.groupsIntro}
        </p>
      }
      footer={resultsNote === 'missing' ? <p>{f.noResults}</p> : resultsNote === 'notAllowed' ? <p>{f.resultsNotAllowed}</p> : null}
      actionLinks={onOpenLogs ? <AlertActionLink onClick={onOpenLogs}>{f.seeLogs}</AlertActionLink> : undefined}
    />
  );
}
