// The namespace's restores, live: phase, progress, queue position, age and source backup, with
// deletion (the restored objects stay) and a way into the restore wizard.
import { useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { PageSection, SearchInput, Toolbar, ToolbarContent, ToolbarItem } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { NonAdminRestore } from '../api/types';
import { useDeleteDialog } from '../components/ConfirmDeleteModal';
import { ItemsProgress } from '../components/ItemsProgress';
import { Age, CreateLink, ListBody, RowDeleteButton } from '../components/ListPage';
import { ListHeading } from '../components/PageHeading';
import { PhaseLabel } from '../components/PhaseLabel';
import { useLiveList, useNow } from '../hooks';
import { may, useNamespaceAccess } from '../namespaces';
import { restoreDeleteAction } from '../restores/actions';
import { listAll } from '../lib/listAll';
import { restorePhase, restoreProgress, restoreQueuePosition } from '../restores/restoreStatus';
import { fmt, t } from '../strings';

/** Newest first; the filter matches the restore or its backup name (pure). */
export function visibleRestores(items: NonAdminRestore[], filter: string): NonAdminRestore[] {
  const needle = filter.trim().toLowerCase();
  return items
    .filter((item) => !needle || item.metadata.name.toLowerCase().includes(needle) || (item.spec.restoreSpec.backupName ?? '').toLowerCase().includes(needle))
    .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name));
}

export default function RestoreList() {
  const { namespace = '' } = useParams();
  const l = t.restores.list;
  const access = useNamespaceAccess(namespace);
  const canCreate = may(access, 'restores', 'create');
  const canDelete = may(access, 'restores', 'delete');
  const live = useLiveList(namespace, 'restores', (signal) => listAll(namespace, 'restores', signal).then((all) => all.items));
  const now = useNow();
  const deletion = useDeleteDialog(t.restores.delete, (name) => restoreDeleteAction(namespace, name), live.reload);
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => visibleRestores(live.data ?? [], filter), [live.data, filter]);
  const base = `/ns/${encodeURIComponent(namespace)}`;

  const createButton = <CreateLink to={`${base}/restores/new`} allowed={canCreate} deniedReason={l.noCreate} label={l.create} testId="restore-create" />;

  return (
    <PageSection data-testid="restore-list-page">
      <ListHeading title={l.title} stream={live.stream} intro={l.intro} action={createButton} />
      {live.data && live.data.length > 0 && (
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <SearchInput aria-label={l.filter} placeholder={l.filter} value={filter} onChange={(_event, value) => setFilter(value)} onClear={() => setFilter('')} data-testid="restore-filter" />
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      )}
      <ListBody list={live} isEmpty={live.data?.length === 0} loadingLabel={l.loading} empty={{ title: l.empty, body: l.emptyBody, testId: 'restores-empty', action: createButton }}>
        <Table aria-label={fmt(l.label, { namespace })} gridBreakPoint="grid-md" variant="compact" data-testid="restore-table">
          <Thead>
            <Tr>
              <Th>{t.common.name}</Th>
              <Th>{t.common.phase}</Th>
              <Th>{t.common.progress}</Th>
              <Th>{t.common.queue}</Th>
              <Th>{l.source}</Th>
              <Th>{t.common.age}</Th>
              <Th screenReaderText={t.common.actions} />
            </Tr>
          </Thead>
          <Tbody>
            {rows.length === 0 && (
              <Tr>
                <Td colSpan={7}>{l.noMatch}</Td>
              </Tr>
            )}
            {rows.map((restore) => {
              const name = restore.metadata.name;
              const phase = restorePhase(restore);
              const progress = restoreProgress(restore);
              const position = restoreQueuePosition(restore);
              const backup = restore.spec.restoreSpec.backupName;
              return (
                <Tr key={name} data-testid="restore-row" data-name={name}>
                  <Td dataLabel={t.common.name}>
                    <Link to={`${base}/restores/${encodeURIComponent(name)}`} data-testid="restore-link">
                      {name}
                    </Link>
                  </Td>
                  <Td dataLabel={t.common.phase}>
                    <PhaseLabel phase={phase} />
                  </Td>
                  <Td dataLabel={t.common.progress}>
                    <ItemsProgress done={progress.done} total={progress.total} phase={phase} label={fmt(t.restores.list.progressLabel, { name })} />
                  </Td>
                  <Td dataLabel={t.common.queue} data-testid="restore-queue">
                    {position ? fmt(l.queued, { position }) : t.common.none}
                  </Td>
                  <Td dataLabel={l.source}>
                    {backup ? (
                      <Link to={`${base}/backups/${encodeURIComponent(backup)}`} data-testid="restore-source">
                        {backup}
                      </Link>
                    ) : (
                      t.common.none
                    )}
                  </Td>
                  <Td dataLabel={t.common.age}>
                    <Age at={restore.metadata.creationTimestamp} now={now} />
                  </Td>
                  <Td isActionCell>
                    <RowDeleteButton label={fmt(l.deleteLabel, { name })} allowed={canDelete} deniedReason={l.noDelete} onClick={() => deletion.ask(name)} testId="restore-delete" />
                  </Td>
                </Tr>
              );
            })}
          </Tbody>
        </Table>
      </ListBody>
      {deletion.dialog}
    </PageSection>
  );
}
