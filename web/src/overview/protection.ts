// The dashboard's protection status: how old the newest successful backup is and whether that
// is fine, worrying or bad, plus failing schedules (pure; unit-tested in protection.test.ts).
import type { NamespaceCoverage } from '../api/types';
import { formatDuration, formatTimestamp } from '../format';
import { fmt, t } from '../strings';

export type ProtectionLevel = 'success' | 'warning' | 'danger';

export interface ProtectionThresholds {
  /** Older than this is a warning (a daily backup was missed). */
  warnAfterSeconds: number;
  /** Older than this is bad. */
  dangerAfterSeconds: number;
}

/** A missed daily backup (with two hours of slack) warns; a week without one is bad. */
export const DEFAULT_THRESHOLDS: ProtectionThresholds = { warnAfterSeconds: 26 * 3600, dangerAfterSeconds: 7 * 86400 };

/**
 * Age in seconds of the newest successful backup at `now`: from its completion time when
 * known (so it keeps growing between reloads), else the age the server computed when it
 * answered at `fetchedAt`; null when there is none.
 */
export function backupAgeSeconds(coverage: NamespaceCoverage, now: number, fetchedAt: number = now): number | null {
  const at = coverage.lastSuccessfulBackupAt ? Date.parse(coverage.lastSuccessfulBackupAt) : NaN;
  if (!Number.isNaN(at)) return Math.max(0, (now - at) / 1000);
  if (typeof coverage.lastSuccessfulBackupAgeSeconds === 'number') {
    return Math.max(0, coverage.lastSuccessfulBackupAgeSeconds + (now - fetchedAt) / 1000);
  }
  return null;
}

export interface ProtectionStatus {
  level: ProtectionLevel;
  title: string;
  /** Sentences explaining the status. */
  details: string[];
  ageSeconds: number | null;
}

/** The banner at the top of the dashboard. */
export function protectionStatus(
  coverage: NamespaceCoverage,
  now: number,
  thresholds: ProtectionThresholds = DEFAULT_THRESHOLDS,
  fetchedAt: number = now,
): ProtectionStatus {
  const words = t.overview.dashboard.protection;
  const age = backupAgeSeconds(coverage, now, fetchedAt);
  const failing = coverage.failingSchedules ?? [];
  const failingDetail = failing.length ? [fmt(words.failingSchedules, { names: failing.join(', ') })] : [];
  if (age === null) {
    return {
      level: 'danger',
      title: words.none,
      details: [fmt(words.noneDetail, { namespace: coverage.namespace }), ...failingDetail],
      ageSeconds: null,
    };
  }
  const level: ProtectionLevel =
    age > thresholds.dangerAfterSeconds ? 'danger' : age > thresholds.warnAfterSeconds || failing.length > 0 ? 'warning' : 'success';
  const details: string[] = [];
  if (coverage.lastSuccessfulBackup) {
    details.push(fmt(words.lastDetail, { name: coverage.lastSuccessfulBackup, when: formatTimestamp(coverage.lastSuccessfulBackupAt) }));
  }
  if (age > thresholds.warnAfterSeconds) {
    const threshold = age > thresholds.dangerAfterSeconds ? thresholds.dangerAfterSeconds : thresholds.warnAfterSeconds;
    details.push(fmt(words.stale, { threshold: formatDuration(threshold) }));
  }
  details.push(...failingDetail);
  return { level, title: fmt(words.last, { age: formatDuration(age) }), details, ageSeconds: age };
}
