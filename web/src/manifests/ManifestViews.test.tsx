// The backup detail's manifest views against a fake gateway: the contents browser (counts,
// filters sent to the server, paging, download, a manifest still being built), the owner graph,
// the comparison with another backup, deletion actions and a wait for backup storage.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import BackupDetail from '../pages/BackupDetail';
import type { NonAdminBackup } from '../api/types';
import { aliceNamespaces } from '../testing/accessAnswers';
import { completedBackup, describeOf, HISTORY_PAGE } from '../testing/backupAnswers';
import { FakeEventSource, fakeGateway, problem, type FakeRoute } from '../testing/gateway';
import { B1_CONTENTS, B1_SERVICE_ACCOUNTS_PAGE_1, B1_SERVICE_ACCOUNTS_PAGE_2, B2_AGAINST_B1, OWNED_GRAPH } from '../testing/manifestAnswers';
import { renderPage } from '../testing/render';

const NS = '/api/v1/namespaces/team-a';

function backupAt(name: string, completedAt: string): NonAdminBackup {
  const backup = completedBackup(name);
  backup.status!.veleroBackup!.status!.completionTimestamp = completedAt;
  return backup;
}
const b1 = backupAt('b1', '2026-11-23T12:11:05Z');
const b2 = backupAt('b2', '2026-11-23T12:11:22Z');

function routes(backup: NonAdminBackup, overrides: Record<string, FakeRoute> = {}): Record<string, FakeRoute> {
  const base = `${NS}/backups/${backup.metadata.name}`;
  return {
    'GET /api/v1/namespaces': { body: aliceNamespaces },
    [`GET ${base}`]: { body: backup },
    [`GET ${base}/describe`]: { body: describeOf(backup) },
    [`GET ${base}/logs`]: { body: { errors: {}, warnings: {} } },
    [`GET ${NS}/history`]: { body: { items: [] } },
    [`GET ${NS}/backups`]: { body: { apiVersion: 'v1', kind: 'NonAdminBackupList', metadata: {}, items: [b1, b2] } },
    ...overrides,
  };
}

const open = (name: string) => renderPage(`/ns/team-a/backups/${name}`, { '/ns/:namespace/backups/:name': <BackupDetail /> });

