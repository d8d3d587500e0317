// An operation's timeline (loaded when its row is expanded): the facts in plain words, oldest
// first, with why it failed at the top.
import { Alert, DescriptionList, DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, List, ListComponent, ListItem, Spinner, Title } from '@patternfly/react-core';
import { Link } from 'react-router';
import { api } from '../api/client';
import { ErrorAlert } from '../components/ErrorAlert';
import { formatTimestamp } from '../format';
import { useLoad } from '../hooks';
import { fmt, t } from '../strings';
import { describeTimelineEntry, operationLink } from './operations';

export function OperationTimeline({ namespace, operationId }: { namespace: string; operationId: string }) {
  const words = t.history.timeline;
  const { data, error, loading, reload } = useLoad(
    (signal) => api.get('/api/v1/namespaces/{namespace}/history/{operationId}', { path: { namespace, operationId }, signal }),
    `${namespace}/${operationId}`,
  );
  if (error) return <ErrorAlert error={error} onRetry={reload} />;
  if (loading && !data) return <Spinner size="md" aria-label={words.loading} />;
  if (!data) return null;
  const { operation, timeline } = data;
  const link = operationLink(namespace, operation);
  return (
    <div data-testid="operation-timeline">
      {operation.failureReason && (
        <Alert variant="danger" isInline isPlain title={words.failureReason} data-testid="operation-failure-reason">
          {operation.failureReason}
        </Alert>
      )}
      <DescriptionList isCompact isHorizontal columnModifier={{ default: '1Col', lg: '2Col' }} style={{ margin: '0.75rem 0' }}>
        {operation.veleroName && (
          <DescriptionListGroup>
            <DescriptionListTerm>{words.veleroName}</DescriptionListTerm>
            <DescriptionListDescription>
              <code style={{ wordBreak: 'break-all' }}>{operation.veleroName}</code>
            </DescriptionListDescription>
          </DescriptionListGroup>
        )}
        {operation.startedAt && (
          <DescriptionListGroup>
            <DescriptionListTerm>{words.started}</DescriptionListTerm>
            <DescriptionListDescription>{formatTimestamp(operation.startedAt)}</DescriptionListDescription>
          </DescriptionListGroup>
        )}
        {operation.completedAt && (
          <DescriptionListGroup>
            <DescriptionListTerm>{words.completed}</DescriptionListTerm>
            <DescriptionListDescription>{formatTimestamp(operation.completedAt)}</DescriptionListDescription>
          </DescriptionListGroup>
        )}
        {(typeof operation.warnings === 'number' || typeof operation.errors === 'number') && (
          <DescriptionListGroup>
            <DescriptionListTerm>{words.warningsErrorsTerm}</DescriptionListTerm>
            <DescriptionListDescription>{fmt(words.warningsErrors, { warnings: operation.warnings ?? 0, errors: operation.errors ?? 0 })}</DescriptionListDescription>
          </DescriptionListGroup>
        )}
      </DescriptionList>
      <Title headingLevel="h3" size="md">
        {words.title}
      </Title>
      {timeline.length === 0 ? (
        <p>{words.empty}</p>
      ) : (
        <List component={ListComponent.ol} isPlain data-testid="timeline-entries">
          {timeline.map((entry, index) => {
            const line = describeTimelineEntry(entry);
            return (
              <ListItem key={`${entry.at}-${index}`} data-testid="timeline-entry">
                <time dateTime={entry.at} style={{ color: 'var(--pf-t--global--text--color--subtle)', marginRight: '0.5rem' }}>
                  {formatTimestamp(entry.at)}
                </time>
                <strong>{line.label}</strong>: <span style={line.problem ? { color: 'var(--pf-t--global--text--color--status--danger--default)' } : undefined}>{line.value}</span>
                {line.detail && <span> — {line.detail}</span>}
              </ListItem>
            );
          })}
        </List>
      )}
      {link && (
        <p style={{ marginTop: '0.5rem' }}>
          <Link to={link} data-testid="operation-open">
            {fmt(words.open, { name: operation.name })}
          </Link>
        </p>
      )}
    </div>
  );
}
