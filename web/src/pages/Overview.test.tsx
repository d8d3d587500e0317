// Tests of the dashboard against the demo's answers: protection banner, actions, queue, rates, schedules, live.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, screen, within } from '@testing-library/react';
import Overview from './Overview';
import type { NamespaceStatistics } from '../api/types';
import { aliceNamespaces, ciBotNamespaces } from '../testing/accessAnswers';
import { eventually, FakeEventSource, fakeGateway, type FakeRoute } from '../testing/gateway';
import { coverage, namespaceQueue, schedules, stats7d, uncovered } from '../testing/historyAnswers';
import { renderPage } from '../testing/render';
import { RETAINED_STORAGE } from '../testing/manifestAnswers';

const renderOverview = (namespace = 'team-a') => renderPage(`/ns/${namespace}`, { '/ns/:namespace': <Overview /> });

/** 30 days with a few failed schedule runs. */
const stats30d: NamespaceStatistics = {
  ...stats7d,
  from: '2026-10-24T06:00:00.000Z',
  kinds: [
    ...stats7d.kinds,
    { kind: 'schedule_run', total: 30, byPhase: { Completed: 24, PartiallyFailed: 2, Failed: 4 }, successRate: 0.8, p50DurationMs: 5000, p95DurationMs: 9000, itemsDone: 1300 },
  ],
};

