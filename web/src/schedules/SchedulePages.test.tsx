// Behaviour of the schedule pages: the list (plain-words cron, failing highlighted from the
// coverage answer, pause/resume PATCH without confirmation) and the create form (cron validated
// and described as typed, 422 in place).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import Schedules from '../pages/Schedules';
import ScheduleCreate from '../pages/ScheduleCreate';
import { openPolicy, SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { scheduleList } from '../testing/objectAnswers';
import { fakeGateway, forbidden, invalid } from '../testing/gateway';
import { renderPage } from '../testing/render';

afterEach(() => vi.unstubAllGlobals());

const paused = { ...scheduleList, items: [{ ...scheduleList.items[0], spec: { ...scheduleList.items[0].spec, paused: true } }] };

const coverage = (failing: string[]) => ({
  namespace: 'team-a',
  lastSuccessfulBackup: 'sched-probe-20261123060500',
  lastSuccessfulBackupAt: '2026-11-23T06:05:05.000Z',
  lastSuccessfulBackupAgeSeconds: 222,
  failingSchedules: failing,
});

describe('Schedules', () => {
  it('lists schedules with cron in words, runs and health; failing ones stand out', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url.startsWith('/api/v1/namespaces/team-a/schedules?')) return { body: paused };
      if (url === '/api/v1/namespaces/team-a/coverage') return { body: coverage(['sched-probe']) };
      return undefined;
    });
    renderPage('/ns/team-a/schedules', { '/ns/:namespace/schedules': <Schedules /> });
    const row = await screen.findByTestId('schedule-row');
    expect(within(row).getByTestId('schedule-cron').textContent).toContain('*/5 * * * *');
    expect(within(row).getByTestId('schedule-cron').textContent).toContain('every 5 minutes');
    expect(within(row).getByTestId('schedule-state').textContent).toBe('Paused');
    expect(within(row).getByTestId('schedule-next-run').textContent).toBe('—');
    expect(within(row).getByTestId('schedule-run-link').getAttribute('href')).toBe('/ns/team-a/backups/sched-probe-20261123060500');
    await waitFor(() => expect(row.getAttribute('data-health')).toBe('failing'));
    expect(within(row).getByTestId('schedule-health').textContent).toBe('Failing');
    expect(screen.getByTestId('schedules-failing').textContent).toContain('1 schedule(s) are failing: sched-probe');
  });

  it('resumes a paused schedule with a merge patch, without asking', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, ({ method, url }) => {
      if (method === 'GET' && url.startsWith('/api/v1/namespaces/team-a/schedules?')) return { body: paused };
      if (url === '/api/v1/namespaces/team-a/coverage') return { body: coverage([]) };
      if (method === 'PATCH') return { body: { ...scheduleList.items[0], spec: { ...scheduleList.items[0].spec, paused: false } } };
      return undefined;
    });
    renderPage('/ns/team-a/schedules', { '/ns/:namespace/schedules': <Schedules /> });
    const button = await screen.findByTestId('schedule-pause');
    expect(button.getAttribute('aria-label')).toBe('Resume schedule sched-probe');
    fireEvent.click(button);
    await waitFor(() => expect(calls.some((call) => call.method === 'PATCH')).toBe(true));
    const patch = calls.find((call) => call.method === 'PATCH')!;
    expect(patch.url).toBe('/api/v1/namespaces/team-a/schedules/sched-probe');
    expect(patch.body).toEqual({ paused: false });
    expect(screen.queryByTestId('confirm-delete')).toBeNull();
  });

  it('explains a refused pause', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ method, url }) => {
      if (method === 'GET' && url.startsWith('/api/v1/namespaces/team-a/schedules?')) return { body: scheduleList };
      if (url === '/api/v1/namespaces/team-a/coverage') return { body: coverage([]) };
      if (method === 'PATCH') {
        return forbidden('patch', 'nonadminschedules', 'team-a');
      }
      return undefined;
    });
    renderPage('/ns/team-a/schedules', { '/ns/:namespace/schedules': <Schedules /> });
    const button = await screen.findByTestId('schedule-pause');
    expect(button.getAttribute('aria-label')).toBe('Pause schedule sched-probe');
    expect(screen.getByTestId('schedule-state').textContent).toBe('Active');
    expect(screen.getByTestId('schedule-next-run').textContent).not.toBe('—');
    fireEvent.click(button);
    expect((await screen.findByTestId('schedule-action-error')).textContent).toContain('Missing permission: patch nonadminschedules in namespace team-a');
  });

  it('shows the empty state with a way to create', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => {
      if (url.startsWith('/api/v1/namespaces/team-a/schedules?')) return { body: { ...scheduleList, items: [] } };
      if (url === '/api/v1/namespaces/team-a/coverage') return { body: coverage([]) };
      return undefined;
    });
    renderPage('/ns/team-a/schedules', { '/ns/:namespace/schedules': <Schedules /> });
    expect((await screen.findByTestId('schedules-empty')).textContent).toContain('No schedules yet');
    expect(screen.getAllByTestId('schedule-create')[0].getAttribute('href')).toBe('/ns/team-a/schedules/new');
  });
});

