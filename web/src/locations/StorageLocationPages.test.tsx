// Behaviour of the storage-location pages: approval states explained in the list, deletion with
// confirmation, and the create form (Secret command, validation as typed, 422 in place).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import StorageLocations from '../pages/StorageLocations';
import StorageLocationCreate from '../pages/StorageLocationCreate';
import { openPolicy, SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { locationList } from '../testing/objectAnswers';
import { fakeGateway, invalid } from '../testing/gateway';
import { renderPage } from '../testing/render';
import { READY_STORAGE } from '../testing/manifestAnswers';

afterEach(() => vi.unstubAllGlobals());

const pendingList = {
  ...locationList,
  items: [
    locationList.items[0],
    { ...locationList.items[0], metadata: { ...locationList.items[0].metadata, name: 'loc-waiting' }, status: { phase: 'New' } },
  ],
  approvals: { 'loc-probe': 'Approved', 'loc-waiting': 'Pending' },
};

describe('StorageLocations', () => {
  it('shows provider, bucket, Velero phase, problem and approval, explaining Pending', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => (url.startsWith('/api/v1/namespaces/team-a/storage-locations?') ? { body: pendingList } : undefined));
    renderPage('/ns/team-a/storage-locations', { '/ns/:namespace/storage-locations': <StorageLocations /> });
    const rows = await screen.findAllByTestId('location-row');
    expect(rows.map((row) => row.getAttribute('data-name'))).toEqual(['loc-probe', 'loc-waiting']);
    expect(within(rows[0]).getByTestId('location-where').textContent).toContain('aws · my-bucket/team-a');
    expect(within(rows[0]).getByTestId('location-approval').textContent).toBe('Approved');
    expect(within(rows[0]).getByTestId('location-phase').textContent).toBe('BackingOff');
    expect(within(rows[0]).getByTestId('location-problem').textContent).toContain('Secret "web-credentials" has no key "cloud"');
    expect(within(rows[1]).getByTestId('location-approval').textContent).toBe('Pending approval');
    expect(rows[1].textContent).toContain('Waiting for the administrator to approve this location');
    expect(screen.getByTestId('locations-pending').textContent).toContain('1 location(s) are waiting for the administrator to approve them');
  });

  it('deletes only after confirmation, saying what stays', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, ({ method, url }) => {
      if (method === 'GET' && url.startsWith('/api/v1/namespaces/team-a/storage-locations?')) return { body: locationList };
      if (method === 'DELETE') return { body: { kind: 'NonAdminBackupStorageLocation', name: 'loc-probe', permanent: false, message: 'deleted' } };
      return undefined;
    });
    renderPage('/ns/team-a/storage-locations', { '/ns/:namespace/storage-locations': <StorageLocations /> });
    fireEvent.click(await screen.findByTestId('location-delete'));
    const dialog = await screen.findByTestId('confirm-delete');
    expect(dialog.textContent).toContain('Backups stored in the bucket are not touched');
    expect(calls.some((call) => call.method === 'DELETE')).toBe(false);
    fireEvent.click(screen.getByTestId('confirm-delete-button'));
    await waitFor(() => expect(calls.some((call) => call.method === 'DELETE' && call.url === '/api/v1/namespaces/team-a/storage-locations/loc-probe')).toBe(true));
  });

  it('shows the namespace’s shared backup storage above its own locations', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url.startsWith('/api/v1/namespaces/team-a/storage-locations?')) return { body: locationList };
      if (url === '/api/v1/namespaces/team-a/sharedstorage') return { body: READY_STORAGE };
      return undefined;
    });
    renderPage('/ns/team-a/storage-locations', { '/ns/:namespace/storage-locations': <StorageLocations /> });
    const panel = await screen.findByTestId('shared-storage');
    expect(panel.getAttribute('data-state')).toBe('Ready');
    expect(panel.textContent).toContain('Shared backup storage');
    expect(within(panel).getByTestId('shared-storage-message').textContent).toBe(READY_STORAGE.message);
    expect(within(panel).queryByTestId('shared-storage-purge')).toBeNull();
  });

  it('says that backups go to the shared pool when there is no location of its own', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url.startsWith('/api/v1/namespaces/team-a/storage-locations?')) return { body: { ...locationList, items: [], approvals: {} } };
      if (url === '/api/v1/namespaces/team-a/sharedstorage') return { body: READY_STORAGE };
      return undefined;
    });
    renderPage('/ns/team-a/storage-locations', { '/ns/:namespace/storage-locations': <StorageLocations /> });
    await screen.findByTestId('shared-storage');
    expect((await screen.findByTestId('locations-empty')).textContent).toContain('Backups without a storage location go to this namespace’s space in the cluster’s shared backup pool.');
  });

  it('shows no shared storage when the gateway does not have the endpoint', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => (url.startsWith('/api/v1/namespaces/team-a/storage-locations?') ? { body: locationList } : undefined));
    renderPage('/ns/team-a/storage-locations', { '/ns/:namespace/storage-locations': <StorageLocations /> });
    await screen.findAllByTestId('location-row');
    await waitFor(() => expect(calls.some((call) => call.path === '/api/v1/namespaces/team-a/sharedstorage')).toBe(true));
    expect(screen.queryByTestId('shared-storage')).toBeNull();
  });
});

