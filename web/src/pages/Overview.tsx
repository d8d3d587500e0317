// The dashboard of a namespace (`/ns/:namespace`): a protection banner (no successful backup
// yet / last backup N ago, coloured past 26 h and 7 d, failing schedules), quick actions
// (create backup, restore, schedule — disabled with the missing permission when not
// allowed), the last successful backup, running and queued work with ETAs, failure rates
// over 7 and 30 days, schedules with their health, and the namespace's shared backup storage
// (when the cluster has a shared pool). Live: reloads on the namespace's change events; the
// queue also every 5 seconds.
import { Link, useParams } from 'react-router';
import {
  Alert,
  Card,
  CardBody,
  CardFooter,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Flex,
  Grid,
  GridItem,
  PageSection,
  Skeleton,
  Title,
} from '@patternfly/react-core';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import { api } from '../api/client';
import type { NonAdminSchedule } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { LiveHeading } from '../components/PageHeading';
import { formatAge, formatTimestamp } from '../format';
import { useLoad, useNow } from '../hooks';
import { listPage } from '../lib/listAll';
import { may, useNamespaceAccess, useNamespaces } from '../namespaces';
import { fmt, t } from '../strings';
import { ActionLink } from '../overview/ActionLink';
import { FailureRates } from '../overview/FailureRates';
import { SchedulesHealth } from '../overview/SchedulesHealth';
import { protectionStatus } from '../overview/protection';
import { lastDays } from '../overview/rates';
import { QueueTable } from '../queue/QueueTable';
import { useDebounced, useReceivedAt, useReloadOnChanges } from '../queue/live';
import { useNamespaceQueue } from '../queue/useQueue';
import { sharedStorageView, useSharedStorage } from '../locations/sharedStorage';
import { SharedStorageCard } from '../locations/SharedStorageView';

