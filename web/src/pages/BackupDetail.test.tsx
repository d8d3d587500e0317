import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import BackupDetail from './BackupDetail';
import { aliceNamespaces, readOnlyNamespaces } from '../testing/accessAnswers';
import { completedBackup, describeOf, HISTORY_DETAIL, HISTORY_PAGE, LOG, PARTIAL_RESULTS } from '../testing/backupAnswers';
import { FakeEventSource, fakeGateway, problem, type FakeRoute } from '../testing/gateway';
import { renderPage } from '../testing/render';

const BASE = '/api/v1/namespaces/team-a/backups/probe-1';
const partial = completedBackup('probe-1', { veleroPhase: 'PartiallyFailed' });

function routes(overrides: Record<string, FakeRoute> = {}): Record<string, FakeRoute> {
  return {
    'GET /api/v1/namespaces': { body: aliceNamespaces },
    [`GET ${BASE}`]: { body: partial },
    [`GET ${BASE}/describe`]: { body: describeOf(partial, { errors: 2 }) },
    [`GET ${BASE}/logs`]: (call) => (call.query.get('artifact') === 'results' ? { body: PARTIAL_RESULTS } : { body: LOG, text: true }),
    'GET /api/v1/namespaces/team-a/history': { body: HISTORY_PAGE },
    [`GET /api/v1/namespaces/team-a/history/${HISTORY_PAGE.items[0].id}`]: { body: HISTORY_DETAIL },
    [`DELETE ${BASE}`]: {
      status: 202,
      body: {
        kind: 'NonAdminBackup',
        name: 'probe-1',
        permanent: true,
        message: 'permanent deletion requested: Velero deletes the backup and its data in object storage, then the NonAdminBackup is removed; this cannot be undone',
      },
    },
    ...overrides,
  };
}

const open = () => renderPage('/ns/team-a/backups/probe-1', { '/ns/:namespace/backups/:name': <BackupDetail /> });

