// Tests of the history page against the demo's answers: table, paging, filters, timeline, charts, errors.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import History from './History';
import { SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { completedBackupDetail, failedBackup, historyPage, refusedLocationDetail, restore, runningBackup, scheduleRun, stats7d } from '../testing/historyAnswers';
import { fakeGateway, forbidden, type FakeRoute } from '../testing/gateway';
import { renderPage, WhereAmI } from '../testing/render';

function renderAt(path: string) {
  return renderPage(path, {
    '/ns/:namespace/history': (
      <>
        <History />
        <WhereAmI />
      </>
    ),
  });
}

const secondPage = { items: [{ ...restore, id: 'older-1', name: 'r-old', createdAt: '2026-11-20T10:00:00.000Z' }], continue: null };

function routes(overrides: Record<string, FakeRoute> = {}) {
  return fakeGateway({
    ...SIGNED_IN_AS_ALICE,
    'GET /api/v1/namespaces/team-a/history': ({ query }) => {
      if (query.get('limit') === '500') return { body: { items: [scheduleRun, restore, runningBackup, failedBackup], continue: null } };
      return { body: query.get('continue') ? secondPage : historyPage };
    },
    'GET /api/v1/namespaces/team-a/stats': { body: stats7d },
    [`GET /api/v1/namespaces/team-a/history/${runningBackup.id}`]: { body: completedBackupDetail },
    [`GET /api/v1/namespaces/team-a/history/${refusedLocationDetail.operation.id}`]: { body: refusedLocationDetail },
    ...overrides,
  });
}

// The demo's answers are from 2026-11-23 06:00 UTC; the page measures from "now".
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-23T06:02:00.000Z'));
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('History page', () => {
  it('lists operations with kind, phase, requester, duration, items and a deleted marker', async () => {
    routes();
    renderAt('/ns/team-a/history');
    const rows = await screen.findAllByTestId('history-row');
    expect(rows).toHaveLength(6);
    const run = within(rows[0]);
    expect(run.getByText('Scheduled backup')).toBeTruthy();
    expect(run.getByRole('link', { name: 'sched-probe-20261123060000' }).getAttribute('href')).toBe('/ns/team-a/backups/sched-probe-20261123060000');
    expect(run.getByText('46 / 46 items')).toBeTruthy();
    expect(run.getByText('5s')).toBeTruthy();
    expect(run.getByText('schedule')).toBeTruthy();
    // The deletion's object is gone: no link, a "deleted" marker.
    const gone = within(rows[1]);
    expect(gone.queryByRole('link', { name: 'probe-partially-fail' })).toBeNull();
    expect(gone.getByTestId('history-deleted').textContent).toBe('deleted');
    // A restore links to its backup.
    expect(within(rows[3]).getByRole('link', { name: 'from ui-hist-1' }).getAttribute('href')).toBe('/ns/team-a/backups/ui-hist-1');
    expect(within(rows[5]).getByTestId('phase').textContent).toBe('Failed');
    expect(within(rows[5]).getByText('4m')).toBeTruthy();
  });

  it('asks the API for the last 7 days by default, 50 at a time', async () => {
    const api = routes();
    renderAt('/ns/team-a/history');
    await screen.findAllByTestId('history-row');
    const tableCall = api.callsTo('/api/v1/namespaces/team-a/history').find((call) => call.query.get('limit') === '50')!;
    const since = Date.parse(tableCall.query.get('since')!);
    const until = Date.parse(tableCall.query.get('until')!);
    expect(until - since).toBe(7 * 86_400_000);
    expect(tableCall.query.get('kind')).toBeNull();
    const chartCall = api.callsTo('/api/v1/namespaces/team-a/history').find((call) => call.query.get('limit') === '500')!;
    expect(chartCall.query.getAll('kind')).toEqual(['backup', 'schedule_run', 'restore']);
    expect(api.callsTo('/api/v1/namespaces/team-a/stats')).toHaveLength(1);
  });

  it('loads more with the continue token and then says all are shown', async () => {
    const api = routes();
    renderAt('/ns/team-a/history');
    await screen.findAllByTestId('history-row');
    expect(screen.getByTestId('history-count').textContent).toBe('6 operations shown');
    await userEvent.click(screen.getByTestId('history-load-more'));
    await waitFor(() => expect(screen.getAllByTestId('history-row')).toHaveLength(7));
    const more = api.callsTo('/api/v1/namespaces/team-a/history').find((call) => call.query.get('continue'));
    expect(more?.query.get('continue')).toBe(historyPage.continue);
    expect(screen.getByTestId('history-count').textContent).toBe('All 7 operations shown');
    expect(screen.queryByTestId('history-load-more')).toBeNull();
  });

  it('filters by kind and phase through the URL and the API', async () => {
    const api = routes();
    renderAt('/ns/team-a/history');
    await screen.findAllByTestId('history-row');
    await userEvent.selectOptions(screen.getByLabelText('Kind'), 'restore');
    await userEvent.selectOptions(screen.getByLabelText('Phase'), 'Failed');
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/ns/team-a/history?kind=restore&phase=Failed'));
    await waitFor(() =>
      expect(api.callsTo('/api/v1/namespaces/team-a/history').some((call) => call.query.get('kind') === 'restore' && call.query.get('phase') === 'Failed')).toBe(true),
    );
    expect(screen.getByTestId('filter-clear')).toBeTruthy();
  });

  it('searches once typing pauses', async () => {
    const api = routes();
    renderAt('/ns/team-a/history');
    await screen.findAllByTestId('history-row');
    await userEvent.type(screen.getByLabelText('Search name, requester or failure reason'), 'nightly');
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/ns/team-a/history?q=nightly'));
    expect(api.callsTo('/api/v1/namespaces/team-a/history').some((call) => call.query.get('q') === 'nightly')).toBe(true);
    expect(api.callsTo('/api/v1/namespaces/team-a/history').some((call) => call.query.get('q') === 'n')).toBe(false);
  });

  it('explains an unusable custom range instead of asking the API', async () => {
    routes();
    renderAt('/ns/team-a/history?range=custom&from=2026-11-10&to=2026-11-01');
    expect((await screen.findByTestId('filter-range-problem')).textContent).toContain('The start date is after the end date.');
    expect(screen.queryByTestId('history-charts')).toBeNull();
  });

  it('expands a row into its timeline with the failure reason', async () => {
    const api = routes({ 'GET /api/v1/namespaces/team-a/history': { body: { items: [refusedLocationDetail.operation, runningBackup], continue: null } } });
    renderAt('/ns/team-a/history');
    const [location] = await screen.findAllByTestId('history-row');
    const toggle = within(location).getByRole('button', { name: 'Show the timeline of loc-probe' });
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    await userEvent.click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    const timeline = await screen.findByTestId('operation-timeline');
    expect(within(timeline).getByTestId('operation-failure-reason').textContent).toContain('Secret "web-credentials" has no key "cloud"');
    const entries = within(timeline).getAllByTestId('timeline-entry');
    expect(entries).toHaveLength(2);
    expect(entries[1].textContent).toContain('Condition Accepted: False — BslSpecValidation');
    expect(api.callsTo(`/api/v1/namespaces/team-a/history/${refusedLocationDetail.operation.id}`)).toHaveLength(1);
  });

  it('draws the charts and the stats of the range', async () => {
    routes();
    renderAt('/ns/team-a/history');
    const chart = await screen.findByTestId('success-rate-svg');
    expect(chart.getAttribute('role')).toBe('img');
    expect(chart.getAttribute('aria-label')).toMatch(/^Success rate per day from .*: 2 succeeded, 1 failed, 67% overall\.$/);
    expect(screen.getAllByTestId('duration-point')).toHaveLength(3);
    expect(screen.getByTestId('chart-basis').textContent).toBe('From 4 operations (backup, scheduled backup, restore), every phase.');
    const stats = screen.getAllByTestId('history-stats-row');
    expect(stats.map((row) => row.getAttribute('data-kind'))).toEqual(['backup', 'restore', 'download']);
    // A served download is a success, whatever the server's successRate says.
    expect(within(stats[2]).getByText('100%')).toBeTruthy();
  });

  it('explains a refused permission', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/history': forbidden('list', 'nonadminbackups', 'team-a'), 'GET /api/v1/namespaces/team-a/stats': forbidden('list', 'nonadminbackups', 'team-a') });
    renderAt('/ns/team-a/history');
    const alerts = await screen.findAllByTestId('error-alert');
    expect(alerts[0].textContent).toContain('Missing permission: list nonadminbackups in namespace team-a');
  });

  it('shows an empty state', async () => {
    routes({ 'GET /api/v1/namespaces/team-a/history': { body: { items: [] } }, 'GET /api/v1/namespaces/team-a/stats': { body: { ...stats7d, kinds: [] } } });
    renderAt('/ns/team-a/history');
    expect((await screen.findByTestId('history-empty')).textContent).toContain('Nothing happened in team-a in this time range.');
    expect(await screen.findByTestId('chart-empty')).toBeTruthy();
  });
});

