// Behaviour of the restore list and detail pages on real demo answers: live list values, deletion
// with the "restored objects stay" warning, the failure summary of a partially failed restore,
// the timeline in words and the searchable log.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import RestoreDetail from '../pages/RestoreDetail';
import RestoreList from '../pages/RestoreList';
import { describePartiallyFailed, historyDetail, historyOfRestore, logPartiallyFailed, restoreCompleted, restorePartiallyFailed, resultsPartiallyFailed } from '../testing/objectAnswers';
import { SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { fakeGateway, forbidden, problem } from '../testing/gateway';
import { renderPage } from '../testing/render';

afterEach(() => vi.unstubAllGlobals());

const queued = {
  ...restoreCompleted,
  metadata: { ...restoreCompleted.metadata, name: 'r-queued', uid: 'u-queued', creationTimestamp: '2026-11-23T06:20:00Z' },
  status: { phase: 'Created', queueInfo: { estimatedQueuePosition: 2 }, veleroRestore: { status: { phase: 'New' } } },
};

describe('RestoreList', () => {
  it('shows phase, progress, queue position and source backup, newest first', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) =>
      url.startsWith('/api/v1/namespaces/team-a/restores?') ? { body: { apiVersion: 'v1', kind: 'NonAdminRestoreList', metadata: {}, items: [restoreCompleted, queued] } } : undefined,
    );
    renderPage('/ns/team-a/restores', { '/ns/:namespace/restores': <RestoreList /> });
    const rows = await screen.findAllByTestId('restore-row');
    expect(rows.map((row) => row.getAttribute('data-name'))).toEqual(['r-queued', 'r-probe-1']);
    expect(within(rows[0]).getByTestId('restore-queue').textContent).toBe('#2 in queue');
    expect(within(rows[0]).getByTestId('phase').textContent).toBe('New');
    expect(within(rows[1]).getByTestId('phase').textContent).toBe('Completed');
    expect(rows[1].textContent).toContain('9 / 9 items');
    expect(within(rows[1]).getByTestId('restore-source').getAttribute('href')).toBe('/ns/team-a/backups/ui-hist-1');
    expect(within(rows[1]).getByTestId('restore-link').getAttribute('href')).toBe('/ns/team-a/restores/r-probe-1');
    fireEvent.change(screen.getByTestId('restore-filter').querySelector('input')!, { target: { value: 'queued' } });
    expect(screen.getAllByTestId('restore-row').map((row) => row.getAttribute('data-name'))).toEqual(['r-queued']);
  });

  it('deletes after a confirmation that says restored objects stay', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, ({ method, url }) => {
      if (method === 'GET' && url.startsWith('/api/v1/namespaces/team-a/restores?')) return { body: { apiVersion: 'v1', kind: 'L', metadata: {}, items: [restoreCompleted] } };
      if (method === 'DELETE') return { body: { kind: 'NonAdminRestore', name: 'r-probe-1', permanent: false, message: 'deleted' } };
      return undefined;
    });
    renderPage('/ns/team-a/restores', { '/ns/:namespace/restores': <RestoreList /> });
    fireEvent.click(await screen.findByTestId('restore-delete'));
    const dialog = await screen.findByTestId('confirm-delete');
    expect(dialog.textContent).toContain('Every object it restored stays in the namespace');
    expect(dialog.textContent).toContain('Delete restore r-probe-1?');
    fireEvent.click(screen.getByTestId('confirm-delete-button'));
    await waitFor(() => expect(calls.some((call) => call.method === 'DELETE' && call.url === '/api/v1/namespaces/team-a/restores/r-probe-1')).toBe(true));
  });

  it('explains when listing is not allowed', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) =>
      url.startsWith('/api/v1/namespaces/team-a/restores?')
        ? forbidden('list', 'nonadminrestores', 'team-a')
        : undefined,
    );
    renderPage('/ns/team-a/restores', { '/ns/:namespace/restores': <RestoreList /> });
    expect((await screen.findByTestId('error-alert')).textContent).toContain('Missing permission: list nonadminrestores in namespace team-a');
  });
});

