// The backups of a namespace (`/ns/:namespace/backups`), live: phases, progress, queue position
// and ETA, age and expiry update without reload. Filters (phase, label selector) go to the server
// and into the URL; more pages load on demand; restore and delete from each row. A backup
// waiting for the shared backup storage says so under its request phase.
import { useEffect, useRef, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import {
  Alert,
  AlertActionCloseButton,
  Button,
  EmptyState,
  EmptyStateActions,
  EmptyStateBody,
  EmptyStateFooter,
  Flex,
  FlexItem,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  HelperText,
  HelperTextItem,
  PageSection,
  Spinner,
  Content,
  TextInput,
  Title,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr, type ThProps } from '@patternfly/react-table';
import { api } from '../api/client';
import type { DeleteOutcome, NamespaceQueue, NonAdminBackup } from '../api/types';
import { listPage } from '../lib/listAll';
import { deleteAction } from '../backups/actions';
import { ConfirmDeleteModal } from '../components/ConfirmDeleteModal';
import { ErrorAlert } from '../components/ErrorAlert';
import { ItemsProgress } from '../components/ItemsProgress';
import { LiveBadge } from '../components/LiveBadge';
import { PhaseLabel } from '../components/PhaseLabel';
import { WhyNot } from '../components/WhyNot';
import { formatAge, formatTimestamp, formatUntil } from '../format';
import { useLiveList, useLoad, useNow } from '../hooks';
import { may, useNamespaceAccess } from '../namespaces';
import { fmt, t } from '../strings';
import {
  backupProgress,
  backupQueueByName,
  etaText,
  FILTER_PHASES,
  isRestorable,
  isRunning,
  listSignature,
  matchesListFilter,
  queuePosition,
  sortNewestFirst,
  veleroPhaseOf,
} from '../backups/backupStatus';
import { parseLabelSelector } from '../lib/labelSelector';
import { storageWaitMessage } from '../locations/sharedStorage';

/** Backups fetched per page (the server's default). */
export const PAGE_SIZE = 100;

type SortKey = 'name' | 'age';

export default function BackupList() {
  const { namespace = '' } = useParams();
  const l = t.backups.list;
  const access = useNamespaceAccess(namespace);
  const now = useNow(5000);
  const [search, setSearch] = useSearchParams();
  const phase = search.get('phase') ?? '';
  const labelSelector = search.get('labelSelector') ?? '';
  const [selectorDraft, setSelectorDraft] = useState(labelSelector);
  const selectorCheck = parseLabelSelector(selectorDraft);
  const [pages, setPages] = useState(1);
  const [more, setMore] = useState<string>();
  const [sort, setSort] = useState<{ key: SortKey; direction: 'asc' | 'desc' }>({ key: 'age', direction: 'asc' });
  const [deleteTarget, setDeleteTarget] = useState<string>();
  const [outcome, setOutcome] = useState<DeleteOutcome>();

  const list = useLiveList(namespace, 'backups', async (signal) => {
    const items: NonAdminBackup[] = [];
    let token: string | undefined;
    for (let page = 0; page < pages; page += 1) {
      const answer = await listPage(namespace, 'backups', { phase, labelSelector, limit: PAGE_SIZE, continue: token }, signal);
      items.push(...answer.items);
      token = answer.continue;
      if (!token) break;
    }
    if (!signal.aborted) setMore(token);
    return items;
  });

  // Filters and "load more" re-list (the namespace change re-lists by itself).
  const { reload } = list;
  const firstRun = useRef(true);
  useEffect(() => {
    if (firstRun.current) {
      firstRun.current = false;
      return;
    }
    reload();
  }, [phase, labelSelector, pages, reload]);
  // The URL's filters win over the draft and start again from one page (set while rendering:
  // React's pattern for state that follows a value).
  const [listedFor, setListedFor] = useState({ namespace, phase, labelSelector });
  if (listedFor.namespace !== namespace || listedFor.phase !== phase || listedFor.labelSelector !== labelSelector) {
    if (listedFor.labelSelector !== labelSelector) setSelectorDraft(labelSelector);
    setListedFor({ namespace, phase, labelSelector });
    setPages(1);
  }

  const filter = { phase, labelSelector };
  const visible = (list.data ?? []).filter((backup) => matchesListFilter(backup, filter));
  const newest = sortNewestFirst(visible);
  const ordered = sort.key === 'age' ? newest : newest.slice().sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  // Age ascending is youngest first.
  const rows = sort.direction === 'asc' ? ordered : ordered.slice().reverse();

  // ETAs come from the namespace's queue, fetched again whenever the list changes.
  const signature = listSignature(list.data);
  const anyRunning = (list.data ?? []).some((backup) => isRunning(backup.status?.phase, veleroPhaseOf(backup)));
  const queue = useLoad<NamespaceQueue | null>(
    (signal) => (anyRunning ? api.get('/api/v1/namespaces/{namespace}/queue', { path: { namespace }, signal }) : Promise.resolve(null)),
    `${namespace}/${signature}`,
  );
  const queueByName = backupQueueByName(queue.data?.items);

  const mayCreate = may(access, 'backups', 'create');
  const mayRestore = may(access, 'restores', 'create');
  const mayDelete = may(access, 'backups', 'delete');
  const base = `/ns/${encodeURIComponent(namespace)}`;

  const applySelector = () => {
    if (!selectorCheck.ok) return;
    const next = new URLSearchParams(search);
    if (selectorDraft.trim()) next.set('labelSelector', selectorDraft.trim());
    else next.delete('labelSelector');
    setSearch(next);
  };
  const setPhase = (value: string) => {
    const next = new URLSearchParams(search);
    if (value) next.set('phase', value);
    else next.delete('phase');
    setSearch(next);
  };
  const clearFilters = () => {
    setSelectorDraft('');
    setSearch(new URLSearchParams());
  };
  const filtered = !!(phase || labelSelector);

  const sortBy = (key: SortKey, index: number): ThProps['sort'] => ({
    sortBy: { index: sort.key === 'name' ? 0 : 6, direction: sort.direction },
    onSort: (_event, _index, direction) => setSort({ key, direction }),
    columnIndex: index,
  });

  const createButton = (
    <Button
      variant="primary"
      isAriaDisabled={!mayCreate}
      component={mayCreate ? (props: object) => <Link {...props} to={`${base}/backups/new`} /> : undefined}
      data-testid="create-backup"
    >
      {l.create}
    </Button>
  );
  const create = <WhyNot reason={!mayCreate && fmt(l.createForbidden, { namespace })}>{createButton}</WhyNot>;

  return (
    <>
      <PageSection data-testid="backup-list">
        <Flex alignItems={{ default: 'alignItemsCenter' }} flexWrap={{ default: 'wrap' }} gap={{ default: 'gapMd' }}>
          <FlexItem>
            <Title headingLevel="h1">{l.title}</Title>
          </FlexItem>
          <FlexItem>
            <LiveBadge state={list.stream} wording="detailed" />
          </FlexItem>
          <FlexItem align={{ default: 'alignRight' }}>{create}</FlexItem>
        </Flex>
        <Content component="p">{fmt(l.intro, { namespace })}</Content>
      </PageSection>
      <PageSection>
        {outcome && (
          <Alert
            variant="info"
            isInline
            title={t.backups.delete.requested}
            actionClose={<AlertActionCloseButton onClose={() => setOutcome(undefined)} />}
            data-testid="delete-outcome"
          >
            {outcome.message}
          </Alert>
        )}
        <Toolbar aria-label={l.filterLabel}>
          <ToolbarContent>
            <ToolbarGroup variant="filter-group">
              <ToolbarItem>
                <FormSelect value={phase} onChange={(_event, value) => setPhase(value)} aria-label={l.filterPhase} data-testid="filter-phase">
                  <FormSelectOption value="" label={l.filterPhaseAll} />
                  {FILTER_PHASES.map((value) => (
                    <FormSelectOption key={value} value={value} label={value} />
                  ))}
                </FormSelect>
              </ToolbarItem>
              <ToolbarItem>
                <TextInput
                  type="search"
                  value={selectorDraft}
                  onChange={(_event, value) => setSelectorDraft(value)}
                  onKeyDown={(event) => {
                    if (event.key === 'Enter') applySelector();
                  }}
                  placeholder={l.filterSelectorPlaceholder}
                  aria-label={l.filterSelector}
                  validated={selectorCheck.ok ? 'default' : 'error'}
                  data-testid="filter-selector"
                />
                {!selectorCheck.ok && (
                  <FormHelperText>
                    <HelperText>
                      <HelperTextItem variant="error">{fmt(t.backups.validation.selectorInvalid, { error: selectorCheck.error })}</HelperTextItem>
                    </HelperText>
                  </FormHelperText>
                )}
              </ToolbarItem>
              <ToolbarItem>
                <Button variant="secondary" onClick={applySelector} isDisabled={!selectorCheck.ok} data-testid="filter-apply">
                  {l.filterApply}
                </Button>
              </ToolbarItem>
              {filtered && (
                <ToolbarItem>
                  <Button variant="link" onClick={clearFilters} data-testid="filter-clear">
                    {l.filterClear}
                  </Button>
                </ToolbarItem>
              )}
            </ToolbarGroup>
          </ToolbarContent>
        </Toolbar>

        {list.error ? <ErrorAlert error={list.error} onRetry={list.reload} /> : null}
        {list.loading && !list.data && <Spinner size="xl" aria-label={t.app.loading} />}
        {list.data && rows.length === 0 && !filtered && (
          <EmptyState titleText={l.empty} headingLevel="h2" data-testid="backups-empty">
            <EmptyStateBody>{fmt(l.emptyBody, { namespace })}</EmptyStateBody>
            <EmptyStateFooter>
              <EmptyStateActions>{create}</EmptyStateActions>
            </EmptyStateFooter>
          </EmptyState>
        )}
        {list.data && rows.length === 0 && filtered && (
          <EmptyState titleText={l.emptyFiltered} headingLevel="h2" data-testid="backups-empty-filtered">
            <EmptyStateBody>{l.emptyFilteredBody}</EmptyStateBody>
            <EmptyStateFooter>
              <EmptyStateActions>
                <Button variant="link" onClick={clearFilters}>
                  {l.filterClear}
                </Button>
              </EmptyStateActions>
            </EmptyStateFooter>
          </EmptyState>
        )}
        {rows.length > 0 && (
          <Table aria-label={fmt(l.tableLabel, { namespace })} variant="compact" gridBreakPoint="grid-lg" data-testid="backups-table">
            <Thead>
              <Tr>
                <Th sort={sortBy('name', 0)}>{t.common.name}</Th>
                <Th>{l.columnRequest}</Th>
                <Th>{l.columnVelero}</Th>
                <Th width={15}>{t.common.progress}</Th>
                <Th>{t.common.queue}</Th>
                <Th>{t.common.eta}</Th>
                <Th sort={sortBy('age', 6)} modifier="nowrap">{t.common.age}</Th>
                <Th modifier="nowrap">{l.columnExpires}</Th>
                <Th screenReaderText={t.common.actions} />
              </Tr>
            </Thead>
            <Tbody>
              {rows.map((backup) => {
                const name = backup.metadata.name;
                const requestPhase = backup.status?.phase;
                const veleroPhase = veleroPhaseOf(backup);
                const running = isRunning(requestPhase, veleroPhase);
                const progress = backupProgress(backup);
                const position = queuePosition(backup);
                const eta = running ? etaText(queueByName.get(name)) : null;
                const expiration = backup.status?.veleroBackup?.status?.expiration;
                const deleting = requestPhase === 'Deleting' || !!backup.spec.deleteBackup;
                const restorable = isRestorable(veleroPhase, requestPhase) && !deleting;
                const storageWait = storageWaitMessage(backup);
                const restoreButton = (
                  <Button
                    variant="secondary"
                    size="sm"
                    isAriaDisabled={!mayRestore || !restorable}
                    component={mayRestore && restorable ? (props: object) => <Link {...props} to={`${base}/backups/${encodeURIComponent(name)}/restore`} /> : undefined}
                    aria-label={fmt(l.restoreLabel, { name })}
                    data-testid="row-restore"
                  >
                    {l.restore}
                  </Button>
                );
                const deleteButton = (
                  <Button
                    variant="link"
                    isDanger
                    size="sm"
                    isAriaDisabled={!mayDelete || deleting}
                    onClick={() => setDeleteTarget(name)}
                    aria-label={fmt(l.deleteLabel, { name })}
                    data-testid="row-delete"
                  >
                    {t.common.delete}
                  </Button>
                );
                return (
                  <Tr key={name} data-testid="backup-row" data-backup={name}>
                    <Td dataLabel={t.common.name}>
                      <Link to={`${base}/backups/${encodeURIComponent(name)}`} data-testid="backup-link">
                        {name}
                      </Link>
                    </Td>
                    <Td dataLabel={l.columnRequest}>
                      <PhaseLabel phase={requestPhase} />
                      {storageWait && (
                        <div title={storageWait} data-testid="row-storage-wait">
                          <small>{t.manifests.storageWait.row}</small>
                        </div>
                      )}
                    </Td>
                    <Td dataLabel={l.columnVelero}>
                      <PhaseLabel phase={veleroPhase} />
                    </Td>
                    <Td dataLabel={t.common.progress} data-testid="row-progress" style={{ minWidth: '10rem' }}>
                      <ItemsProgress done={progress.done} total={progress.total} phase={veleroPhase} label={fmt(l.progressLabel, { name })} />
                    </Td>
                    <Td dataLabel={t.common.queue} data-testid="row-queue">
                      {position ? fmt(l.queued, { position }) : t.common.none}
                    </Td>
                    <Td dataLabel={t.common.eta} data-testid="row-eta">
                      {eta ?? t.common.none}
                    </Td>
                    <Td dataLabel={t.common.age} data-testid="row-age">
                      <span title={formatTimestamp(backup.metadata.creationTimestamp)}>{formatAge(backup.metadata.creationTimestamp, now)}</span>
                    </Td>
                    <Td dataLabel={l.columnExpires} data-testid="row-expires">
                      {deleting ? l.deleting : <span title={formatTimestamp(expiration)}>{formatUntil(expiration, now)}</span>}
                    </Td>
                    <Td dataLabel={t.common.actions}>
                      <Flex gap={{ default: 'gapSm' }} flexWrap={{ default: 'nowrap' }}>
                        <WhyNot reason={!mayRestore ? l.restoreForbidden : !restorable && l.restoreNotReady}>{restoreButton}</WhyNot>
                        <WhyNot reason={!mayDelete && l.deleteForbidden}>{deleteButton}</WhyNot>
                      </Flex>
                    </Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
        {rows.length > 0 && <Content component="small">{fmt(l.shownCount, { count: rows.length })}</Content>}
        {more && (
          <Button variant="secondary" onClick={() => setPages((count) => count + 1)} isLoading={list.loading} data-testid="load-more">
            {list.loading ? l.loadingMore : l.loadMore}
          </Button>
        )}
      </PageSection>
      {deleteTarget && (
        <ConfirmDeleteModal
          name={deleteTarget}
          texts={t.backups.delete}
          copyTitle={t.backups.detail.copyDelete}
          action={deleteAction(namespace, deleteTarget)}
          permanent
          onDeleted={setOutcome}
          onClose={() => setDeleteTarget(undefined)}
        />
      )}
    </>
  );
}