beforeEach(() => FakeEventSource.install());
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('backup contents', () => {
  it('shows counts by kind and the items, narrows by kind on the server, pages with continue', async () => {
    const { calls } = fakeGateway(
      routes(b1, {
        [`GET ${NS}/backups/b1/contents`]: (call) => {
          if (call.query.get('kind') !== 'serviceaccounts') return { body: B1_CONTENTS };
          return { body: call.query.get('continue') ? B1_SERVICE_ACCOUNTS_PAGE_2 : B1_SERVICE_ACCOUNTS_PAGE_1 };
        },
      }),
    );
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Contents' }));
    const view = await screen.findByTestId('contents-table');
    expect(within(view).getAllByTestId('contents-item').map((row) => row.getAttribute('data-name'))).toEqual(['web-config', 'web', 'team-a', 'web-credentials', 'ci-bot', 'default']);
    expect(screen.getByTestId('contents-total').textContent).toBe('6 items in 5 kinds');
    expect(screen.getAllByTestId('contents-count').map((label) => label.textContent)).toEqual([
      'ConfigMap: 1',
      'Namespace: 1',
      'Secret: 1',
      'ServiceAccount: 2',
      'Deployment (apps): 1',
    ]);
    // The namespace itself is cluster-scoped; labels are shown as a selector would name them.
    const namespaceRow = screen.getAllByTestId('contents-item').find((row) => row.getAttribute('data-kind') === 'Namespace')!;
    expect(namespaceRow.textContent).toContain('cluster-scoped');
    expect(namespaceRow.textContent).toContain('kubernetes.io/metadata.name=team-a');
    expect(screen.getByTestId('manifest-download').getAttribute('href')).toBe(`${NS}/backups/b1/manifest?download=true`);
    expect(screen.getByTestId('manifest-download').getAttribute('download')).toBe('b1-manifest.json');

    fireEvent.change(screen.getByTestId('contents-kind'), { target: { value: 'serviceaccounts' } });
    await waitFor(() => expect(screen.getAllByTestId('contents-item').map((row) => row.getAttribute('data-name'))).toEqual(['ci-bot']));
    expect(screen.getByTestId('contents-total').textContent).toContain('2 of 6 items match');
    expect(screen.getByTestId('contents-shown').textContent).toBe('1 of 2 shown');
    fireEvent.click(screen.getByTestId('contents-more'));
    await waitFor(() => expect(screen.getAllByTestId('contents-item').map((row) => row.getAttribute('data-name'))).toEqual(['ci-bot', 'default']));
    expect(screen.queryByTestId('contents-more')).toBeNull();
    const contentCalls = calls.filter((call) => call.path === `${NS}/backups/b1/contents`);
    expect(contentCalls.map((call) => [call.query.get('kind'), call.query.get('continue')])).toEqual([
      [null, null],
      ['serviceaccounts', null],
      ['serviceaccounts', B1_SERVICE_ACCOUNTS_PAGE_1.continue],
    ]);
  });

  it('sends the name search and a valid label selector once typing settles, and clears them', async () => {
    const { calls } = fakeGateway(routes(b1, { [`GET ${NS}/backups/b1/contents`]: { body: B1_CONTENTS } }));
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Contents' }));
    await screen.findByTestId('contents-table');
    fireEvent.change(screen.getByTestId('contents-search'), { target: { value: 'web' } });
    await waitFor(() => expect(calls.some((call) => call.query.get('q') === 'web')).toBe(true));
    fireEvent.change(screen.getByTestId('contents-selector'), { target: { value: 'app in (web' } });
    expect(screen.getByTestId('contents-selector-error').textContent).toContain('unbalanced parentheses');
    fireEvent.change(screen.getByTestId('contents-selector'), { target: { value: 'app=web' } });
    await waitFor(() => expect(calls.some((call) => call.query.get('labelSelector') === 'app=web' && call.query.get('q') === 'web')).toBe(true));
    expect(calls.some((call) => call.query.get('labelSelector') === 'app in (web')).toBe(false);
    fireEvent.click(screen.getByTestId('contents-clear'));
    await waitFor(() => expect(calls.at(-1)!.query.toString()).toBe('limit=100'));
  });

  it('waits while NAC builds the manifest of a backup that just completed', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    let built = false;
    fakeGateway(
      routes(b1, {
        [`GET ${NS}/backups/b1/contents`]: () => (built ? { body: B1_CONTENTS } : { status: 404, body: problem(404, 'Not found', 'not-found', 'BackupManifest "b1" not found in namespace team-a') }),
      }),
    );
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Contents' }));
    expect((await screen.findByTestId('manifest-building')).textContent).toContain('NAC is reading what this backup holds');
    built = true;
    await act(async () => {
      await vi.advanceTimersByTimeAsync(3100);
    });
    expect(await screen.findByTestId('contents-table')).toBeTruthy();
  });

  it('says at once that a failed backup has no manifest, and that a running one has none yet', async () => {
    const failed = completedBackup('b1', { veleroPhase: 'Failed' });
    const { calls } = fakeGateway(routes(failed, { [`GET ${NS}/backups/b1/contents`]: { status: 404, body: problem(404, 'Not found', 'not-found', 'BackupManifest "b1" not found') } }));
    const view = open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Contents' }));
    expect((await screen.findByTestId('manifest-missing')).textContent).toContain('NAC has no manifest of this backup');
    expect(calls.filter((call) => call.path.endsWith('/contents'))).toHaveLength(1);
    view.unmount();

    const running = completedBackup('b1', { veleroPhase: 'InProgress' });
    const second = fakeGateway(routes(running));
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Contents' }));
    expect((await screen.findByTestId('manifest-not-yet')).textContent).toContain('once the backup has completed');
    expect(second.calls.some((call) => call.path.endsWith('/contents'))).toBe(false);
  });
});

describe('owner graph', () => {
  it('shows owners with what they own indented, items standing alone, and owners not in the backup', async () => {
    fakeGateway(routes(b1, { [`GET ${NS}/backups/b1/graph`]: { body: OWNED_GRAPH } }));
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Owner graph' }));
    await screen.findByTestId('graph-tree');
    const rows = screen.getAllByTestId('graph-row');
    expect(rows.map((row) => `${row.getAttribute('data-depth')} ${row.querySelector('code')!.textContent}`)).toEqual([
      '0 web (deployments.apps)',
      '1 web-7d4b9 (replicasets.apps)',
      '2 web-7d4b9-a (pods)',
      '2 web-7d4b9-b (pods)',
    ]);
    expect(rows[0].textContent).toContain('owns 1');
    expect(rows[1].textContent).toContain('owns 2');
    expect(screen.getByTestId('graph-standalone').textContent).toBe('1 items have no owner and own nothing.');
    expect(screen.getByTestId('graph-missing').textContent).toContain('1 owner references point at objects this backup does not hold');
  });
});

