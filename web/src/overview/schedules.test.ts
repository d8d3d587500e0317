// Tests of schedule health.
import { describe, expect, it } from 'vitest';
import type { NonAdminSchedule } from '../api/types';
import { schedules } from '../testing/historyAnswers';
import { healthColor, lastRunOf, scheduleHealth, sortSchedulesByHealth } from './schedules';

const [probe, nightly] = schedules.items;

function withLastRun(schedule: NonAdminSchedule, phase: string): NonAdminSchedule {
  return { ...schedule, status: { ...schedule.status, lastBackup: { name: 'run-1', veleroBackupName: 'v-run-1', phase } } };
}

describe('lastRunOf', () => {
  it('reads the newest run object', () => {
    expect(lastRunOf(probe)).toMatchObject({ name: 'ui-overview-probe-20261123055936', phase: 'Completed' });
    expect(lastRunOf(nightly)).toBeNull();
  });
});

describe('scheduleHealth', () => {
  it('is healthy when the last run completed', () => {
    expect(scheduleHealth(probe, [])).toBe('healthy');
    expect(healthColor('healthy')).toBe('green');
  });
  it('is paused when paused', () => {
    expect(scheduleHealth(nightly, [])).toBe('paused');
  });
  it('is failing when the coverage says so or the last run failed', () => {
    expect(scheduleHealth(probe, ['ui-overview-probe'])).toBe('failing');
    expect(scheduleHealth(withLastRun(probe, 'PartiallyFailed'), [])).toBe('failing');
    expect(healthColor('failing')).toBe('red');
  });
  it('waits for the first run, and shows a refusal', () => {
    expect(scheduleHealth({ ...nightly, spec: { ...nightly.spec, paused: false } }, [])).toBe('waiting');
    expect(scheduleHealth({ ...probe, status: { phase: 'BackingOff' } }, [])).toBe('refused');
  });
  it('sorts the unhealthy first', () => {
    const failing = { ...withLastRun(probe, 'Failed'), metadata: { name: 'z-failing' } };
    expect(sortSchedulesByHealth([probe, nightly, failing], []).map((s) => s.metadata.name)).toEqual(['z-failing', 'nightly', 'ui-overview-probe']);
  });
});
