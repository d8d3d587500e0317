// The namespace's own storage locations, live: provider, bucket/prefix, the Velero location's
// phase and the administrator's approval (Pending explained), with deletion; and the namespace's
// place in the cluster's shared backup pool, when there is one.
import { useEffect, useMemo, useRef, useState } from 'react';
import { useParams } from 'react-router';
import { Alert, Label, PageSection, Tooltip } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useDeleteDialog } from '../components/ConfirmDeleteModal';
import { Age, CreateLink, ListBody, RowDeleteButton } from '../components/ListPage';
import { ListHeading } from '../components/PageHeading';
import { PhaseLabel } from '../components/PhaseLabel';
import { useLiveList, useNow } from '../hooks';
import {
  anyPending,
  approvalOf,
  approvalView,
  isDefaultLocation,
  locationAccessMode,
  locationBucket,
  locationCredential,
  locationPhase,
  locationProblem,
  locationProvider,
} from '../locations/locationStatus';
import { may, useNamespaceAccess } from '../namespaces';
import { locationDeleteAction } from '../restores/actions';
import { sharedStorageView, useSharedStorage } from '../locations/sharedStorage';
import { SharedStorageAlert } from '../locations/SharedStorageView';
import { listAll } from '../lib/listAll';
import { fmt, t } from '../strings';

/** How often approvals are re-read while some location waits for the administrator. */
export const PENDING_POLL_MS = 15000;

export default function StorageLocations() {
  const { namespace = '' } = useParams();
  const l = t.locations.list;
  const access = useNamespaceAccess(namespace);
  const canCreate = may(access, 'storage-locations', 'create');
  const canDelete = may(access, 'storage-locations', 'delete');
  const [approvals, setApprovals] = useState<Record<string, string>>({});
  const live = useLiveList(namespace, 'storage-locations', (signal) =>
    listAll(namespace, 'storage-locations', signal).then((all) => {
      setApprovals(all.approvals);
      return all.items;
    }),
  );
  const now = useNow();
  const sharedStorage = useSharedStorage(namespace);
  const deletion = useDeleteDialog(t.locations.delete, (name) => locationDeleteAction(namespace, name), live.reload);
  const base = `/ns/${encodeURIComponent(namespace)}`;
  const rows = useMemo(() => [...(live.data ?? [])].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)), [live.data]);

  // Approvals are not in the change events: re-read them while some wait, and when a new
  // location appears (its approval is not known from the event).
  const { reload } = live;
  const pending = anyPending(approvals);
  const unknown = rows.map((row) => row.metadata.name).filter((name) => !(name in approvals));
  useEffect(() => {
    if (pending) {
      const timer = setInterval(reload, PENDING_POLL_MS);
      return () => clearInterval(timer);
    }
  }, [pending, reload]);
  const askedFor = useRef(new Set<string>());
  const unknownKey = unknown.join(',');
  useEffect(() => {
    const fresh = unknownKey.split(',').filter((name) => name && !askedFor.current.has(name));
    if (!fresh.length) return;
    fresh.forEach((name) => askedFor.current.add(name));
    reload();
  }, [unknownKey, reload]);

  const createButton = <CreateLink to={`${base}/storage-locations/new`} allowed={canCreate} deniedReason={l.noCreate} label={l.create} testId="location-create" />;
  const pendingNames = rows.filter((row) => approvalOf(approvals, row.metadata.name) === 'Pending');

  return (
    <PageSection data-testid="locations-page">
      <ListHeading title={l.title} stream={live.stream} intro={l.intro} action={createButton} />
      <SharedStorageAlert storage={sharedStorage.data} now={now} />
      <ListBody list={live} isEmpty={rows.length === 0} loadingLabel={l.loading} empty={{ title: l.empty, body: sharedStorageView(sharedStorage.data) ? t.manifests.sharedStorage.locationsEmptyBody : l.emptyBody, testId: 'locations-empty', action: createButton }}>
        {pendingNames.length > 0 && (
          <Alert variant="info" isInline title={fmt(l.pendingExplain, { count: pendingNames.length })} data-testid="locations-pending" />
        )}
        <Table aria-label={fmt(l.label, { namespace })} gridBreakPoint="grid-lg" variant="compact" data-testid="location-table">
          <Thead>
            <Tr>
              <Th>{t.common.name}</Th>
              <Th>{l.where}</Th>
              <Th>{l.approval}</Th>
              <Th>{l.phase}</Th>
              <Th>{t.common.age}</Th>
              <Th screenReaderText={t.common.actions} />
            </Tr>
          </Thead>
          <Tbody>
            {rows.map((location) => {
              const name = location.metadata.name;
              const approval = approvalView(approvalOf(approvals, name));
              const problem = locationProblem(location);
              return (
                <Tr key={name} data-testid="location-row" data-name={name}>
                  <Td dataLabel={t.common.name}>
                    {name}{' '}
                    {isDefaultLocation(location) && (
                      <Label isCompact color="blue">
                        {l.isDefault}
                      </Label>
                    )}{' '}
                    <small>{locationAccessMode(location)}</small>
                  </Td>
                  <Td dataLabel={l.where} data-testid="location-where">
                    {locationProvider(location)} · <code>{locationBucket(location)}</code>
                    <div>
                      <small>{fmt(l.credentialIs, { secret: locationCredential(location) })}</small>
                    </div>
                  </Td>
                  <Td dataLabel={l.approval}>
                    <Tooltip content={approval.explanation}>
                      <Label color={approval.color} isCompact tabIndex={0} data-testid="location-approval">
                        {approval.label}
                      </Label>
                    </Tooltip>
                    {approval.color === 'orange' && (
                      <div>
                        <small>{approval.explanation}</small>
                      </div>
                    )}
                  </Td>
                  <Td dataLabel={l.phase}>
                    <span data-testid="location-phase">
                      <PhaseLabel phase={locationPhase(location)} />
                    </span>
                    {problem && (
                      <div data-testid="location-problem">
                        <small>{fmt(l.problem, { message: problem })}</small>
                      </div>
                    )}
                  </Td>
                  <Td dataLabel={t.common.age}>
                    <Age at={location.metadata.creationTimestamp} now={now} />
                  </Td>
                  <Td isActionCell>
                    <RowDeleteButton label={fmt(l.deleteLabel, { name })} allowed={canDelete} deniedReason={l.noDelete} onClick={() => deletion.ask(name)} testId="location-delete" />
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