describe('ScheduleCreate', () => {
  const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

  it('describes the cron expression as it is typed and flags mistakes', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, ({ url }) => (url === '/api/v1/namespaces/team-a/policy' ? { body: openPolicy } : undefined));
    renderPage('/ns/team-a/schedules/new', { '/ns/:namespace/schedules/new': <ScheduleCreate /> });
    expect((await screen.findByTestId('schedule-cron-words')).textContent).toContain('every day at 02:00');
    type('schedule-cron', '0 18 * * MON-FRI');
    expect(screen.getByTestId('schedule-cron-words').textContent).toContain('every Monday to Friday at 18:00');
    expect(screen.getByTestId('schedule-next-runs').textContent).toMatch(/^Next runs \(UTC\): \d{4}-\d\d-\d\d 18:00/);
    type('schedule-cron', '0 24 * * *');
    expect((await screen.findByTestId('schedule-cron-error')).textContent).toContain('Hour: 24 is outside 0–23.');
    expect(screen.queryByTestId('schedule-cron-words')).toBeNull();
    fireEvent.click(within(screen.getByTestId('schedule-preset-weekly')).getByRole('button'));
    expect(screen.getByTestId('schedule-cron-words').textContent).toContain('every Sunday at 03:00');
  });

  it('sends the schedule and shows the server 422 in place', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, (call) => {
      if (call.url === '/api/v1/namespaces/team-a/policy') return { body: { ...openPolicy, backup: { enforced: {}, defaults: {}, maximum: { ttl: '720h0m0s' }, allowed: {} } } };
      if (call.method === 'POST') {
        return invalid('the NonAdminSchedule is refused by policy: …', [
          { field: 'spec.template.backupSpec.excludedResources', message: 'NonAdminSchedule spec.template.backupSpec.excludedResources may not name nonadminbackups.oadp.openshift.io', reason: 'restricted' },
        ]);
      }
      return undefined;
    });
    renderPage('/ns/team-a/schedules/new', { '/ns/:namespace/schedules/new': <ScheduleCreate /> });
    await screen.findByTestId('schedule-cron-words');
    type('schedule-name', 'nightly');
    type('schedule-ttl', '800h');
    expect((await screen.findByTestId('schedule-ttl-error')).textContent).toContain('At most 720h0m0s is allowed.');
    type('schedule-ttl', '168h');
    type('schedule-excluded', 'nonadminbackups.oadp.openshift.io');
    fireEvent.click(screen.getByTestId('schedule-skip'));
    fireEvent.click(screen.getByTestId('schedule-submit'));
    expect((await screen.findByTestId('schedule-excluded-error')).textContent).toContain('may not name nonadminbackups.oadp.openshift.io');
    const post = calls.find((call) => call.method === 'POST')!;
    expect(post.url).toBe('/api/v1/namespaces/team-a/schedules');
    expect(post.body).toEqual({
      name: 'nightly',
      spec: { schedule: '0 2 * * *', template: { backupSpec: { excludedResources: ['nonadminbackups.oadp.openshift.io'], ttl: '168h' } }, skipImmediately: true },
    });
  }, 20000);
});
