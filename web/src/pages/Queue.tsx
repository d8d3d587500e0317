// The queue (`/ns/:namespace/queue`): the cluster's backup and restore queues as anonymous
// counts (other teams' work is never named), my running and waiting work in this namespace
// with position, state and estimates (start in / finish in, from how many past runs), and my
// work in other namespaces. Live: reloads on change events and every 5 seconds; estimates
// count down every second in between.
import { useParams } from 'react-router';
import {
  Card,
  CardBody,
  CardTitle,
  Content,
  EmptyState,
  Gallery,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import OutlinedClockIcon from '@patternfly/react-icons/dist/esm/icons/outlined-clock-icon';
import type { QueueCounts } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { LiveHeading } from '../components/PageHeading';
import { formatAge } from '../format';
import { useNow } from '../hooks';
import { fmt, t } from '../strings';
import { QueueTable } from '../queue/QueueTable';
import { affectsQueue, countsText, otherNamespaces } from '../queue/eta';
import { useReloadOnChanges } from '../queue/live';
import { useClusterQueue, useNamespaceQueue } from '../queue/useQueue';

function CountsCard({ title, counts, testId }: { title: string; counts: QueueCounts; testId: string }) {
  const text = countsText(counts);
  return (
    <Card isCompact data-testid={testId}>
      <CardTitle component="h3">{title}</CardTitle>
      <CardBody>
        <Content component="p">
          <strong data-testid="count-running">{text.running}</strong> · <span data-testid="count-pending">{text.pending}</span>
        </Content>
        <Content component="small">{text.mean}</Content>
      </CardBody>
    </Card>
  );
}

export default function Queue() {
  const { namespace = '' } = useParams();
  const now = useNow(1000);
  const { queue, reload: reloadQueue } = useNamespaceQueue(namespace);
  const cluster = useClusterQueue();
  const stream = useReloadOnChanges(
    namespace,
    (event) => affectsQueue(event.resource),
    () => {
      reloadQueue();
      cluster.reload();
    },
    300,
  );
  const words = t.queue;
  const elsewhere = otherNamespaces(cluster.data, namespace);
  return (
    <>
      <PageSection data-testid="queue-page">
        <LiveHeading title={words.title} stream={stream} intro={words.intro} />
      </PageSection>
      <PageSection>
        <Title headingLevel="h2" size="lg" style={{ marginBottom: '0.5rem' }}>
          {words.cluster.title}
        </Title>
        {cluster.error ? (
          <ErrorAlert error={cluster.error} onRetry={cluster.reload} />
        ) : !cluster.data ? (
          <Spinner size="md" aria-label={t.app.loading} />
        ) : (
          <>
            <Gallery hasGutter minWidths={{ default: '100%', sm: '16rem' }}>
              <CountsCard title={words.cluster.backups} counts={cluster.data.backups} testId="cluster-queue-backups" />
              <CountsCard title={words.cluster.restores} counts={cluster.data.restores} testId="cluster-queue-restores" />
            </Gallery>
            <Content component="small">{words.cluster.othersNote}</Content>
          </>
        )}
      </PageSection>
      <PageSection>
        <Card data-testid="namespace-queue">
          <CardTitle component="h2">{fmt(words.mine.title, { namespace })}</CardTitle>
          <CardBody>
            {queue.error ? (
              <ErrorAlert error={queue.error} onRetry={queue.reload} />
            ) : !queue.data ? (
              <Spinner size="md" aria-label={t.app.loading} />
            ) : queue.data.items.length === 0 ? (
              <EmptyState variant="xs" titleText={fmt(words.mine.empty, { namespace })} headingLevel="h3" icon={OutlinedClockIcon} data-testid="namespace-queue-empty" />
            ) : (
              <QueueTable items={queue.data.items} namespace={namespace} fetchedAt={queue.receivedAt} now={now} />
            )}
            {queue.data && (
              <Content component="small" data-testid="queue-updated" aria-live="off">
                {fmt(words.updated, { age: formatAge(new Date(queue.receivedAt).toISOString(), now) })}
              </Content>
            )}
          </CardBody>
        </Card>
      </PageSection>
      {elsewhere.length > 0 && (
        <PageSection>
          <Card data-testid="other-namespaces-queue">
            <CardTitle component="h2">{words.mine.elsewhere}</CardTitle>
            <CardBody>
              <QueueTable
                items={elsewhere.flatMap((group) => group.items)}
                namespace={namespace}
                fetchedAt={cluster.receivedAt}
                now={now}
                showNamespace
                testId="other-queue-table"
              />
            </CardBody>
          </Card>
        </PageSection>
      )}
    </>
  );
}