describe('StorageLocationCreate', () => {
  function renderForm(policy = openPolicy) {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, (call) => {
      if (call.url === '/api/v1/namespaces/team-a/policy') return { body: policy };
      if (call.method === 'POST') {
        return invalid('the NonAdminBackupStorageLocation is refused by policy: BSL credentials secret not found: secrets "cloud-credentials" not found', [
          { field: 'spec.backupStorageLocationSpec.credential.name', message: 'BSL credentials secret not found: secrets "cloud-credentials" not found', reason: 'invalid' },
        ]);
      }
      return undefined;
    });
    renderPage('/ns/team-a/storage-locations/new', { '/ns/:namespace/storage-locations/new': <StorageLocationCreate /> });
    return calls;
  }
  const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

  it('shows the kubectl command for the Secret, following the typed names', async () => {
    renderForm();
    const command = await screen.findByTestId('location-secret-command');
    expect(command.querySelector('input')?.value ?? command.textContent).toContain('kubectl create secret generic cloud-credentials --from-file=cloud=./credentials -n team-a');
    type('location-secret-name', 'my-aws');
    await waitFor(() =>
      expect(screen.getByTestId('location-secret-command').querySelector('input')?.value ?? screen.getByTestId('location-secret-command').textContent).toContain(
        'kubectl create secret generic my-aws --from-file=cloud=./credentials -n team-a',
      ),
    );
    expect(screen.getByTestId('location-approval-note').textContent).toContain('need no approval');
  });

  it('says when the administrator must approve', async () => {
    renderForm({ ...openPolicy, requireApprovalForStorageLocations: true });
    expect((await screen.findByTestId('location-approval-note')).textContent).toContain('yours will be Pending until they do');
  });

  it('validates as typed and puts the server 422 on the Secret field', async () => {
    const calls = renderForm();
    await screen.findByTestId('location-name');
    type('location-bucket', 'My Bucket');
    expect((await screen.findByTestId('location-bucket-error')).textContent).toContain('A bucket name has 3 or more lowercase letters');
    type('location-name', 'loc-probe');
    type('location-bucket', 'my-bucket');
    type('location-prefix', 'team-a');
    type('location-config-value-0', 'us-east-1');
    type('location-secret-name', 'cloud-credentials');
    fireEvent.click(screen.getByTestId('location-submit'));
    expect((await screen.findByTestId('location-secret-name-error')).textContent).toContain('BSL credentials secret not found: secrets "cloud-credentials" not found');
    const post = calls.find((call) => call.method === 'POST')!;
    expect(post.body).toEqual({
      name: 'loc-probe',
      spec: {
        backupStorageLocationSpec: {
          provider: 'aws',
          objectStorage: { bucket: 'my-bucket', prefix: 'team-a' },
          config: { region: 'us-east-1' },
          credential: { name: 'cloud-credentials', key: 'cloud' },
          accessMode: 'ReadWrite',
        },
      },
    });
    expect(post.headers['Idempotency-Key']).toBeTruthy();
  }, 20000);

  it('does not send an incomplete form', async () => {
    const calls = renderForm();
    await screen.findByTestId('location-name');
    fireEvent.click(screen.getByTestId('location-submit'));
    expect((await screen.findByTestId('location-name-error')).textContent).toContain('Enter a name.');
    expect(screen.getByTestId('location-secret-name-error').textContent).toContain('Enter the name of the Secret');
    expect(calls.some((call) => call.method === 'POST')).toBe(false);
  });
});
