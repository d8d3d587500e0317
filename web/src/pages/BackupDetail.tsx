// One backup (`/ns/:namespace/backups/:name`): live status over SSE, "why did this fail" at the
// top of a failed backup, conditions in plain words, progress, the history timeline, the log
// viewer, results, resource list, the manifest's contents, owner graph and comparison with
// another backup, effective spec, restore and permanent deletion (with its deletion actions),
// a wait for the shared backup storage, and, while it has not started, the running operations
// it waits on.
import { useState, type ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import {
  Alert,
  AlertActionCloseButton,
  Breadcrumb,
  BreadcrumbItem,
  Button,
  CodeBlock,
  CodeBlockCode,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  EmptyState,
  EmptyStateActions,
  EmptyStateBody,
  EmptyStateFooter,
  Flex,
  FlexItem,
  List,
  ListItem,
  PageSection,
  Spinner,
  Tab,
  Tabs,
  TabTitleText,
  Title,
} from '@patternfly/react-core';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import InfoCircleIcon from '@patternfly/react-icons/dist/esm/icons/info-circle-icon';
import { api, ApiError } from '../api/client';
import { descriptionConditions, isTenantObject, tenantObject, type DeleteOutcome, type NonAdminBackup } from '../api/types';
import { ConfirmDeleteModal } from '../components/ConfirmDeleteModal';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { ItemsProgress } from '../components/ItemsProgress';
import { LiveBadge } from '../components/LiveBadge';
import { PhaseLabel } from '../components/PhaseLabel';
import { WhyNot } from '../components/WhyNot';
import { formatDuration, formatTimestamp, formatUntil } from '../format';
import { useLoad, useNamespaceEvents, useNow } from '../hooks';
import { may, useNamespaceAccess, useNamespaces } from '../namespaces';
import { fmt, t } from '../strings';
import { toYaml } from '../yaml';
import { deleteAction, describeAction, restoreAction } from '../backups/actions';
import { artifactNotReady, fetchResults } from '../lib/artifacts';
import { backupProgress, describeCondition, isRestorable, isRunning, secondsBetween, veleroPhaseOf, type Tone } from '../backups/backupStatus';
import { BackupTimeline } from '../backups/BackupTimeline';
import { BackupFailureSummary } from '../backups/BackupFailureSummary';
import { needsFailureSummary, summarizeFailure, type VeleroResults } from '../lib/failureSummary';
import { LogViewer } from '../backups/LogViewer';
import { ResourceListView } from '../backups/ResourceListView';
import { ResultsView } from '../backups/ResultsView';
import { deletionActionsOf, isDeletionActionCondition } from '../backups/deletionActions';
import { DeletionActionsView, DeletionWaiting } from '../backups/DeletionActionsView';
import { storageWaitMessage } from '../locations/sharedStorage';
import { CompareView } from '../manifests/CompareView';
import { ContentsView } from '../manifests/ContentsView';
import { OwnerGraphView } from '../manifests/OwnerGraphView';
import { isPendingOperation } from '../manifests/preview';
import { WaitingOn } from '../manifests/WaitingOn';

const TONE_ICON: Record<Tone, ReactNode> = {
  success: <CheckCircleIcon color="var(--pf-t--global--icon--color--status--success--default)" />,
  danger: <ExclamationCircleIcon color="var(--pf-t--global--icon--color--status--danger--default)" />,
  warning: <ExclamationTriangleIcon color="var(--pf-t--global--icon--color--status--warning--default)" />,
  info: <InfoCircleIcon color="var(--pf-t--global--icon--color--status--info--default)" />,
  custom: <InfoCircleIcon />,
};

type TabKey = 'overview' | 'timeline' | 'logs' | 'results' | 'resources' | 'contents' | 'graph' | 'compare' | 'spec';

export default function BackupDetail() {
  const { namespace = '', name = '' } = useParams();
  const d = t.backups.detail;
  const access = useNamespaceAccess(namespace);
  const namespaces = useNamespaces();
  // Unknown (undefined) until my namespaces are loaded.
  const canDownload = namespaces.data ? !!access?.canDownload : undefined;
  const now = useNow(10000);

  const loaded = useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/backups/{name}', { path: { namespace, name }, signal }).then((backup) => tenantObject('backups', backup)), `${namespace}/${name}`);
  const [backup, setBackup] = useState<NonAdminBackup>();
  const [gone, setGone] = useState(false);
  // Another backup starts empty; each answer replaces what events set (set while rendering:
  // React's pattern for state that follows a value).
  const [shown, setShown] = useState({ target: `${namespace}/${name}`, data: loaded.data });
  if (shown.target !== `${namespace}/${name}`) {
    setShown({ target: `${namespace}/${name}`, data: loaded.data });
    setBackup(undefined);
    setGone(false);
  } else if (shown.data !== loaded.data) {
    setShown({ target: shown.target, data: loaded.data });
    if (loaded.data) {
      setBackup(loaded.data);
      setGone(false);
    }
  }
  const stream = useNamespaceEvents(
    namespace,
    (event) => {
      if (event.resource !== 'backups' || event.name !== name || event.namespace !== namespace) return;
      if (event.type === 'DELETED') setGone(true);
      else if (isTenantObject('backups', event.object)) {
        setBackup(event.object);
        setGone(false);
      } else loaded.reload();
    },
    loaded.reload,
  );

  const version = backup?.metadata.resourceVersion ?? '';
  const description = useLoad(
    (signal) => api.get('/api/v1/namespaces/{namespace}/backups/{name}/describe', { path: { namespace, name }, signal }),
    `${namespace}/${name}/${version}`,
  );
  const requestPhase = backup?.status?.phase ?? description.data?.requestPhase;
  const veleroPhase = veleroPhaseOf(backup) ?? description.data?.veleroPhase;
  const running = isRunning(requestPhase, veleroPhase) && !gone;
  const finished = !!veleroPhase && !running;

  const results = useLoad<VeleroResults | null>(
    (signal) => (finished && canDownload ? fetchResults(namespace, 'backups', name, signal) : Promise.resolve(null)),
    `${namespace}/${name}/results/${finished}/${canDownload}`,
  );

  const [tab, setTab] = useState<TabKey>('overview');
  const [deleting, setDeleting] = useState(false);
  const [deleted, setDeleted] = useState<DeleteOutcome>();

  if (loaded.error && !backup) {
    const notFound = loaded.error instanceof ApiError && loaded.error.status === 404;
    return (
      <PageSection>
        {notFound ? (
          <EmptyState titleText={d.gone} headingLevel="h1" data-testid="backup-gone">
            <EmptyStateBody>{d.goneBody}</EmptyStateBody>
            <EmptyStateFooter>
              <EmptyStateActions>
                <Button variant="primary" component={(props: object) => <Link {...props} to={`/ns/${encodeURIComponent(namespace)}/backups`} />}>
                  {d.backToList}
                </Button>
              </EmptyStateActions>
            </EmptyStateFooter>
          </EmptyState>
        ) : (
          <ErrorAlert error={loaded.error} onRetry={loaded.reload} />
        )}
      </PageSection>
    );
  }
  if (!backup) {
    return (
      <PageSection>
        <Spinner size="xl" aria-label={t.app.loading} />
      </PageSection>
    );
  }

  const progress = backupProgress(backup);
  const allConditions = backup.status?.conditions ?? (description.data ? descriptionConditions(description.data) : []);
  // Deletion actions have their own list; the rest are read as sentences.
  const conditions = allConditions.filter((condition) => !isDeletionActionCondition(condition));
  const deletionActions = deletionActionsOf(allConditions);
  const storageWait = storageWaitMessage(backup);
  const hasContents = isRestorable(veleroPhase);
  const deletionRequested = !!backup.spec.deleteBackup || requestPhase === 'Deleting' || !!description.data?.deletion?.requested || !!deleted;
  const mayRestore = may(access, 'restores', 'create');
  const mayDelete = may(access, 'backups', 'delete');
  const restorable = isRestorable(veleroPhase, requestPhase) && !deletionRequested;
  const pending = !gone && !deletionRequested && isPendingOperation('backups', requestPhase, veleroPhase);
  const summaryInput = description.data
    ? { ...description.data, requestPhase, veleroPhase, conditions: allConditions }
    : { requestPhase, veleroPhase, conditions: allConditions, failureReason: backup.status?.veleroBackup?.status?.failureReason, validationErrors: backup.status?.veleroBackup?.status?.validationErrors ?? [], errors: backup.status?.veleroBackup?.status?.errors ?? 0, warnings: backup.status?.veleroBackup?.status?.warnings ?? 0 };
  const showSummary = needsFailureSummary(summaryInput);
  const summary = showSummary ? summarizeFailure(results.data ?? null, summaryInput) : null;
  const resultsNote = canDownload === false ? 'notAllowed' : results.error && artifactNotReady(results.error) ? 'missing' : null;
  const started = description.data?.started ?? backup.status?.veleroBackup?.status?.startTimestamp;
  const completed = description.data?.completed ?? backup.status?.veleroBackup?.status?.completionTimestamp;
  const expiration = description.data?.expiration ?? backup.status?.veleroBackup?.status?.expiration;
  const duration = secondsBetween(started, completed ?? (running && started ? new Date(now).toISOString() : null));
  const position = backup.status?.queueInfo?.estimatedQueuePosition;
  const eta = description.data?.eta;
  const effectiveSpec = description.data?.effectiveSpec ?? backup.status?.veleroBackup?.spec;

  const restoreButton = (
    <Button
      variant="primary"
      isAriaDisabled={!mayRestore || !restorable}
      component={mayRestore && restorable ? (props: object) => <Link {...props} to={`/ns/${encodeURIComponent(namespace)}/backups/${encodeURIComponent(name)}/restore`} /> : undefined}
      data-testid="restore-button"
    >
      {d.restore}
    </Button>
  );
  const deleteButton = (
    <Button variant="danger" isAriaDisabled={!mayDelete || deletionRequested} onClick={() => setDeleting(true)} data-testid="delete-button">
      {d.delete}
    </Button>
  );

  return (
    <>
      <PageSection data-testid="backup-detail">
        <Breadcrumb>
          <BreadcrumbItem render={({ className }) => <Link className={className} to={`/ns/${encodeURIComponent(namespace)}/backups`}>{d.breadcrumb}</Link>} />
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
        <Flex alignItems={{ default: 'alignItemsCenter' }} flexWrap={{ default: 'wrap' }} gap={{ default: 'gapMd' }}>
          <FlexItem>
            <Title headingLevel="h1" data-testid="backup-title">
              {name}
            </Title>
          </FlexItem>
          <FlexItem>
            <span data-testid="request-phase" title={d.requestPhase}>
              <PhaseLabel phase={requestPhase} />
            </span>{' '}
            <span data-testid="velero-phase" title={d.veleroPhase}>
              <PhaseLabel phase={veleroPhase} />
            </span>
          </FlexItem>
          <FlexItem>
            <LiveBadge state={stream} wording="detailed" />
          </FlexItem>
          <FlexItem align={{ default: 'alignRight' }}>
            <Flex gap={{ default: 'gapSm' }}>
              <WhyNot reason={!mayRestore ? d.restoreForbidden : !restorable && d.restoreNotReady}>{restoreButton}</WhyNot>
              <WhyNot reason={!hasContents && d.compareNotReady}>
                <Button variant="secondary" isAriaDisabled={!hasContents} onClick={() => setTab('compare')} data-testid="compare-button">
                  {d.compare}
                </Button>
              </WhyNot>
              <WhyNot reason={!mayDelete && d.deleteForbidden}>{deleteButton}</WhyNot>
            </Flex>
          </FlexItem>
        </Flex>
        <Flex direction={{ default: 'column' }} gap={{ default: 'gapNone' }}>
          <CopyAs title={d.copyRestore} action={restoreAction(namespace, name)} />
          <CopyAs title={d.copyDelete} action={deleteAction(namespace, name)} />
        </Flex>
      </PageSection>

      {(gone || deletionRequested || deleted || summary || storageWait) && (
        <PageSection>
          {!gone && storageWait && (
            <Alert variant="warning" isInline title={t.manifests.storageWait.title} data-testid="storage-wait">
              {storageWait}
            </Alert>
          )}
          {gone && (
            <Alert variant="info" isInline title={d.gone} data-testid="backup-gone">
              {d.goneBody} <Link to={`/ns/${encodeURIComponent(namespace)}/backups`}>{d.backToList}</Link>
            </Alert>
          )}
          {!gone && deletionRequested && (
            <Alert
              variant="warning"
              isInline
              title={d.deletionRequested}
              data-testid="delete-requested"
              actionClose={deleted ? <AlertActionCloseButton onClose={() => setDeleted(undefined)} /> : undefined}
            >
              <p>{deleted?.message ?? d.deletionRequestedBody}</p>
              <DeletionWaiting actions={deletionActions} />
              {(description.data?.deletion?.errors ?? []).length > 0 && (
                <>
                  <p>{d.deletionErrors}</p>
                  <List>
                    {description.data!.deletion!.errors.map((error) => (
                      <ListItem key={error}>{error}</ListItem>
                    ))}
                  </List>
                </>
              )}
            </Alert>
          )}
          {summary && <BackupFailureSummary summary={summary} resultsNote={summary.hasResults ? null : resultsNote} onOpenLogs={() => setTab('logs')} />}
        </PageSection>
      )}

      {pending && (
        <PageSection>
          <WaitingOn namespace={namespace} kind="backups" name={name} pending={pending} version={version} />
        </PageSection>
      )}

      <PageSection>
        <Tabs activeKey={tab} onSelect={(_event, key) => setTab(key as TabKey)} mountOnEnter aria-label={name} data-testid="detail-tabs">
          <Tab eventKey="overview" title={<TabTitleText>{d.tabOverview}</TabTitleText>} data-testid="tab-overview">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              {description.error ? <ErrorAlert error={description.error} onRetry={description.reload} /> : null}
              <Title headingLevel="h2" size="lg">
                {d.progress}
              </Title>
              <div data-testid="backup-progress">
                <ItemsProgress done={progress.done} total={progress.total} phase={veleroPhase} label={d.progress} />
              </div>
              <DescriptionList isCompact isHorizontal columnModifier={{ default: '1Col', lg: '2Col' }} data-testid="backup-facts">
                <Fact term={d.created} value={formatTimestamp(backup.metadata.creationTimestamp)} />
                <Fact term={d.started} value={formatTimestamp(started)} />
                <Fact term={d.completed} value={formatTimestamp(completed)} />
                <Fact term={d.duration} value={duration === null ? t.common.none : formatDuration(duration)} />
                <Fact term={d.expiration} value={expiration ? `${formatTimestamp(expiration)} (${formatUntil(expiration, now)})` : t.common.none} />
                <Fact term={d.storageLocation} value={effectiveSpec && 'storageLocation' in effectiveSpec && typeof effectiveSpec.storageLocation === 'string' ? effectiveSpec.storageLocation : t.common.none} />
                {running && position ? <Fact term={d.queuePosition} value={fmt(t.common.queuePosition, { position })} /> : null}
                {running && eta ? (
                  <Fact
                    term={d.eta}
                    value={fmt(d.etaValue, { start: formatDuration(eta.startInSeconds), finish: formatDuration(eta.finishInSeconds), samples: eta.samples })}
                  />
                ) : null}
                <Fact term={d.errors} value={String(description.data?.errors ?? backup.status?.veleroBackup?.status?.errors ?? 0)} />
                <Fact term={d.warnings} value={String(description.data?.warnings ?? backup.status?.veleroBackup?.status?.warnings ?? 0)} />
                <Fact term={d.veleroName} value={backup.status?.veleroBackup?.name ?? t.common.none} />
              </DescriptionList>
              <Title headingLevel="h2" size="lg">
                {d.conditions}
              </Title>
              {conditions.length === 0 ? (
                <p>{d.noConditions}</p>
              ) : (
                <List isPlain data-testid="conditions">
                  {conditions.map((condition) => {
                    const { text, tone } = describeCondition(condition);
                    return (
                      <ListItem key={condition.type} icon={TONE_ICON[tone]} data-testid="condition">
                        {text} <small>({formatTimestamp(condition.lastTransitionTime)})</small>
                      </ListItem>
                    );
                  })}
                </List>
              )}
              <DeletionActionsView name={name} actions={deletionActions} />
              <CopyAs title={d.copyDescribe} action={describeAction(namespace, name)} />
            </PageSection>
          </Tab>
          <Tab eventKey="timeline" title={<TabTitleText>{d.tabTimeline}</TabTitleText>} data-testid="tab-timeline">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <BackupTimeline namespace={namespace} name={name} uid={backup.metadata.uid} version={version} />
            </PageSection>
          </Tab>
          <Tab eventKey="logs" title={<TabTitleText>{d.tabLogs}</TabTitleText>} data-testid="tab-logs">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <LogViewer namespace={namespace} name={name} running={running} canDownload={canDownload} />
            </PageSection>
          </Tab>
          <Tab eventKey="results" title={<TabTitleText>{d.tabResults}</TabTitleText>} data-testid="tab-results">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <ResultsView
                namespace={namespace}
                name={name}
                results={results.data}
                loading={results.loading}
                error={results.error}
                canDownload={canDownload}
                running={running}
                onRetry={results.reload}
              />
            </PageSection>
          </Tab>
          <Tab eventKey="resources" title={<TabTitleText>{d.tabResources}</TabTitleText>} data-testid="tab-resources">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <ResourceListView namespace={namespace} name={name} canDownload={canDownload} running={running} />
            </PageSection>
          </Tab>
          <Tab eventKey="contents" title={<TabTitleText>{d.tabContents}</TabTitleText>} data-testid="tab-contents">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <ContentsView namespace={namespace} name={name} running={running} completed={hasContents} />
            </PageSection>
          </Tab>
          <Tab eventKey="graph" title={<TabTitleText>{d.tabGraph}</TabTitleText>} data-testid="tab-graph">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <OwnerGraphView namespace={namespace} name={name} running={running} completed={hasContents} />
            </PageSection>
          </Tab>
          <Tab eventKey="compare" title={<TabTitleText>{d.tabCompare}</TabTitleText>} data-testid="tab-compare">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              {hasContents ? <CompareView namespace={namespace} backup={backup} /> : <Alert variant="info" isInline title={t.manifests.manifest.notYet} />}
            </PageSection>
          </Tab>
          <Tab eventKey="spec" title={<TabTitleText>{d.tabSpec}</TabTitleText>} data-testid="tab-spec">
            <PageSection padding={{ default: 'noPadding' }} style={{ paddingTop: 'var(--pf-t--global--spacer--md)' }}>
              <p>{d.effectiveSpecIntro}</p>
              <CodeBlock data-testid="effective-spec">
                <CodeBlockCode>{toYaml(effectiveSpec ?? backup.spec.backupSpec)}</CodeBlockCode>
              </CodeBlock>
            </PageSection>
          </Tab>
        </Tabs>
      </PageSection>

      <ConfirmDeleteModal
        name={name}
        texts={t.backups.delete}
        copyTitle={d.copyDelete}
        action={deleteAction(namespace, name)}
        isOpen={deleting}
        permanent
        onDeleted={(outcome) => {
          setDeleted(outcome);
          loaded.reload();
        }}
        onClose={() => setDeleting(false)}
      />
    </>
  );
}

function Fact({ term, value }: { term: string; value: string }) {
  return (
    <DescriptionListGroup>
      <DescriptionListTerm>{term}</DescriptionListTerm>
      <DescriptionListDescription>{value}</DescriptionListDescription>
    </DescriptionListGroup>
  );
}

