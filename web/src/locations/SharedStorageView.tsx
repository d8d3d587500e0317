// The namespace's shared backup storage (seed 001) where storage locations are shown: its state,
// the message for tenants, and the purge date while Retained. Renders nothing when the cluster
// has no shared pool, the gateway does not know the endpoint, or it cannot be read.
import { Alert, Card, CardBody, CardTitle, Content, Label } from '@patternfly/react-core';
import type { SharedStorage } from '../api/types';
import { t } from '../strings';
import { sharedStorageView, type SharedStorageView as View, type StorageVariant } from './sharedStorage';

const LABEL_COLOR: Record<StorageVariant, 'green' | 'blue' | 'orange' | 'red' | 'grey'> = {
  success: 'green',
  info: 'blue',
  warning: 'orange',
  danger: 'red',
  custom: 'grey',
};

function Body({ view }: { view: View }) {
  const s = t.manifests.sharedStorage;
  return (
    <>
      <Content component="p">
        {s.state}:{' '}
        <Label isCompact color={LABEL_COLOR[view.variant]} data-testid="shared-storage-state">
          {view.stateLabel}
        </Label>
      </Content>
      {view.message && (
        <Content component="p" data-testid="shared-storage-message">
          {view.message}
        </Content>
      )}
      {view.purge && (
        <Content component="p" data-testid="shared-storage-purge">
          <strong>{view.purge}</strong>
        </Content>
      )}
    </>
  );
}

/** An inline alert (storage locations page). */
export function SharedStorageAlert({ storage, now }: { storage: SharedStorage | null | undefined; now?: number }) {
  const view = sharedStorageView(storage, now);
  if (!view) return null;
  return (
    <Alert variant={view.variant} isInline title={t.manifests.sharedStorage.title} data-testid="shared-storage" data-state={view.state}>
      <Body view={view} />
    </Alert>
  );
}

/** A dashboard card (overview). */
export function SharedStorageCard({ storage, now }: { storage: SharedStorage | null | undefined; now?: number }) {
  const view = sharedStorageView(storage, now);
  if (!view) return null;
  return (
    <Card isFullHeight data-testid="shared-storage" data-state={view.state}>
      <CardTitle component="h2">{t.manifests.sharedStorage.title}</CardTitle>
      <CardBody>
        <Body view={view} />
      </CardBody>
    </Card>
  );
}
