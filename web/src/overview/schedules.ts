// The dashboard's view of schedule health (coarser than the schedules page's, in
// schedules/scheduleStatus): from its spec, its newest run and the coverage's failing schedules
// (pure; unit-tested in schedules.test.ts).
import type { NonAdminSchedule } from '../api/types';
import { outcomeOf } from '../history/buckets';
import type { ScheduleRun } from '../schedules/scheduleStatus';

export type ScheduleHealth = 'healthy' | 'failing' | 'paused' | 'waiting' | 'refused';

/** The schedule's newest run as NAC reports it in `status.lastBackup`. */
export function lastRunOf(schedule: NonAdminSchedule): ScheduleRun | null {
  return schedule.status?.lastBackup ?? null;
}

/** How a schedule is doing: refused by NAC, paused, failing, waiting for its first run, or healthy. */
export function scheduleHealth(schedule: NonAdminSchedule, failingSchedules: readonly string[]): ScheduleHealth {
  if (schedule.status?.phase === 'BackingOff') return 'refused';
  if (schedule.spec.paused) return 'paused';
  if (failingSchedules.includes(schedule.metadata.name)) return 'failing';
  const last = lastRunOf(schedule);
  if (!last) return 'waiting';
  return outcomeOf(last.phase) === 'failed' ? 'failing' : 'healthy';
}

/** Colour of a health label. */
export function healthColor(health: ScheduleHealth): 'green' | 'red' | 'grey' | 'blue' | 'orange' {
  switch (health) {
    case 'healthy':
      return 'green';
    case 'failing':
    case 'refused':
      return 'red';
    case 'paused':
      return 'grey';
    case 'waiting':
      return 'blue';
  }
}

/** Unhealthy schedules first, then by name. */
export function sortSchedulesByHealth(schedules: readonly NonAdminSchedule[], failingSchedules: readonly string[]): NonAdminSchedule[] {
  const rank: Record<ScheduleHealth, number> = { refused: 0, failing: 1, waiting: 2, paused: 3, healthy: 4 };
  return [...schedules].sort(
    (a, b) =>
      rank[scheduleHealth(a, failingSchedules)] - rank[scheduleHealth(b, failingSchedules)] || a.metadata.name.localeCompare(b.metadata.name),
  );
}
