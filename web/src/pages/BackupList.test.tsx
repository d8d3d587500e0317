import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import BackupList from './BackupList';
import type { NamespaceQueue, NonAdminBackup } from '../api/types';
import { aliceNamespaces, readOnlyNamespaces } from '../testing/accessAnswers';
import { completedBackup } from '../testing/backupAnswers';
import { FakeEventSource, fakeGateway, type FakeRoute } from '../testing/gateway';
import { renderPage } from '../testing/render';

const BACKUPS = '/api/v1/namespaces/team-a/backups';
const list = (items: NonAdminBackup[], next?: string) => ({ apiVersion: 'oadp.openshift.io/v1alpha1', kind: 'NonAdminBackupList', metadata: next ? { continue: next } : {}, items });
const running = completedBackup('nightly', { veleroPhase: 'InProgress', done: 2, total: 6, position: 2 });
running.metadata.creationTimestamp = '2026-11-23T06:10:00Z';
const QUEUE: NamespaceQueue = {
  namespace: 'team-a',
  items: [{ kind: 'backup', namespace: 'team-a', name: 'nightly', phase: 'InProgress', state: 'pending', position: 2, eta: { startInSeconds: 120, finishInSeconds: 420, samples: 4 } }],
};

function routes(overrides: Record<string, FakeRoute> = {}): Record<string, FakeRoute> {
  return {
    'GET /api/v1/namespaces': { body: aliceNamespaces },
    [`GET ${BACKUPS}`]: { body: list([completedBackup('probe-1'), running]) },
    'GET /api/v1/namespaces/team-a/queue': { body: QUEUE },
    ...overrides,
  };
}

const open = (path = '/ns/team-a/backups') => renderPage(path, { '/ns/:namespace/backups': <BackupList /> });
const row = (name: string) => document.querySelector<HTMLElement>(`[data-testid="backup-row"][data-backup="${name}"]`);
const rowNames = () => screen.queryAllByTestId('backup-row').map((r) => r.getAttribute('data-backup'));

beforeEach(() => FakeEventSource.install());
afterEach(() => vi.unstubAllGlobals());

