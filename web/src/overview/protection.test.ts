// Tests of the protection status: backup age, thresholds and failing schedules.
import { describe, expect, it } from 'vitest';
import { coverage, uncovered } from '../testing/historyAnswers';
import { DEFAULT_THRESHOLDS, backupAgeSeconds, protectionStatus } from './protection';

const completed = Date.parse('2026-11-23T06:00:10.000Z');

describe('backupAgeSeconds', () => {
  it('measures from the completion time', () => {
    expect(backupAgeSeconds(coverage, completed + 90_000)).toBe(90);
  });
  it('falls back to the server age, grown by the time since the answer', () => {
    const withoutTime = { ...coverage, lastSuccessfulBackupAt: null, lastSuccessfulBackupAgeSeconds: 100 };
    expect(backupAgeSeconds(withoutTime, 1_000_000 + 20_000, 1_000_000)).toBe(120);
  });
  it('is null when nothing was ever backed up', () => {
    expect(backupAgeSeconds(uncovered, completed)).toBeNull();
  });
});

describe('protectionStatus', () => {
  it('is bad without any successful backup', () => {
    const status = protectionStatus(uncovered, completed);
    expect(status.level).toBe('danger');
    expect(status.title).toBe('Not protected: no successful backup yet');
    expect(status.details[0]).toContain('Nothing in team-a has been backed up');
    expect(status.ageSeconds).toBeNull();
  });
  it('is fine right after a backup', () => {
    const status = protectionStatus(coverage, completed + 5_000);
    expect(status.level).toBe('success');
    expect(status.title).toBe('Last backup 5s ago');
    expect(status.details[0]).toMatch(/^ui-overview-probe-20261123060000 completed /);
  });
  it('warns once a daily backup was missed, and is bad after a week', () => {
    const warn = protectionStatus(coverage, completed + (DEFAULT_THRESHOLDS.warnAfterSeconds + 60) * 1000);
    expect(warn.level).toBe('warning');
    expect(warn.title).toBe('Last backup 1d 2h ago');
    expect(warn.details).toContain('The newest successful backup is older than 1d 2h.');
    const threeDays = protectionStatus(coverage, completed + 3 * 86_400_000);
    expect(threeDays.title).toBe('Last backup 3d ago');
    expect(threeDays.level).toBe('warning');
    const bad = protectionStatus(coverage, completed + 8 * 86_400_000);
    expect(bad.level).toBe('danger');
    expect(bad.details).toContain('The newest successful backup is older than 7d.');
  });
  it('honours other thresholds', () => {
    expect(protectionStatus(coverage, completed + 3_600_000, { warnAfterSeconds: 600, dangerAfterSeconds: 1800 }).level).toBe('danger');
  });
  it('warns about failing schedules even when the last backup is recent', () => {
    const status = protectionStatus({ ...coverage, failingSchedules: ['nightly', 'hourly'] }, completed + 5_000);
    expect(status.level).toBe('warning');
    expect(status.details).toContain('Schedules whose last run failed: nightly, hourly.');
  });
});