beforeEach(() => FakeEventSource.install());
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('BackupDetail', () => {
  it('explains a partially failed backup with grouped causes at the top', async () => {
    fakeGateway(routes());
    open();
    const summary = await screen.findByTestId('failure-summary');
    expect(summary.textContent).toContain('Why did this backup partially fail?');
    await waitFor(() => expect(within(summary).getAllByTestId('failure-group')).toHaveLength(1));
    const group = within(summary).getByTestId('failure-group');
    expect(group.textContent).toContain('2× failed to get volumesnapshotclass for storageclass gp3-csi');
    expect(group.textContent).toContain('persistentvolumeclaims in namespace team-a');
    expect(group.textContent).toContain('Objects: web-data, db-data');
    expect(screen.getByTestId('velero-phase').textContent).toContain('PartiallyFailed');
    // Conditions in plain words.
    expect(screen.getAllByTestId('condition').map((c) => c.textContent)).toEqual([
      expect.stringContaining('NAC accepted the backup request.'),
      expect.stringContaining('The Velero backup was created'),
    ]);
  });

  it('follows live status changes of this backup', async () => {
    const running = completedBackup('probe-1', { veleroPhase: 'InProgress', done: 2, total: 6, resourceVersion: '190' });
    fakeGateway(routes({ [`GET ${BASE}`]: { body: running }, [`GET ${BASE}/describe`]: { body: describeOf(running) } }));
    open();
    await waitFor(() => expect(screen.getByTestId('velero-phase').textContent).toContain('InProgress'));
    expect(screen.getByTestId('backup-progress').textContent).toContain('2 / 6 items');
    const stream = FakeEventSource.instances[0];
    expect(stream.url).toBe('/api/v1/namespaces/team-a/events');
    act(() => stream.emit('ready'));
    act(() => stream.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'probe-1', object: completedBackup('probe-1', { resourceVersion: '202' }) }));
    await waitFor(() => expect(screen.getByTestId('velero-phase').textContent).toContain('Completed'));
    expect(screen.getByTestId('backup-progress').textContent).toContain('6 / 6 items');
    expect(screen.getByTestId('stream-state').textContent).toContain('Live');
    act(() => stream.emit('DELETED', { namespace: 'team-a', resource: 'backups', name: 'probe-1', object: null }));
    expect((await screen.findByTestId('backup-gone')).textContent).toContain('This backup no longer exists');
  });

  it('searches the log, steps between matches and wraps around', async () => {
    fakeGateway(routes());
    open();
    fireEvent.click(await screen.findByRole('tab', { name: 'Logs' }));
    const text = await screen.findByTestId('log-text');
    expect(text.textContent).toContain('Backup completed');
    fireEvent.change(screen.getByTestId('log-search'), { target: { value: 'backed up' } });
    expect(screen.getByTestId('log-match-count').textContent).toContain('1 of 2');
    expect(text.querySelectorAll('mark')).toHaveLength(2);
    expect(text.querySelector('mark[aria-current="true"]')?.getAttribute('data-match')).toBe('0');
    fireEvent.click(screen.getByRole('button', { name: 'Next match' }));
    expect(screen.getByTestId('log-match-count').textContent).toContain('2 of 2');
    fireEvent.keyDown(screen.getByTestId('log-search'), { key: 'Enter' });
    expect(screen.getByTestId('log-match-count').textContent).toContain('1 of 2');
    fireEvent.click(screen.getByRole('button', { name: 'Previous match' }));
    expect(screen.getByTestId('log-match-count').textContent).toContain('2 of 2');
    fireEvent.change(screen.getByTestId('log-search'), { target: { value: 'no such thing' } });
    expect(screen.getByTestId('log-match-count').textContent).toContain('No matches');
    expect(screen.getByTestId('log-download').getAttribute('href')).toBe(`${BASE}/logs?artifact=log`);
  });

  it('says when the log is not uploaded yet, and fetches it again while following', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const running = completedBackup('probe-1', { veleroPhase: 'InProgress' });
    const { calls } = fakeGateway(
      routes({
        [`GET ${BASE}`]: { body: running },
        [`GET ${BASE}/describe`]: { body: describeOf(running) },
        [`GET ${BASE}/logs`]: { status: 409, body: problem(409, 'Artifact unavailable', 'artifact-unavailable', 'NonAdminBackup "probe-1" has not finished; its BackupLog is available once it has') },
      }),
    );
    open();
    fireEvent.click(await screen.findByRole('tab', { name: 'Logs' }));
    expect((await screen.findByTestId('logs-not-yet')).textContent).toContain('Logs are available once Velero has uploaded them');
    const logCalls = () => calls.filter((call) => call.path === `${BASE}/logs` && call.query.get('artifact') === 'log').length;
    const before = logCalls();
    await act(async () => {
      await vi.advanceTimersByTimeAsync(5100);
    });
    expect(logCalls()).toBe(before + 1);
  });

  it('explains that downloads are not allowed instead of fetching', async () => {
    const { calls } = fakeGateway(routes({ 'GET /api/v1/namespaces': { body: readOnlyNamespaces } }));
    open();
    fireEvent.click(await screen.findByRole('tab', { name: 'Logs' }));
    expect((await screen.findByTestId('logs-no-permission')).textContent).toContain('You may not download logs or results');
    expect(calls.some((call) => call.path.endsWith('/logs'))).toBe(false);
    // Restore and delete are explained, not offered.
    expect(screen.getByTestId('delete-button').getAttribute('aria-disabled')).toBe('true');
    expect(screen.getByTestId('restore-button').getAttribute('aria-disabled')).toBe('true');
  });

  it('shows the history timeline in words', async () => {
    fakeGateway(routes());
    open();
    fireEvent.click(await screen.findByRole('tab', { name: 'Timeline' }));
    const entries = await screen.findAllByTestId('timeline-entry');
    expect(entries.map((entry) => entry.textContent)).toEqual([
      expect.stringContaining('Request phase became New'),
      expect.stringContaining('NAC accepted the backup request.'),
      expect.stringContaining('Position 1 in Velero’s queue'),
      expect.stringContaining('Velero phase became InProgress'),
      expect.stringContaining('Velero phase became PartiallyFailed'),
    ]);
  });

  it('deletes only after the name is typed, and shows what happens next', async () => {
    const { calls } = fakeGateway(routes());
    open();
    fireEvent.click(await screen.findByTestId('delete-button'));
    const modal = await screen.findByTestId('delete-modal');
    expect(modal.textContent).toContain('deletes the backup’s data in object storage for good');
    const confirm = within(modal).getByTestId('delete-confirm-button');
    expect((confirm as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(within(modal).getByTestId('delete-confirm-input'), { target: { value: 'probe-2' } });
    expect(modal.textContent).toContain('The name does not match.');
    expect((confirm as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(within(modal).getByTestId('delete-confirm-input'), { target: { value: 'probe-1' } });
    expect((confirm as HTMLButtonElement).disabled).toBe(false);
    fireEvent.click(confirm);
    expect((await screen.findByTestId('delete-requested')).textContent).toContain('this cannot be undone');
    expect(calls.filter((call) => call.method === 'DELETE').map((call) => call.path)).toEqual([BASE]);
  });

  it('shows what a queued backup waits on, and stops once it runs', async () => {
    const queued = completedBackup('probe-1', { veleroPhase: 'Queued', done: 0, total: 0, position: 1, resourceVersion: '150' });
    let answers = 0;
    const { calls } = fakeGateway(
      routes({
        [`GET ${BASE}`]: { body: queued },
        [`GET ${BASE}/describe`]: { body: describeOf(queued) },
        [`GET ${BASE}/overlaps`]: () => {
          answers += 1;
          return {
            body: {
              operation: 'backup probe-1',
              pending: true,
              waiting: true,
              overlaps: [
                {
                  operation: 'backup long',
                  total: answers === 1 ? 3 : 1,
                  truncated: false,
                  items: [
                    { groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' },
                    ...(answers === 1
                      ? [
                          { groupResource: 'configmaps', namespace: 'team-a', name: 'filler-0' },
                          { groupResource: 'secrets', namespace: 'team-a', name: 'web-credentials' },
                        ]
                      : []),
                  ],
                },
              ],
            },
          };
        },
      }),
    );
    open();
    const waiting = await screen.findByTestId('waiting-on');
    const overlap = await within(waiting).findByTestId('overlap');
    expect(overlap.getAttribute('data-operation')).toBe('backup long');
    expect(overlap.textContent).toContain('Waiting on backup long: 3 overlapping items');
    fireEvent.click(within(overlap).getByRole('button'));
    expect(within(overlap).getAllByTestId('overlap-item').map((item) => item.textContent)).toContain('configmaps team-a/web-config');

    // Its status changes (still queued): asked again.
    const stream = FakeEventSource.instances[0];
    act(() => stream.emit('ready'));
    act(() => stream.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'probe-1', object: { ...queued, metadata: { ...queued.metadata, resourceVersion: '151' } } }));
    await waitFor(() => expect(screen.getByTestId('overlap').textContent).toContain('Waiting on backup long: 1 overlapping item'));
    expect(calls.filter((call) => call.path === `${BASE}/overlaps`)).toHaveLength(2);

    // It runs: nothing to wait on, and nothing more asked.
    const running = completedBackup('probe-1', { veleroPhase: 'InProgress', done: 1, total: 6, resourceVersion: '160' });
    act(() => stream.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'probe-1', object: running }));
    await waitFor(() => expect(screen.getByTestId('velero-phase').textContent).toContain('InProgress'));
    expect(screen.queryByTestId('waiting-on')).toBeNull();
    expect(calls.filter((call) => call.path === `${BASE}/overlaps`)).toHaveLength(2);
  });

  it('does not ask what a finished backup waits on', async () => {
    const { calls } = fakeGateway(routes());
    open();
    await screen.findByTestId('failure-summary');
    expect(screen.queryByTestId('waiting-on')).toBeNull();
    expect(calls.some((call) => call.path.endsWith('/overlaps'))).toBe(false);
  });
});