describe('BackupList', () => {
  it('lists backups newest first with phases, progress, queue position and ETA', async () => {
    fakeGateway(routes());
    open();
    await waitFor(() => expect(rowNames()).toEqual(['nightly', 'probe-1']));
    const nightly = row('nightly')!;
    expect(within(nightly).getByTestId('row-progress').textContent).toContain('2 / 6 items');
    expect(within(nightly).getByTestId('row-queue').textContent).toBe('#2 in queue');
    await waitFor(() => expect(within(nightly).getByTestId('row-eta').textContent).toBe('starts in ~2m · done in ~7m'));
    const done = row('probe-1')!;
    expect(within(done).getByTestId('row-queue').textContent).toBe('—');
    expect(within(done).getByTestId('backup-link').getAttribute('href')).toBe('/ns/team-a/backups/probe-1');
    expect(within(done).getByTestId('row-restore').getAttribute('href')).toBe('/ns/team-a/backups/probe-1/restore');
    expect(within(nightly).getByTestId('row-restore').getAttribute('aria-disabled')).toBe('true');
  });

  it('updates rows live from the namespace’s events and refreshes the ETAs', async () => {
    const { calls } = fakeGateway(routes());
    open();
    await waitFor(() => expect(rowNames()).toEqual(['nightly', 'probe-1']));
    const queueCalls = () => calls.filter((call) => call.path.endsWith('/queue')).length;
    await waitFor(() => expect(queueCalls()).toBe(1));
    const stream = FakeEventSource.instances[0];
    act(() => stream.emit('ready'));
    expect(screen.getByTestId('stream-state').textContent).toBe('Live');
    const finished = completedBackup('nightly', { resourceVersion: '300' });
    finished.metadata.creationTimestamp = running.metadata.creationTimestamp;
    act(() => stream.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'nightly', object: finished }));
    await waitFor(() => expect(within(row('nightly')!).getByTestId('row-progress').textContent).toContain('6 / 6 items'));
    expect(within(row('nightly')!).getByTestId('row-queue').textContent).toBe('—');
    const added = completedBackup('hourly', { veleroPhase: 'New', done: 0, total: 0, position: 3 });
    added.metadata.creationTimestamp = '2026-11-23T06:20:00Z';
    act(() => stream.emit('ADDED', { namespace: 'team-a', resource: 'backups', name: 'hourly', object: added }));
    await waitFor(() => expect(rowNames()).toEqual(['hourly', 'nightly', 'probe-1']));
    await waitFor(() => expect(queueCalls()).toBe(2));
    act(() => stream.emit('DELETED', { namespace: 'team-a', resource: 'backups', name: 'probe-1', object: null }));
    await waitFor(() => expect(rowNames()).toEqual(['hourly', 'nightly']));
    // Other namespaces' and other kinds' events are ignored.
    act(() => stream.emit('ADDED', { namespace: 'team-a', resource: 'restores', name: 'r-1', object: completedBackup('r-1') }));
    expect(rowNames()).toEqual(['hourly', 'nightly']);
  });

  it('filters on the server by phase and label selector, then clears them', async () => {
    const { calls } = fakeGateway(routes());
    open();
    await waitFor(() => expect(rowNames()).toHaveLength(2));
    fireEvent.change(screen.getByTestId('filter-phase'), { target: { value: 'Completed' } });
    await waitFor(() => expect(calls.some((call) => call.path === BACKUPS && call.query.get('phase') === 'Completed')).toBe(true));
    // Live rows that do not match are hidden even before the server answers.
    await waitFor(() => expect(rowNames()).toEqual(['probe-1']));
    fireEvent.change(screen.getByTestId('filter-selector'), { target: { value: 'app in (web' } });
    expect(screen.getByText(/Not a label selector: unbalanced parentheses/)).toBeTruthy();
    expect(screen.getByTestId<HTMLButtonElement>('filter-apply').disabled).toBe(true);
    fireEvent.change(screen.getByTestId('filter-selector'), { target: { value: 'app=db' } });
    fireEvent.click(screen.getByTestId('filter-apply'));
    await waitFor(() => expect(calls.some((call) => call.query.get('labelSelector') === 'app=db' && call.query.get('phase') === 'Completed')).toBe(true));
    expect(await screen.findByTestId('backups-empty-filtered')).toBeTruthy();
    fireEvent.click(screen.getByTestId('filter-clear'));
    await waitFor(() => expect(rowNames()).toHaveLength(2));
  });

  it('starts from the filters in the URL', async () => {
    const { calls } = fakeGateway(routes());
    open('/ns/team-a/backups?phase=Failed&labelSelector=app%3Dweb');
    await waitFor(() => expect(calls.some((call) => call.path === BACKUPS)).toBe(true));
    const first = calls.find((call) => call.path === BACKUPS)!;
    expect([first.query.get('phase'), first.query.get('labelSelector')]).toEqual(['Failed', 'app=web']);
    expect(screen.getByTestId<HTMLInputElement>('filter-selector').value).toBe('app=web');
  });

  it('loads further pages with the continue token', async () => {
    const { calls } = fakeGateway(
      routes({
        [`GET ${BACKUPS}`]: (call) =>
          call.query.get('continue') === 'page-2' ? { body: list([completedBackup('zeta')]) } : { body: list([completedBackup('alpha')], 'page-2') },
      }),
    );
    open();
    await waitFor(() => expect(rowNames()).toEqual(['alpha']));
    expect(calls.find((call) => call.path === BACKUPS)!.query.get('limit')).toBe('100');
    fireEvent.click(await screen.findByTestId('load-more'));
    await waitFor(() => expect(rowNames()).toEqual(['alpha', 'zeta']));
    expect(screen.queryByTestId('load-more')).toBeNull();
  });

  it('explains missing permissions instead of offering the actions', async () => {
    fakeGateway(routes({ 'GET /api/v1/namespaces': { body: readOnlyNamespaces } }));
    open();
    await waitFor(() => expect(rowNames()).toHaveLength(2));
    await waitFor(() => expect(screen.getByTestId('create-backup').getAttribute('aria-disabled')).toBe('true'));
    expect(within(row('probe-1')!).getByTestId('row-delete').getAttribute('aria-disabled')).toBe('true');
    expect(within(row('probe-1')!).getByTestId('row-restore').getAttribute('aria-disabled')).toBe('true');
  });

  it('invites to create the first backup when there is none', async () => {
    fakeGateway(routes({ [`GET ${BACKUPS}`]: { body: list([]) } }));
    open();
    expect((await screen.findByTestId('backups-empty')).textContent).toContain('No backups yet');
  });

  it('says under the request phase when a backup waits for the shared backup storage', async () => {
    const waiting = completedBackup('nightly', { phase: 'New' });
    delete waiting.status!.veleroBackup;
    waiting.status!.conditions = [
      { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted', lastTransitionTime: '2026-11-23T05:59:01Z' },
      { type: 'Queued', status: 'False', reason: 'WaitingForBackupStorage', message: 'waiting for backup storage: every shared backup bucket is full', lastTransitionTime: '2026-11-23T05:59:01Z' },
    ];
    fakeGateway(routes({ [`GET ${BACKUPS}`]: { body: list([completedBackup('probe-1'), waiting]) } }));
    open();
    await waitFor(() => expect(rowNames()).toHaveLength(2));
    const note = within(row('nightly')!).getByTestId('row-storage-wait');
    expect(note.textContent).toBe('waiting for storage');
    expect(note.getAttribute('title')).toBe('waiting for backup storage: every shared backup bucket is full');
    expect(within(row('probe-1')!).queryByTestId('row-storage-wait')).toBeNull();
  });
});
