// One restore: "why did this fail" on top when it failed, then its phase, progress, queue and
// timing, conditions in plain words, the timeline from the history, the effective spec, the
// searchable log and Velero's results — following live changes; deletion with confirmation;
// while it has not started, the running operations it waits on.
import { useCallback, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import {
  Alert,
  Breadcrumb,
  BreadcrumbItem,
  Button,
  CodeBlock,
  CodeBlockCode,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Flex,
  FlexItem,
  List,
  ListItem,
  PageSection,
  Spinner,
  Stack,
  StackItem,
  Tab,
  Tabs,
  TabTitleText,
  Title,
} from '@patternfly/react-core';
import { api, ApiError } from '../api/client';
import { descriptionConditions, tenantObject, type Description, type NonAdminRestore, type OperationDetail } from '../api/types';
import { resultSections } from '../backups/ResultsView';
import { needsFailureSummary, summarizeFailure, type VeleroResults } from '../lib/failureSummary';
import { ConfirmDeleteModal } from '../components/ConfirmDeleteModal';
import { CopyAs } from '../components/CopyAs';
import { describeError, ErrorAlert } from '../components/ErrorAlert';
import { ItemsProgress } from '../components/ItemsProgress';
import { LiveBadge } from '../components/LiveBadge';
import { PhaseLabel } from '../components/PhaseLabel';
import { WhyNot } from '../components/WhyNot';
import { formatDuration, formatTimestamp } from '../format';
import { useLoad, useNamespaceEvents } from '../hooks';
import { fetchResults } from '../lib/artifacts';
import { may, useNamespaceAccess } from '../namespaces';
import { restoreDeleteAction, restoreDescribeAction, restoreResultsAction } from '../restores/actions';
import { useCoalescedVersion } from '../restores/useCoalescedVersion';
import { RestoreFailureSummary } from '../restores/RestoreFailureSummary';
import { RestoreLogPanel } from '../restores/RestoreLogPanel';
import {
  conditionInWords,
  descriptionPhase,
  descriptionProgress,
  isFinished,
  pickOperation,
  secondsBetween,
  tidyTimeline,
  timelineInWords,
} from '../restores/restoreStatus';
import { isPendingOperation } from '../manifests/preview';
import { WaitingOn } from '../manifests/WaitingOn';
import { fmt, t } from '../strings';
import { toYaml } from '../yaml';

/** Live changes re-read the restore at most this often. */
const LIVE_REREAD_MS = 700;

/** Room between the tabs and their content. */
const TAB_BODY = { paddingTop: 'var(--pf-t--global--spacer--md, 1rem)' };

interface Loaded {
  restore: NonAdminRestore;
  description: Description;
}

async function loadTimeline(namespace: string, name: string, uid: string | undefined, signal: AbortSignal): Promise<OperationDetail | null> {
  const page = await api.get('/api/v1/namespaces/{namespace}/history', { path: { namespace }, query: { kind: ['restore'], q: name, limit: 100 }, signal });
  const operation = pickOperation(page.items ?? [], name, uid);
  return operation ? api.get('/api/v1/namespaces/{namespace}/history/{operationId}', { path: { namespace, operationId: operation.id }, signal }) : null;
}

function Timeline({ namespace, name, uid, version }: { namespace: string; name: string; uid?: string; version: string }) {
  const d = t.restores.detail;
  const timeline = useLoad((signal) => loadTimeline(namespace, name, uid, signal), `${namespace}/${name}/${uid}/${version}`);
  if (timeline.error && !timeline.data) return <Alert variant="warning" isInline title={d.timelineFailed}>{describeError(timeline.error).title}</Alert>;
  if (timeline.data === undefined) return <Spinner size="md" aria-label={t.app.loading} />;
  const entries = tidyTimeline(timeline.data?.timeline ?? []);
  if (!entries.length) return <p data-testid="restore-timeline-empty">{d.noTimeline}</p>;
  return (
    <List isPlain data-testid="restore-timeline">
      {entries.map((entry, index) => (
        <ListItem key={`${entry.at}/${entry.attribute}/${index}`}>
          <small>{formatTimestamp(entry.at)}</small> — {timelineInWords(entry)}
        </ListItem>
      ))}
    </List>
  );
}

function Results({ results, error, loading, finished, onRetry, namespace, name }: { results?: VeleroResults | null; error: unknown; loading: boolean; finished: boolean; onRetry: () => void; namespace: string; name: string }) {
  const d = t.restores.detail;
  let body;
  if (!finished) body = <Alert variant="info" isInline isPlain title={d.resultsNotReady} />;
  else if (error) body = <ErrorAlert error={error} onRetry={onRetry} />;
  else if (loading && !results) body = <Spinner size="md" aria-label={t.app.loading} />;
  else {
    const sections = [
      ...resultSections(results?.errors).map((section) => ({ ...section, kind: d.errors })),
      ...resultSections(results?.warnings).map((section) => ({ ...section, kind: d.warnings })),
    ];
    body = sections.length ? (
      sections.map((section) => (
        <Content key={`${section.kind}/${section.title}`}>
          <h3>
            {section.kind} · {section.title}
          </h3>
          <List>
            {section.messages.map((message, index) => (
              <ListItem key={index}>{message}</ListItem>
            ))}
          </List>
        </Content>
      ))
    ) : (
      <Alert variant="success" isInline isPlain title={d.resultsEmpty} />
    );
  }
  return (
    <div data-testid="restore-results">
      {body}
      <CopyAs title={d.copyResults} action={restoreResultsAction(namespace, name)} />
    </div>
  );
}

export default function RestoreDetail() {
  const { namespace = '', name = '' } = useParams();
  const d = t.restores.detail;
  const navigate = useNavigate();
  const access = useNamespaceAccess(namespace);
  const canDelete = may(access, 'restores', 'delete');
  const canDownload = access?.canDownload ?? false;
  const [version, bump] = useCoalescedVersion(LIVE_REREAD_MS);
  const [deleted, setDeleted] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [tab, setTab] = useState<string | number>('details');

  const loaded = useLoad<Loaded>(
    async (signal) => {
      const [restore, description] = await Promise.all([
        api.get('/api/v1/namespaces/{namespace}/restores/{name}', { path: { namespace, name }, signal }).then((restore) => tenantObject('restores', restore)),
        api.get('/api/v1/namespaces/{namespace}/restores/{name}/describe', { path: { namespace, name }, signal }),
      ]);
      return { restore, description };
    },
    `${namespace}/${name}/${version}`,
  );
  const stream = useNamespaceEvents(
    namespace,
    useCallback(
      (event) => {
        if (event.resource !== 'restores' || event.name !== name) return;
        if (event.type === 'DELETED') setDeleted(true);
        else bump();
      },
      [name, bump],
    ),
    bump,
  );

  const description = loaded.data?.description;
  const restore = loaded.data?.restore;
  const phase = description ? descriptionPhase(description) : undefined;
  const conditions = description ? descriptionConditions(description) : [];
  const finished = isFinished(description?.veleroPhase);
  const failed = needsFailureSummary(description);

  const results = useLoad<VeleroResults | null>(
    (signal) => (finished && canDownload ? fetchResults(namespace, 'restores', name, signal) : Promise.resolve(null)),
    `${namespace}/${name}/results/${finished}/${canDownload}`,
  );
  const summary = useMemo(() => (failed && description ? summarizeFailure(results.data ?? null, description) : null), [failed, description, results.data]);

  if (loaded.error && !loaded.data) {
    const notFound = loaded.error instanceof ApiError && loaded.error.status === 404;
    return (
      <PageSection data-testid="restore-detail-page">
        <Breadcrumb>
          <BreadcrumbItem render={() => <Link to={`/ns/${encodeURIComponent(namespace)}/restores`}>{d.back}</Link>} />
        </Breadcrumb>
        {notFound ? <Alert variant="warning" isInline title={fmt(d.notFound, { name, namespace })} /> : <ErrorAlert error={loaded.error} onRetry={loaded.reload} />}
      </PageSection>
    );
  }
  if (!description || !restore) {
    return (
      <PageSection data-testid="restore-detail-page">
        <Spinner aria-label={t.app.loading} />
      </PageSection>
    );
  }

  const progress = descriptionProgress(description);
  const backup = restore.spec.restoreSpec.backupName;
  const base = `/ns/${encodeURIComponent(namespace)}`;
  const took = secondsBetween(description.started, description.completed);
  const pending = !deleted && isPendingOperation('restores', description.requestPhase, description.veleroPhase);
  const resultsNote = !canDownload
    ? t.restores.failure.resultsNotAllowed
    : results.error
      ? fmt(t.restores.failure.resultsUnavailable, { reason: describeError(results.error).title })
      : finished && results.loading && !results.data
        ? t.restores.failure.resultsLoading
        : null;

  return (
    <>
      <PageSection data-testid="restore-detail-page">
        <Breadcrumb>
          <BreadcrumbItem render={() => <Link to={`${base}/restores`}>{d.back}</Link>} />
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }} flexWrap={{ default: 'wrap' }}>
          <FlexItem>
            <Title headingLevel="h1" data-testid="restore-title">
              {fmt(d.title, { name })}{' '}
              <span data-testid="restore-phase">
                <PhaseLabel phase={phase} />
              </span>{' '}
              <LiveBadge state={stream} wording="short" />
            </Title>
          </FlexItem>
          <FlexItem>
            <WhyNot reason={!canDelete && t.restores.list.noDelete}>
              <Button variant="danger" onClick={() => setConfirming(true)} isAriaDisabled={!canDelete || deleted} data-testid="restore-delete">
                {d.delete}
              </Button>
            </WhyNot>
          </FlexItem>
        </Flex>
        {deleted && <Alert variant="info" isInline title={fmt(t.restores.delete.done, { name })} data-testid="restore-deleted" />}
        {loaded.error ? <ErrorAlert error={loaded.error} onRetry={loaded.reload} /> : null}
      </PageSection>
      {summary && (
        <PageSection>
          <RestoreFailureSummary summary={summary} resultsNote={resultsNote} />
        </PageSection>
      )}
      <PageSection>
        <DescriptionList isHorizontal isCompact columnModifier={{ default: '1Col', lg: '2Col' }} data-testid="restore-summary">
          <DescriptionListGroup>
            <DescriptionListTerm>{d.source}</DescriptionListTerm>
            <DescriptionListDescription>
              {backup ? (
                <Link to={`${base}/backups/${encodeURIComponent(backup)}`} data-testid="restore-source">
                  {backup}
                </Link>
              ) : (
                t.common.none
              )}
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.progress}</DescriptionListTerm>
            <DescriptionListDescription data-testid="restore-progress">
              <ItemsProgress done={progress.done} total={progress.total} phase={phase} label={fmt(t.restores.list.progressLabel, { name })} />
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.requestPhase}</DescriptionListTerm>
            <DescriptionListDescription>{description.requestPhase ?? t.common.none}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.veleroPhase}</DescriptionListTerm>
            <DescriptionListDescription>{description.veleroPhase ?? t.common.none}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.queue}</DescriptionListTerm>
            <DescriptionListDescription data-testid="restore-queue">
              {description.queuePosition && !finished
                ? [
                    fmt(t.common.queuePosition, { position: description.queuePosition }),
                    description.eta ? fmt(t.common.startsIn, { duration: formatDuration(description.eta.startInSeconds) }) : null,
                    description.eta ? fmt(t.common.finishesIn, { duration: formatDuration(description.eta.finishInSeconds) }) : null,
                  ]
                    .filter(Boolean)
                    .join(' · ')
                : d.notQueued}
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.started}</DescriptionListTerm>
            <DescriptionListDescription>{formatTimestamp(description.started)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>{d.completed}</DescriptionListTerm>
            <DescriptionListDescription>
              {formatTimestamp(description.completed)}
              {took !== null ? ` (${fmt(d.took, { duration: formatDuration(took) })})` : ''}
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>
              {d.errors} / {d.warnings}
            </DescriptionListTerm>
            <DescriptionListDescription data-testid="restore-counts">
              {description.errors} / {description.warnings}
            </DescriptionListDescription>
          </DescriptionListGroup>
        </DescriptionList>
        <CopyAs title={d.copyGet} action={restoreDescribeAction(namespace, name)} />
      </PageSection>
      {pending && (
        <PageSection>
          <WaitingOn
            namespace={namespace}
            kind="restores"
            name={name}
            pending={pending}
            version={`${description.requestPhase}/${description.veleroPhase}/${restore.metadata.resourceVersion}`}
          />
        </PageSection>
      )}
      <PageSection>
        <Tabs activeKey={tab} onSelect={(_event, key) => setTab(key)} aria-label={fmt(d.title, { name })} data-testid="restore-tabs" mountOnEnter>
          <Tab eventKey="details" title={<TabTitleText>{d.details}</TabTitleText>} data-testid="restore-tab-details">
            <Stack hasGutter style={TAB_BODY}>
              <StackItem>
                <Title headingLevel="h2" size="md">
                  {d.conditions}
                </Title>
                {conditions.length ? (
                  <List data-testid="restore-conditions">
                    {conditions.map((condition) => (
                      <ListItem key={condition.type}>
                        {conditionInWords(condition)} <small>({formatTimestamp(condition.lastTransitionTime)})</small>
                      </ListItem>
                    ))}
                  </List>
                ) : (
                  <p>{d.noConditions}</p>
                )}
              </StackItem>
              <StackItem>
                <Title headingLevel="h2" size="md">
                  {d.timeline}
                </Title>
                <Timeline namespace={namespace} name={name} uid={restore.metadata.uid} version={`${description.requestPhase}/${description.veleroPhase}`} />
              </StackItem>
              <StackItem>
                <Title headingLevel="h2" size="md">
                  {d.spec}
                </Title>
                <Content component="small">{d.specHelp}</Content>
                <CodeBlock data-testid="restore-spec">
                  <CodeBlockCode>{toYaml(description.effectiveSpec)}</CodeBlockCode>
                </CodeBlock>
              </StackItem>
            </Stack>
          </Tab>
          <Tab eventKey="logs" title={<TabTitleText>{d.logs}</TabTitleText>} data-testid="restore-tab-logs">
            <div style={TAB_BODY}>
              <RestoreLogPanel namespace={namespace} name={name} finished={finished} canDownload={canDownload} />
            </div>
          </Tab>
          <Tab eventKey="results" title={<TabTitleText>{d.results}</TabTitleText>} data-testid="restore-tab-results">
            <div style={TAB_BODY}>
              <Results results={results.data} error={results.error} loading={results.loading} finished={finished} onRetry={results.reload} namespace={namespace} name={name} />
            </div>
          </Tab>
        </Tabs>
      </PageSection>
      {confirming && (
        <ConfirmDeleteModal
          name={name}
          texts={t.restores.delete}
          action={restoreDeleteAction(namespace, name)}
          onDeleted={() => void navigate(`${base}/restores`)}
          onClose={() => setConfirming(false)}
        />
      )}
    </>
  );
}