export default function Overview() {
  const { namespace = '' } = useParams();
  const namespaces = useNamespaces();
  const access = useNamespaceAccess(namespace);
  const now = useNow(5000);
  const words = t.overview.dashboard;
  const base = `/ns/${encodeURIComponent(namespace)}`;
  const canListSchedules = !access || may(access, 'schedules', 'list');

  const coverage = useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/coverage', { path: { namespace }, signal }), `${namespace}/coverage`);
  const coverageAt = useReceivedAt(coverage.data);
  const { queue, reload: reloadQueue } = useNamespaceQueue(namespace);
  const sharedStorage = useSharedStorage(namespace);
  const stats7 = useLoad(
    (signal) => api.get('/api/v1/namespaces/{namespace}/stats', { path: { namespace }, query: lastDays(7, Date.now()), signal }),
    `${namespace}/stats7`,
  );
  const stats30 = useLoad(
    (signal) => api.get('/api/v1/namespaces/{namespace}/stats', { path: { namespace }, query: lastDays(30, Date.now()), signal }),
    `${namespace}/stats30`,
  );
  const schedules = useLoad(
    (signal) =>
      canListSchedules
        ? listPage(namespace, 'schedules', {}, signal).then((list) => list.items)
        : Promise.resolve<NonAdminSchedule[]>([]),
    `${namespace}/schedules/${canListSchedules}`,
  );

  // One event stream for the page: quick things at once, the statistics a little later.
  const reloadStats = useDebounced(() => {
    stats7.reload();
    stats30.reload();
  }, 3000);
  const stream = useReloadOnChanges(
    namespace,
    () => true,
    () => {
      reloadQueue();
      coverage.reload();
      schedules.reload();
      sharedStorage.reload();
      reloadStats();
    },
    400,
  );

  if (namespaces.data && !access) {
    return (
      <PageSection data-testid="overview-page">
        <Title headingLevel="h1">{namespace}</Title>
        <Alert variant="warning" isInline title={t.errors.forbiddenTitle} data-testid="overview-no-access">
          {fmt(words.noAccess, { namespace })}
        </Alert>
      </PageSection>
    );
  }

  const notAllowed = (verb: string, resource: string) => fmt(words.actions.notAllowed, { verb, resource, namespace });
  const status = coverage.data ? protectionStatus(coverage.data, now, undefined, coverageAt) : null;
  const lastBackup = coverage.data?.lastSuccessfulBackup;

  return (
    <>
      <PageSection data-testid="overview-page">
        <LiveHeading title={fmt(words.title, { namespace })} stream={stream} intro={words.subtitle} />
        {coverage.error ? (
          <ErrorAlert error={coverage.error} onRetry={coverage.reload} />
        ) : status ? (
          <Alert variant={status.level} title={status.title} data-testid="protection-status" data-level={status.level} isInline>
            {status.details.map((detail) => (
              <p key={detail}>{detail}</p>
            ))}
          </Alert>
        ) : (
          <Skeleton height="4rem" screenreaderText={t.app.loading} />
        )}
        {namespaces.data && (
          <Flex gap={{ default: 'gapSm' }} style={{ marginTop: '1rem' }} role="group" aria-label={words.actions.title}>
            <ActionLink
              to={`${base}/backups/new`}
              allowed={may(access, 'backups', 'create')}
              reason={notAllowed('create', 'backups')}
              variant="primary"
              icon={<PlusCircleIcon />}
              testId="action-create-backup"
            >
              {words.actions.createBackup}
            </ActionLink>
            <ActionLink to={`${base}/restores/new`} allowed={may(access, 'restores', 'create')} reason={notAllowed('create', 'restores')} testId="action-restore">
              {words.actions.restore}
            </ActionLink>
            <ActionLink
              to={`${base}/schedules/new`}
              allowed={may(access, 'schedules', 'create')}
              reason={notAllowed('create', 'schedules')}
              testId="action-create-schedule"
            >
              {words.actions.createSchedule}
            </ActionLink>
            <ActionLink to={`${base}/history`} allowed reason="" variant="link" testId="action-history">
              {words.actions.history}
            </ActionLink>
          </Flex>
        )}
      </PageSection>
      <PageSection>
        <Grid hasGutter>
          <GridItem md={6} xl={4}>
            <Card isFullHeight data-testid="last-backup">
              <CardTitle component="h2">{words.lastBackup.title}</CardTitle>
              <CardBody>
                {!coverage.data ? (
                  <Skeleton screenreaderText={t.app.loading} />
                ) : !lastBackup ? (
                  <p>{words.lastBackup.none}</p>
                ) : (
                  <DescriptionList isCompact>
                    <DescriptionListGroup>
                      <DescriptionListTerm>{t.common.name}</DescriptionListTerm>
                      <DescriptionListDescription>
                        <Link to={`${base}/backups/${encodeURIComponent(lastBackup)}`} data-testid="last-backup-link">
                          {lastBackup}
                        </Link>
                      </DescriptionListDescription>
                    </DescriptionListGroup>
                    <DescriptionListGroup>
                      <DescriptionListTerm>{words.lastBackup.completed}</DescriptionListTerm>
                      <DescriptionListDescription>{formatTimestamp(coverage.data.lastSuccessfulBackupAt)}</DescriptionListDescription>
                    </DescriptionListGroup>
                    <DescriptionListGroup>
                      <DescriptionListTerm>{words.lastBackup.age}</DescriptionListTerm>
                      <DescriptionListDescription>{formatAge(coverage.data.lastSuccessfulBackupAt, now)}</DescriptionListDescription>
                    </DescriptionListGroup>
                  </DescriptionList>
                )}
              </CardBody>
            </Card>
          </GridItem>
          <GridItem md={6} xl={8}>
            <Card isFullHeight data-testid="dashboard-queue">
              <CardTitle component="h2">{words.queue.title}</CardTitle>
              <CardBody>
                {queue.error ? (
                  <ErrorAlert error={queue.error} onRetry={queue.reload} />
                ) : !queue.data ? (
                  <Skeleton screenreaderText={t.app.loading} />
                ) : queue.data.items.length === 0 ? (
                  <p data-testid="dashboard-queue-empty">{words.queue.empty}</p>
                ) : (
                  <QueueTable items={queue.data.items} namespace={namespace} fetchedAt={queue.receivedAt} now={now} />
                )}
              </CardBody>
              <CardFooter>
                <Link to={`${base}/queue`}>{words.queue.viewQueue}</Link>
              </CardFooter>
            </Card>
          </GridItem>
          <GridItem md={6}>
            <Card isFullHeight>
              <CardTitle component="h2">{words.rates.title}</CardTitle>
              <CardBody>
                {stats30.error || stats7.error ? (
                  <ErrorAlert error={stats30.error ?? stats7.error} onRetry={() => {
                      stats7.reload();
                      stats30.reload();
                    }} />
                ) : !stats30.data ? (
                  <Skeleton screenreaderText={t.app.loading} />
                ) : (
                  <FailureRates last7={stats7.data} last30={stats30.data} />
                )}
              </CardBody>
              <CardFooter>
                <Link to={`${base}/history`}>{words.rates.viewHistory}</Link>
              </CardFooter>
            </Card>
          </GridItem>
          <GridItem md={6}>
            <Card isFullHeight>
              <CardTitle component="h2">{words.schedules.title}</CardTitle>
              <CardBody>
                {!canListSchedules ? (
                  <p data-testid="schedules-forbidden">{words.schedules.forbidden}</p>
                ) : schedules.error ? (
                  <ErrorAlert error={schedules.error} onRetry={schedules.reload} />
                ) : !schedules.data ? (
                  <Skeleton screenreaderText={t.app.loading} />
                ) : (
                  <SchedulesHealth schedules={schedules.data} failing={coverage.data?.failingSchedules ?? []} now={now} />
                )}
              </CardBody>
              <CardFooter>
                <Flex gap={{ default: 'gapMd' }}>
                  <Link to={`${base}/schedules`}>{words.schedules.manage}</Link>
                  {may(access, 'schedules', 'create') && <Link to={`${base}/schedules/new`}>{words.schedules.create}</Link>}
                </Flex>
              </CardFooter>
            </Card>
          </GridItem>
          {sharedStorageView(sharedStorage.data) && (
            <GridItem md={6}>
              <SharedStorageCard storage={sharedStorage.data} now={now} />
            </GridItem>
          )}
        </Grid>
      </PageSection>
    </>
  );
}
