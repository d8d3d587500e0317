import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import BackupCreate from './BackupCreate';
import { aliceNamespaces, openPolicy } from '../testing/accessAnswers';
import { completedBackup, STORAGE_LOCATIONS, STRICT_POLICY } from '../testing/backupAnswers';
import { FakeEventSource, fakeGateway, invalid, problem, type FakeRoute } from '../testing/gateway';
import { renderPage, WhereAmI } from '../testing/render';
import { DRY_RUN, READY_STORAGE } from '../testing/manifestAnswers';

const BACKUPS = '/api/v1/namespaces/team-a/backups';

function routes(overrides: Record<string, FakeRoute> = {}): Record<string, FakeRoute> {
  return {
    'GET /api/v1/namespaces': { body: aliceNamespaces },
    'GET /api/v1/namespaces/team-a/policy': { body: STRICT_POLICY },
    'GET /api/v1/namespaces/team-a/storage-locations': { body: STORAGE_LOCATIONS },
    ...overrides,
  };
}

const open = () =>
  renderPage('/ns/team-a/backups/new', {
    '/ns/:namespace/backups/new': <BackupCreate />,
    '/ns/:namespace/backups/:name': <WhereAmI />,
  });

const type = (field: string, value: string) => fireEvent.change(screen.getByTestId(`field-${field}`), { target: { value } });
const text = (testId: string) => screen.getByTestId(testId).textContent;

beforeEach(() => FakeEventSource.install());
afterEach(() => vi.unstubAllGlobals());