describe('RestoreDetail', () => {
  function gateway() {
    return fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url === '/api/v1/namespaces/team-a/restores/r2') return { body: restorePartiallyFailed };
      if (url === '/api/v1/namespaces/team-a/restores/r2/describe') return { body: describePartiallyFailed };
      if (url === '/api/v1/namespaces/team-a/restores/r2/logs?artifact=results') return { body: resultsPartiallyFailed };
      if (url === '/api/v1/namespaces/team-a/restores/r2/logs?artifact=log') return { body: logPartiallyFailed, text: true };
      if (url.startsWith('/api/v1/namespaces/team-a/history?')) {
        return { body: { items: [{ ...historyOfRestore.items[0], name: 'r2', uid: restorePartiallyFailed.metadata.uid, id: 'op-r2' }] } };
      }
      if (url === '/api/v1/namespaces/team-a/history/op-r2') return { body: historyDetail };
      return undefined;
    });
  }

  it('puts "what went wrong" on top of a partially failed restore, grouped from its results', async () => {
    gateway();
    renderPage('/ns/team-a/restores/r2', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    const summary = await screen.findByTestId('failure-summary');
    expect(summary.textContent).toContain('What went wrong in this restore?');
    await waitFor(() => expect(within(summary).getByTestId('failure-headline').textContent).toBe('The restore finished, but 1 problem(s) kept some objects from being restored.'));
    const group = within(summary).getByTestId('failure-group');
    expect(group.textContent).toContain('1× simulated restore error (sim.velero.nac.openshift.io/outcome=partially-fail)');
    expect(group.textContent).toContain('Velero');
    expect(screen.getByTestId('restore-phase').textContent).toBe('PartiallyFailed');
    expect(screen.getByTestId('restore-source').getAttribute('href')).toBe('/ns/team-a/backups/b1');
    expect(screen.getByTestId('restore-counts').textContent).toBe('1 / 0');
  });

  it('tells conditions and timeline in plain words', async () => {
    gateway();
    renderPage('/ns/team-a/restores/r2', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    const conditions = await screen.findByTestId('restore-conditions');
    expect(conditions.textContent).toContain('NAC accepted the restore request.');
    expect(conditions.textContent).toContain('Velero was asked to run it (its Velero Restore exists).');
    const timeline = await screen.findByTestId('restore-timeline');
    expect(timeline.textContent).toContain('Velero phase became InProgress');
    expect(timeline.textContent).toContain('Left the Velero queue');
  });

  it('searches the log', async () => {
    const { calls } = gateway();
    renderPage('/ns/team-a/restores/r2', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    await screen.findByTestId('restore-tabs');
    fireEvent.click(screen.getByRole('tab', { name: 'Log' }));
    expect((await screen.findByTestId('log-count')).textContent).toBe('11 of 11 lines');
    fireEvent.change(screen.getByTestId('log-search').querySelector('input')!, { target: { value: 'web-config' } });
    expect(screen.getByTestId('log-count').textContent).toBe('1 of 11 lines');
    expect(screen.getByTestId('log-text').querySelector('mark')?.textContent).toBe('web-config');
    expect(calls.some((call) => call.url === '/api/v1/namespaces/team-a/restores/r2/logs?artifact=log')).toBe(true);
  });

  it('says when the restore does not exist', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, () => ({ status: 404, body: problem(404, 'Not found', 'not-found', 'not found') }));
    renderPage('/ns/team-a/restores/gone', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    expect(await screen.findByText('There is no restore named gone in namespace team-a.')).toBeTruthy();
  });

  it('shows what a restore that has not started waits on', async () => {
    const pending = { ...restoreCompleted, metadata: { ...restoreCompleted.metadata, name: 'r3' }, status: { phase: 'Created', veleroRestore: { status: { phase: 'New' } } } };
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url === '/api/v1/namespaces/team-a/restores/r3') return { body: pending };
      if (url === '/api/v1/namespaces/team-a/restores/r3/describe') {
        return { body: { ...describePartiallyFailed, name: 'r3', veleroPhase: 'New', started: null, completed: null, errors: 0, progress: null } };
      }
      if (url === '/api/v1/namespaces/team-a/restores/r3/overlaps') {
        return {
          body: {
            operation: 'restore r3',
            pending: true,
            waiting: true,
            overlaps: [{ operation: 'backup long', total: 1, truncated: false, items: [{ groupResource: 'configmaps', namespace: 'team-a', name: 'web-config' }] }],
          },
        };
      }
      if (url.startsWith('/api/v1/namespaces/team-a/history?')) return { body: { items: [] } };
      return undefined;
    });
    renderPage('/ns/team-a/restores/r3', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    const waiting = await screen.findByTestId('waiting-on');
    expect((await within(waiting).findByTestId('overlap')).textContent).toContain('Waiting on backup long: 1 overlapping item');
    expect(calls.filter((call) => call.url === '/api/v1/namespaces/team-a/restores/r3/overlaps')).toHaveLength(1);
  });

  it('does not ask what a finished restore waits on', async () => {
    const { calls } = gateway();
    renderPage('/ns/team-a/restores/r2', { '/ns/:namespace/restores/:name': <RestoreDetail /> });
    await screen.findByTestId('failure-summary');
    expect(screen.queryByTestId('waiting-on')).toBeNull();
    expect(calls.some((call) => call.url.endsWith('/overlaps'))).toBe(false);
  });
});
