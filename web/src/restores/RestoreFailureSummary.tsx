// A restore's "why did this fail" card: a headline (NAC's refusal, how many problems, or that it
// failed), then the shared card with the reason, validation errors and the result messages
// grouped by scope, resource and cause; closes with why details may be missing.
import { FailureSummaryCard } from '../components/FailureSummaryCard';
import { scopeText, type FailureGroup, type FailureSummary } from '../lib/failureSummary';
import { fmt, t } from '../strings';

function describeGroup(group: FailureGroup): string {
  const f = t.restores.failure;
  const where = group.resource ? fmt(f.whereResource, { scope: scopeText(group, f), resource: group.resource }) : scopeText(group, f);
  return `${where}${group.objects.length ? ` · ${fmt(f.objects, { names: group.objects.slice(0, 5).join(', ') })}` : ''}`;
}

export function RestoreFailureSummary({ summary, resultsNote }: { summary: FailureSummary; resultsNote?: string | null }) {
  const f = t.restores.failure;
  const partial = summary.partiallyFailed && !summary.failed;
  const headline = summary.refusal
    ? fmt(f.refused, { message: summary.refusal })
    : partial
      ? fmt(f.partial, { errors: summary.errorCount })
      : f.failed;
  const nothingMore = !summary.failureReason && !summary.validationErrors.length && !summary.errorGroups.length && !summary.refusal;
  return (
    <FailureSummaryCard
      summary={summary}
      partial={partial}
      texts={f}
      describeGroup={describeGroup}
      lead={<p data-testid="failure-headline">{headline}</p>}
      footer={resultsNote ? <p>{resultsNote}</p> : nothingMore ? <p>{f.noDetail}</p> : null}
    />
  );
}