describe('BackupCreate', () => {
  it('shows what the administrator enforces before submitting', async () => {
    fakeGateway(routes());
    open();
    const panel = await screen.findByTestId('policy-rules');
    expect(panel.textContent).toContain('snapshotVolumes: No');
    expect(panel.textContent).toContain('ttl: 720h0m0s');
    // Enforced: pre-filled and locked; default: placeholder; maximum: a limit.
    await waitFor(() => expect(screen.getByTestId<HTMLSelectElement>('field-snapshotVolumes').value).toBe('false'));
    expect(screen.getByTestId<HTMLSelectElement>('field-snapshotVolumes').disabled).toBe(true);
    expect(text('enforced-snapshotVolumes')).toBe('Enforced by your administrator: No');
    expect(screen.getByTestId('field-ttl').getAttribute('placeholder')).toBe('Default: 168h0m0s');
    expect(screen.getByText('At most 720h0m0s')).toBeTruthy();
    expect(screen.getByTestId('policy-restrictions').textContent).toContain('cluster-scoped resources are never backed up or restored');
    expect(screen.getByTestId<HTMLInputElement>('cluster-resources').disabled).toBe(true);
  });

  it('validates fields as the user types', async () => {
    fakeGateway(routes());
    open();
    await screen.findByTestId('policy-rules');
    expect(screen.queryByTestId('error-name')).toBeNull();
    type('name', 'Nightly_1');
    expect(text('error-name')).toContain('Use lowercase letters');
    type('name', 'nightly-1');
    expect(screen.queryByTestId('error-name')).toBeNull();
    type('ttl', '30d');
    expect(text('error-ttl')).toContain('"30d" is not a Go duration');
    type('ttl', '800h');
    expect(text('error-ttl')).toContain('800h is longer than the maximum of 720h0m0s your administrator allows.');
    type('ttl', '720h0m0s');
    expect(screen.queryByTestId('error-ttl')).toBeNull();
    type('labelSelector', 'app in (web');
    expect(text('error-labelSelector')).toContain('Not a label selector: unbalanced parentheses.');
    type('includedResources', 'configmaps, Not A Resource!');
    expect(text('error-includedResources')).toContain('"Not" is not a resource name');
  });

  it('refuses to submit an invalid form and points at the first problem', async () => {
    const { calls } = fakeGateway(routes());
    open();
    await screen.findByTestId('policy-rules');
    fireEvent.click(screen.getByTestId('create-submit'));
    expect(text('error-name')).toContain('Required.');
    expect(document.activeElement).toBe(screen.getByTestId('field-name'));
    expect(calls.filter((call) => call.method === 'POST')).toHaveLength(0);
  });

  it('shows the server’s 422 field errors at their inputs, the rest in an alert', async () => {
    // The demo gateway's answer to a backup naming a missing storage location and another namespace.
    const { calls } = fakeGateway(
      routes({
        'GET /api/v1/namespaces/team-a/policy': { body: openPolicy },
        [`POST ${BACKUPS}`]: invalid('the NonAdminBackup is refused by policy', [
          { field: 'spec.backupSpec.ttl', message: 'NonAdminBackup spec.backupSpec.ttl 9000h exceeds the maximum 720h0m0s', reason: 'maximum' },
          { field: 'spec.backupSpec.includedNamespaces', message: 'NonAdminBackup spec.backupSpec.includedNamespaces is restricted, can not contain namespaces other than: team-a', reason: 'restricted' },
        ]),
      }),
    );
    open();
    await screen.findByTestId('policy-panel');
    type('name', 'nightly');
    type('ttl', '9000h');
    fireEvent.click(screen.getByTestId('create-submit'));
    expect((await screen.findByTestId('server-error-ttl')).textContent).toContain('NonAdminBackup spec.backupSpec.ttl 9000h exceeds the maximum 720h0m0s');
    expect(text('create-server-errors')).toContain('spec.backupSpec.includedNamespaces');
    expect(document.activeElement).toBe(screen.getByTestId('field-ttl'));
    const post = calls.find((call) => call.method === 'POST')!;
    expect(post.body).toEqual({ name: 'nightly', spec: { backupSpec: { ttl: '9000h' } } });
    expect(post.headers['Idempotency-Key']).toMatch(/^[0-9a-f-]{32,36}$/);
    // Editing the field clears its server error.
    type('ttl', '24h');
    expect(screen.queryByTestId('server-error-ttl')).toBeNull();
  });

  it('creates once with one idempotency key, then opens the backup', async () => {
    let answer: (value: { status: number; body: unknown }) => void = () => {};
    const { calls } = fakeGateway(
      routes({
        'GET /api/v1/namespaces/team-a/policy': { body: openPolicy },
        [`POST ${BACKUPS}`]: () => new Promise((resolve) => (answer = resolve)),
      }),
    );
    open();
    await screen.findByTestId('policy-panel');
    type('name', 'nightly');
    type('includedResources', 'configmaps,deployments');
    type('labelSelector', 'app=web');
    type('ttl', '24h');
    fireEvent.click(screen.getByTestId('create-submit'));
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(calls.filter((call) => call.method === 'POST')).toHaveLength(1));
    const post = calls.find((call) => call.method === 'POST')!;
    expect(post.body).toEqual({
      name: 'nightly',
      spec: { backupSpec: { includedResources: ['configmaps', 'deployments'], labelSelector: { matchLabels: { app: 'web' } }, ttl: '24h' } },
    });
    answer({ status: 201, body: completedBackup('nightly') });
    expect((await screen.findByTestId('location')).textContent).toBe('/ns/team-a/backups/nightly');
  });

  it('keeps the idempotency key for the same request and changes it for another', async () => {
    const { calls } = fakeGateway(
      routes({
        'GET /api/v1/namespaces/team-a/policy': { body: openPolicy },
        [`POST ${BACKUPS}`]: { status: 503, body: problem(503, 'Service Unavailable', 'unavailable', 'the API server did not answer') },
      }),
    );
    open();
    await screen.findByTestId('policy-panel');
    type('name', 'nightly');
    fireEvent.click(screen.getByTestId('create-submit'));
    await screen.findByTestId('error-alert');
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(calls.filter((call) => call.method === 'POST')).toHaveLength(2));
    type('ttl', '24h');
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(calls.filter((call) => call.method === 'POST')).toHaveLength(3));
    const keys = calls.filter((call) => call.method === 'POST').map((call) => call.headers['Idempotency-Key']);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).not.toBe(keys[0]);
  });

  it('previews what the backup would take with dryRun=true and creates nothing', async () => {
    const { calls } = fakeGateway(
      routes({
        'GET /api/v1/namespaces/team-a/policy': { body: openPolicy },
        [`POST ${BACKUPS}`]: (call) => (call.query.get('dryRun') === 'true' ? { body: DRY_RUN } : { status: 500, body: problem(500, 'Boom', 'boom', 'not a dry run') }),
      }),
    );
    open();
    await screen.findByTestId('policy-panel');
    type('name', 'nightly-1');
    type('includedResources', 'configmaps,secrets,deployments');
    fireEvent.click(screen.getByTestId('create-preview'));
    const result = await screen.findByTestId('dry-run-result');
    const posts = calls.filter((call) => call.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(posts[0].url).toBe(`${BACKUPS}?dryRun=true`);
    // The same body a create would send.
    expect(posts[0].body).toEqual({ name: 'nightly-1', spec: { backupSpec: { includedResources: ['configmaps', 'secrets', 'deployments'] } } });
    expect(within(result).getByTestId('dry-run-total').textContent).toBe('3 items in 3 kinds');
    expect(within(result).getAllByTestId('dry-run-count').map((row) => row.textContent)).toEqual(['ConfigMap1', 'Secret1', 'Deployment (apps)1']);
    expect(within(result).getAllByTestId('dry-run-item').map((row) => row.getAttribute('data-name'))).toEqual(['web-config', 'web', 'web-credentials']);
    expect(within(result).getByTestId('dry-run-unreadable').textContent).toContain('secrets: Forbidden — secrets is forbidden');
    const overlap = within(result).getByTestId('overlap');
    expect(overlap.textContent).toContain('Would wait on backup b1: 2 overlapping items');
    fireEvent.click(within(overlap).getByRole('button', { name: 'Would wait on backup b1: 2 overlapping items' }));
    expect(within(overlap).getAllByTestId('overlap-item').map((item) => item.textContent)).toEqual(['configmaps team-a/web-config', 'deployments.apps team-a/web']);
    // Nothing was created and the form stays; changing it marks the preview as old.
    expect(screen.queryByTestId('location')).toBeNull();
    expect(screen.queryByTestId('dry-run-stale')).toBeNull();
    type('includedResources', 'configmaps');
    expect(screen.getByTestId('dry-run-stale').textContent).toContain('The form changed since this preview');
  });

  it('shows a refused dry run at the fields, like a create', async () => {
    fakeGateway(
      routes({
        'GET /api/v1/namespaces/team-a/policy': { body: openPolicy },
        [`POST ${BACKUPS}`]: invalid('the NonAdminBackup is refused by policy', [
          { field: 'spec.backupSpec.ttl', message: 'NonAdminBackup spec.backupSpec.ttl 9000h exceeds the maximum 720h0m0s', reason: 'maximum' },
        ]),
      }),
    );
    open();
    await screen.findByTestId('policy-panel');
    type('name', 'nightly');
    type('ttl', '9000h');
    fireEvent.click(screen.getByTestId('create-preview'));
    expect((await screen.findByTestId('server-error-ttl')).textContent).toContain('exceeds the maximum 720h0m0s');
    expect(screen.queryByTestId('dry-run-result')).toBeNull();
  });

  it('says where a backup without a storage location goes when the namespace uses the shared pool', async () => {
    fakeGateway(routes({ 'GET /api/v1/namespaces/team-a/sharedstorage': { body: READY_STORAGE } }));
    open();
    expect(await screen.findByText('Without a storage location, the backup goes to this namespace’s shared pool storage (Ready).')).toBeTruthy();
    expect(screen.getByTestId<HTMLSelectElement>('field-storageLocation').options[0].textContent).toBe('This namespace’s shared pool storage');
    // Choosing a location of its own makes the pool irrelevant.
    expect(screen.queryByText('This namespace has no storage locations of its own; backups go to the administrator’s default.')).toBeNull();
  });
});
