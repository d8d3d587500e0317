// Tests of schedule status helpers on a real demo list.
import { describe, expect, it } from 'vitest';
import type { NonAdminSchedule } from '../api/types';
import { scheduleList } from '../testing/objectAnswers';
import { isUnhealthy, mayPatchSchedules, nextRunText, lastRunTime, newestRun, nextRunTime, pausePatch, scheduleHealth, scheduleProblem } from './scheduleStatus';

const real = scheduleList.items[0];

function withRun(phase: string, extra: Partial<NonAdminSchedule['spec']> = {}): NonAdminSchedule {
  return {
    ...real,
    spec: { ...real.spec, paused: false, ...extra },
    status: { ...real.status, lastBackup: { name: 'nightly-1', veleroBackupName: 'v', phase } },
  };
}

describe('runs', () => {
  it('reads the newest run and its times', () => {
    expect(newestRun(real)?.name).toBe('sched-probe-20261123060500');
    expect(newestRun(real)?.phase).toBe('Completed');
    expect(lastRunTime(real)).toBe('2026-11-23T06:05:00Z');
  });

  it('has no next run while paused', () => {
    expect(nextRunTime({ ...real, spec: { ...real.spec, paused: false } })).toBe('2026-11-23T06:10:00Z');
    expect(nextRunTime({ ...real, spec: { ...real.spec, paused: true } })).toBeNull();
  });

  it('falls back to recentBackups, or nothing', () => {
    const noLast = { ...real, status: { ...real.status, lastBackup: undefined } } satisfies NonAdminSchedule;
    expect(newestRun(noLast)?.name).toBe('sched-probe-20261123060500');
    const fresh = { ...real, status: { phase: 'Created' } } satisfies NonAdminSchedule;
    expect(newestRun(fresh)).toBeNull();
    expect(lastRunTime(fresh)).toBeNull();
  });
});

describe('scheduleHealth', () => {
  it('is healthy when the newest run completed', () => {
    expect(scheduleHealth(withRun('Completed'))).toBe('healthy');
  });
  it('is failing when the newest run failed, or coverage says so', () => {
    expect(scheduleHealth(withRun('Failed'))).toBe('failing');
    expect(scheduleHealth(withRun('Completed'), ['sched-probe'])).toBe('failing');
    expect(scheduleHealth(withRun('PartiallyFailed'))).toBe('partial');
  });
  it('shows running, paused and no runs', () => {
    expect(scheduleHealth(withRun('InProgress'))).toBe('running');
    // Paused shows in the state column; health stays the newest run's.
    expect(scheduleHealth(withRun('Completed', { paused: true }))).toBe('healthy');
    expect(scheduleHealth({ ...real, spec: { ...real.spec, paused: true }, status: { phase: 'Created' } } satisfies NonAdminSchedule)).toBe('paused');
    expect(scheduleHealth({ ...real, spec: { ...real.spec, paused: false }, status: { phase: 'Created' } } satisfies NonAdminSchedule)).toBe('noRuns');
  });
  it('is invalid when NAC refused it', () => {
    const refused = {
      ...real,
      status: { phase: 'BackingOff', conditions: [{ type: 'Accepted', status: 'False', reason: 'InvalidSchedule', message: 'spec.schedule: invalid cron expression', lastTransitionTime: '2026-11-23T05:59:36Z' }] },
    } satisfies NonAdminSchedule;
    expect(scheduleHealth(refused)).toBe('invalid');
    expect(scheduleProblem(refused)).toBe('spec.schedule: invalid cron expression');
    expect(scheduleProblem(real)).toBeNull();
  });
  it('highlights only problems', () => {
    expect(['healthy', 'failing', 'partial', 'running', 'paused', 'invalid', 'noRuns'].map((h) => isUnhealthy(h as never))).toEqual([
      false,
      true,
      true,
      false,
      false,
      true,
      false,
    ]);
  });
});

describe('pausePatch', () => {
  it('is a merge patch of the spec', () => {
    expect(pausePatch(true)).toEqual({ paused: true });
    expect(pausePatch(false)).toEqual({ paused: false });
  });
});

describe('mayPatchSchedules', () => {
  const verbs = ['get', 'list', 'watch', 'create', 'delete'];
  it('lets the server decide when patch is not reported (the real namespaces answer)', () => {
    expect(mayPatchSchedules({ name: 'team-a', permissions: { backups: verbs, restores: verbs, schedules: verbs, 'storage-locations': verbs }, canDownload: true })).toBe(true);
    expect(mayPatchSchedules(undefined)).toBe(true);
  });
  it('follows the schedules verbs when patch is reported', () => {
    expect(mayPatchSchedules({ name: 'team-a', permissions: { backups: [...verbs, 'patch'], schedules: verbs }, canDownload: true })).toBe(false);
    expect(mayPatchSchedules({ name: 'team-a', permissions: { schedules: [...verbs, 'patch'] }, canDownload: true })).toBe(true);
  });
});

describe('nextRunText', () => {
  const now = Date.parse('2026-11-23T06:06:00Z');
  it('says when the next run comes', () => {
    expect(nextRunText('2026-11-23T06:10:00Z', now)).toBe('in 4m');
    expect(nextRunText('2026-11-23T06:05:00Z', now)).toBe('due now');
    expect(nextRunText(null, now)).toBe('—');
  });
});
