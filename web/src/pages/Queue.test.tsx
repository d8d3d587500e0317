// Tests of the queue page against the demo's answers: counts, my items, countdowns, live reloads.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, screen, within } from '@testing-library/react';
import Queue from './Queue';
import { SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { eventually, FakeEventSource, fakeGateway, forbidden, type FakeRoute } from '../testing/gateway';
import { clusterQueue, namespaceQueue } from '../testing/historyAnswers';
import { renderPage } from '../testing/render';

const renderQueue = () => renderPage('/ns/team-a/queue', { '/ns/:namespace/queue': <Queue /> });

const waiting = { ...namespaceQueue.items[2], etaSeconds: 400, eta: { startInSeconds: 280, finishInSeconds: 400, samples: 4 } };

function routes(overrides: Record<string, FakeRoute> = {}) {
  return fakeGateway({
    ...SIGNED_IN_AS_ALICE,
    'GET /api/v1/namespaces/team-a/queue': { body: { ...namespaceQueue, items: [namespaceQueue.items[0], namespaceQueue.items[1], waiting] } },
    'GET /api/v1/queue': { body: clusterQueue },
    ...overrides,
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
  vi.setSystemTime(new Date('2026-11-23T06:02:00.000Z'));
  FakeEventSource.install();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('Queue page', () => {
  it('shows the cluster queues as counts only', async () => {
    routes();
    renderQueue();
    const backups = await screen.findByTestId('cluster-queue-backups');
    expect(within(backups).getByTestId('count-running').textContent).toBe('1 running');
    expect(within(backups).getByTestId('count-pending').textContent).toBe('2 waiting');
    expect(backups.textContent).toContain('about 3s each');
    expect(screen.getByTestId('cluster-queue-restores').textContent).toContain('no recent durations');
  });

  it('lists my work here: running first, positions and estimates in words', async () => {
    routes();
    renderQueue();
    const table = await screen.findByTestId('queue-table');
    const rows = within(table).getAllByTestId('queue-item');
    expect(rows.map((row) => row.getAttribute('data-name'))).toEqual(['probe-partially-fail', 'probe-fail', 'ui-hist-3']);
    expect(rows.map((row) => within(row).getByTestId('queue-position').textContent)).toEqual(['being served', 'next', '#2']);
    expect(rows.map((row) => within(row).getByTestId('queue-state').textContent)).toEqual(['Running', 'Waiting', 'Waiting']);
    expect(within(rows[2]).getByTestId('queue-eta').textContent).toBe('starts in ~4m · done in ~6mfrom 4 recent runs');
    expect(within(rows[0]).getByRole('link', { name: 'probe-partially-fail' }).getAttribute('href')).toBe('/ns/team-a/backups/probe-partially-fail');
  });

  it('counts estimates down between refreshes', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/queue': { body: { namespace: 'team-a', items: [{ ...waiting, eta: { startInSeconds: 30, finishInSeconds: 150, samples: 2 } }] } } });
    renderQueue();
    const table = await screen.findByTestId('queue-table');
    expect(within(table).getByTestId('queue-eta').textContent).toBe('starts in ~30s · done in ~2mfrom 2 recent runs');
    await act(async () => {
      await vi.advanceTimersByTimeAsync(4000);
    });
    expect(within(table).getByTestId('queue-eta').textContent).toBe('starts in ~26s · done in ~2mfrom 2 recent runs');
    expect(screen.getByTestId('queue-updated').textContent).toBe('Updated 4s ago');
  });

  it('lists my work in other namespaces with their names', async () => {
    routes();
    renderQueue();
    const other = await screen.findByTestId('other-namespaces-queue');
    const rows = within(other).getAllByTestId('queue-item');
    expect(rows).toHaveLength(1);
    expect(rows[0].textContent).toContain('team-a-dev');
    expect(within(rows[0]).getByRole('link', { name: 'r-dev' }).getAttribute('href')).toBe('/ns/team-a-dev/restores/r-dev');
    expect(within(rows[0]).getByTestId('queue-eta').textContent).toBe('no estimate yet');
  });

  it('reloads when a backup changes and every 5 seconds', async () => {
    const api = routes();
    renderQueue();
    await screen.findByTestId('queue-table');
    const before = api.callsTo('/api/v1/namespaces/team-a/queue').length;
    const source = FakeEventSource.instances.find((instance) => instance.url === '/api/v1/namespaces/team-a/events')!;
    act(() => {
      source.emit('ready');
      source.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'probe-fail', object: {} });
    });
    expect((await screen.findByTestId('live-indicator')).textContent).toBe('Live');
    await eventually(() => expect(api.callsTo('/api/v1/namespaces/team-a/queue').length).toBe(before + 1));
    expect(api.callsTo('/api/v1/queue').length).toBeGreaterThanOrEqual(2);
    // A schedule change does not move the queue.
    act(() => source.emit('MODIFIED', { namespace: 'team-a', resource: 'schedules', name: 'nightly', object: {} }));
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 400));
    });
    expect(api.callsTo('/api/v1/namespaces/team-a/queue').length).toBe(before + 1);
    await act(async () => {
      await vi.advanceTimersByTimeAsync(5000);
    });
    await eventually(() => expect(api.callsTo('/api/v1/namespaces/team-a/queue').length).toBe(before + 2));
  });

  it('shows an empty namespace queue, and a refused one explained', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/queue': { body: { namespace: 'team-a', items: [] } } });
    const { unmount } = renderQueue();
    expect((await screen.findByTestId('namespace-queue-empty')).textContent).toContain('Nothing of yours is running or waiting in team-a.');
    unmount();
    routes({ 'GET /api/v1/namespaces/team-a/queue': forbidden('list', 'nonadminbackups', 'team-a') });
    renderQueue();
    expect((await screen.findByTestId('error-alert')).textContent).toContain('Missing permission: list nonadminbackups in namespace team-a');
  });
});