function routes(overrides: Record<string, FakeRoute> = {}) {
  return fakeGateway({
    'GET /api/v1/namespaces': { body: aliceNamespaces },
    'GET /api/v1/namespaces/team-a/coverage': { body: coverage },
    'GET /api/v1/namespaces/team-a/queue': { body: namespaceQueue },
    'GET /api/v1/namespaces/team-a/stats': ({ query }) => {
      const days = (Date.parse(query.get('to')!) - Date.parse(query.get('from')!)) / 86_400_000;
      return { body: days > 7 ? stats30d : stats7d };
    },
    'GET /api/v1/namespaces/team-a/schedules': { body: schedules },
    ...overrides,
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-23T06:02:10.000Z'));
  FakeEventSource.install();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('Overview dashboard', () => {
  it('says how fresh the last backup is', async () => {
    routes();
    renderOverview();
    const banner = await screen.findByTestId('protection-status');
    expect(banner.getAttribute('data-level')).toBe('success');
    expect(banner.textContent).toContain('Last backup 2m ago');
    const last = screen.getByTestId('last-backup');
    expect(within(last).getByTestId('last-backup-link').getAttribute('href')).toBe('/ns/team-a/backups/ui-overview-probe-20261123060000');
    expect(last.textContent).toContain('2m');
  });

  it('warns loudly when nothing was ever backed up', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/coverage': { body: uncovered } });
    renderOverview();
    const banner = await screen.findByTestId('protection-status');
    expect(banner.getAttribute('data-level')).toBe('danger');
    expect(banner.textContent).toContain('Not protected: no successful backup yet');
  });

  it('warns when the last backup is 3 days old and a schedule is failing', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/coverage': { body: { ...coverage, lastSuccessfulBackupAt: '2026-11-20T06:02:10.000Z', failingSchedules: ['ui-overview-probe'] } } });
    renderOverview();
    const banner = await screen.findByTestId('protection-status');
    expect(banner.getAttribute('data-level')).toBe('warning');
    expect(banner.textContent).toContain('Last backup 3d ago');
    expect(banner.textContent).toContain('Schedules whose last run failed: ui-overview-probe.');
    const failing = (await screen.findAllByTestId('schedule-health')).find((row) => row.getAttribute('data-name') === 'ui-overview-probe')!;
    expect(failing.getAttribute('data-health')).toBe('failing');
  });

  it('offers the quick actions I may take, as links', async () => {
    routes();
    renderOverview();
    await screen.findByTestId('action-create-backup');
    await eventually(() => expect(screen.getByTestId('action-create-backup').tagName).toBe('A'));
    expect(screen.getByTestId('action-create-backup').getAttribute('href')).toBe('/ns/team-a/backups/new');
    expect(screen.getByTestId('action-restore').getAttribute('href')).toBe('/ns/team-a/restores/new');
    expect(screen.getByTestId('action-create-schedule').getAttribute('href')).toBe('/ns/team-a/schedules/new');
  });

  it('disables and explains the actions a CI bot may not take', async () => {
    routes({ 'GET /api/v1/namespaces': { body: ciBotNamespaces } });
    renderOverview();
    await eventually(() => expect(screen.getByTestId('action-create-backup').tagName).toBe('A'));
    const restore = screen.getByTestId('action-restore');
    expect(restore.tagName).toBe('BUTTON');
    expect(restore.getAttribute('aria-disabled')).toBe('true');
    expect(restore.getAttribute('aria-description')).toBe('You may not create restores in team-a.');
    expect(screen.getByTestId('schedules-forbidden').textContent).toBe('You may not list schedules here.');
  });

  it('shows running and queued work with estimates', async () => {
    routes();
    renderOverview();
    const queue = await screen.findByTestId('dashboard-queue');
    const rows = await within(queue).findAllByTestId('queue-item');
    expect(rows.map((row) => row.getAttribute('data-name'))).toEqual(['probe-partially-fail', 'probe-fail', 'ui-hist-3']);
    expect(within(rows[1]).getByTestId('queue-eta').textContent).toContain('from 4 recent runs');
  });

  it('shows failure rates over 7 and 30 days', async () => {
    routes();
    renderOverview();
    const rows = await screen.findAllByTestId('failure-rate-row');
    expect(rows.map((row) => row.getAttribute('data-kind'))).toEqual(['backup', 'schedule_run', 'restore']);
    const runs = rows[1];
    expect(within(runs).getByTestId('failure-rate-7d').textContent).toBe('none finished');
    expect(within(runs).getByTestId('failure-rate-30d').textContent).toBe('20% failed6 of 30 failed');
    expect(within(rows[0]).getByTestId('failure-rate-7d').textContent).toBe('0% failed0 of 4 failed');
  });

  it('lists schedules with their health, unhealthy first', async () => {
    routes();
    renderOverview();
    const rows = await screen.findAllByTestId('schedule-health');
    expect(rows.map((row) => [row.getAttribute('data-name'), row.getAttribute('data-health')])).toEqual([
      ['nightly', 'paused'],
      ['ui-overview-probe', 'healthy'],
    ]);
    expect(rows[1].textContent).toContain('Runs */2 * * * *');
    expect(rows[1].textContent).toContain('last run Completed 2m ago');
  });

  it('follows live changes', async () => {
    const api = routes();
    renderOverview();
    await screen.findByTestId('protection-status');
    const before = api.callsTo('/api/v1/namespaces/team-a/coverage').length;
    const source = FakeEventSource.instances.find((instance) => instance.url === '/api/v1/namespaces/team-a/events')!;
    act(() => source.emit('MODIFIED', { namespace: 'team-a', resource: 'backups', name: 'probe-fail', object: {} }));
    await eventually(() => expect(api.callsTo('/api/v1/namespaces/team-a/coverage').length).toBe(before + 1));
  });

  it('says so when the namespace is not mine', async () => {
    routes();
    renderOverview('team-b');
    expect((await screen.findByTestId('overview-no-access')).textContent).toContain('You may not use backups in team-b.');
  });

  it('shows the shared backup storage with its purge date, and nothing without a shared pool', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/sharedstorage': { body: RETAINED_STORAGE } });
    const view = renderOverview();
    const card = await screen.findByTestId('shared-storage');
    expect(card.getAttribute('data-state')).toBe('Retained');
    expect(within(card).getByTestId('shared-storage-state').textContent).toBe('Retained');
    expect(within(card).getByTestId('shared-storage-message').textContent).toBe(RETAINED_STORAGE.message);
    expect(within(card).getByTestId('shared-storage-purge').textContent).toContain('(in 7d 5h)');
    view.unmount();

    const api = routes({ 'GET /api/v1/namespaces/team-a/sharedstorage': { body: { configured: false } } });
    renderOverview();
    await screen.findByTestId('protection-status');
    await eventually(() => expect(api.callsTo('/api/v1/namespaces/team-a/sharedstorage')).toHaveLength(1));
    expect(screen.queryByTestId('shared-storage')).toBeNull();
  });
});