describe('compare', () => {
  it('diffs the later backup against the earlier one and lists added, removed and changed items', async () => {
    const { calls } = fakeGateway(routes(b1, { [`GET ${NS}/backups/b2/diff`]: { body: B2_AGAINST_B1 } }));
    open('b1');
    fireEvent.click(await screen.findByTestId('compare-button'));
    const select = await screen.findByTestId('compare-with');
    expect([...(select as HTMLSelectElement).options].map((option) => option.value)).toEqual(['', 'b2']);
    fireEvent.change(select, { target: { value: 'b2' } });
    expect((await screen.findByTestId('compare-summary')).textContent).toBe('1 added, 3 removed, 1 changed, 2 unchanged');
    // b2 is the later backup: the diff reads from b1 to b2.
    const diffCall = calls.find((call) => call.path.endsWith('/diff'))!;
    expect([diffCall.path, diffCall.query.get('against')]).toEqual([`${NS}/backups/b2/diff`, 'b1']);
    expect(screen.getByTestId('compare-direction').textContent).toBe('From b1 to b2');
    expect(within(screen.getByTestId('compare-added')).getAllByTestId('compare-item').map((row) => row.textContent)).toEqual(['Service team-a/web']);
    expect(within(screen.getByTestId('compare-removed')).getAllByTestId('compare-item').map((row) => row.getAttribute('data-name'))).toEqual(['team-a', 'ci-bot', 'default']);
    expect(screen.getAllByTestId('compare-change').map((line) => line.textContent)).toEqual(['labels: +tier=front']);
  });

  it('explains when there is nothing to compare with', async () => {
    fakeGateway(routes(b1, { [`GET ${NS}/backups`]: { body: { apiVersion: 'v1', kind: 'NonAdminBackupList', metadata: {}, items: [b1] } } }));
    open('b1');
    fireEvent.click(await screen.findByRole('tab', { name: 'Compare' }));
    expect((await screen.findByTestId('compare-none')).textContent).toContain('no other completed backup');
  });
});

describe('deletion actions and storage waits', () => {
  it('lists deletion actions in run order and says which one the deletion waits on', async () => {
    const deleting = completedBackup('b1', { phase: 'Deleting' });
    deleting.spec.deleteBackup = true;
    deleting.status!.conditions = [
      ...deleting.status!.conditions!,
      { type: 'deletionaction.oadp.openshift.io/b-notify', status: 'False', reason: 'Failed', message: 'webhook answered 500 for configmaps/team-a/web-config', lastTransitionTime: '2026-11-23T12:00:00Z' },
      { type: 'deletionaction.oadp.openshift.io/a-cleanup', status: 'True', reason: 'Succeeded', message: '3 items accepted', lastTransitionTime: '2026-11-23T11:59:00Z' },
    ];
    fakeGateway(routes(deleting));
    open('b1');
    const waiting = await screen.findAllByTestId('deletion-waiting');
    expect(waiting[0].textContent).toBe(
      'The deletion waits on deletion action b-notify: webhook answered 500 for configmaps/team-a/web-config. It is retried with backoff until the action succeeds.',
    );
    expect(within(screen.getByTestId('delete-requested')).getByTestId('deletion-waiting')).toBeTruthy();
    const actions = screen.getAllByTestId('deletion-action');
    expect(actions.map((row) => `${row.getAttribute('data-name')}:${row.getAttribute('data-reason')}`)).toEqual(['a-cleanup:Succeeded', 'b-notify:Failed']);
    expect(actions[1].textContent).toContain('webhook answered 500');
    // They are not repeated among the other conditions.
    expect(screen.getAllByTestId('condition').map((condition) => condition.textContent)).toEqual([
      expect.stringContaining('NAC accepted the backup request.'),
      expect.stringContaining('The Velero backup was created'),
    ]);
  });

  it('shows a backup waiting for the shared backup storage', async () => {
    const waiting = completedBackup('b1', { phase: 'New', veleroPhase: undefined });
    delete waiting.status!.veleroBackup;
    waiting.status!.conditions = [
      { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: 'backup accepted', lastTransitionTime: '2026-11-23T05:59:01Z' },
      { type: 'Queued', status: 'False', reason: 'WaitingForBackupStorage', message: 'waiting for backup storage: every shared backup bucket is full', lastTransitionTime: '2026-11-23T05:59:01Z' },
    ];
    fakeGateway(routes(waiting, { [`GET ${NS}/history`]: { body: HISTORY_PAGE } }));
    open('b1');
    const alert = await screen.findByTestId('storage-wait');
    expect(alert.textContent).toContain('Waiting for backup storage');
    expect(alert.textContent).toContain('every shared backup bucket is full');
  });
});
