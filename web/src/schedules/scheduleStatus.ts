// What a NonAdminSchedule's status means for the list: its newest run and health (failing runs
// and the coverage answer's `failingSchedules` are highlighted), last and next run times, and the
// merge patch that pauses or resumes it.
import type { NamespaceAccess, NonAdminSchedule } from '../api/types';
import { formatUntil } from '../format';
import { t } from '../strings';

type ScheduleStatus = NonNullable<NonAdminSchedule['status']>;

/** One backup a schedule created (status.lastBackup / status.recentBackups[]). */
export type ScheduleRun = NonNullable<ScheduleStatus['lastBackup']>;

export function scheduleStatus(schedule: NonAdminSchedule): ScheduleStatus {
  return schedule.status ?? {};
}

/** The newest run: status.lastBackup, else the first of recentBackups. */
export function newestRun(schedule: NonAdminSchedule): ScheduleRun | null {
  const status = scheduleStatus(schedule);
  return status.lastBackup ?? status.recentBackups?.[0] ?? null;
}

/** When the schedule last created a backup. */
export function lastRunTime(schedule: NonAdminSchedule): string | null {
  const status = scheduleStatus(schedule);
  return status.veleroSchedule?.status?.lastBackup ?? newestRun(schedule)?.startTimestamp ?? null;
}

export function nextRunTime(schedule: NonAdminSchedule): string | null {
  if (schedule.spec.paused) return null;
  return scheduleStatus(schedule).nextRun ?? null;
}

export type ScheduleHealth = 'healthy' | 'failing' | 'partial' | 'running' | 'paused' | 'invalid' | 'noRuns';

const FAILED = ['Failed', 'FailedValidation'];
const PARTIAL = ['PartiallyFailed'];
const RUNNING = ['New', 'Queued', 'InProgress', 'WaitingForPluginOperations', 'Finalizing', 'ReadyToStart'];

/** The schedule's health from its newest run, its Velero validation, and the coverage answer. */
export function scheduleHealth(schedule: NonAdminSchedule, failingSchedules: string[] = []): ScheduleHealth {
  const status = scheduleStatus(schedule);
  const velero = status.veleroSchedule?.status;
  const refused = (status.conditions ?? []).some((condition) => condition.type === 'Accepted' && condition.status === 'False');
  if (refused || velero?.phase === 'FailedValidation' || (velero?.validationErrors?.length ?? 0) > 0 || status.phase === 'BackingOff') return 'invalid';
  const run = newestRun(schedule);
  if (failingSchedules.includes(schedule.metadata.name) || FAILED.includes(run?.phase ?? '')) return 'failing';
  if (PARTIAL.includes(run?.phase ?? '')) return 'partial';
  if (!run) return schedule.spec.paused ? 'paused' : 'noRuns';
  if (RUNNING.includes(run.phase ?? '')) return 'running';
  return 'healthy';
}

/** Whether the row is highlighted as a problem. */
export function isUnhealthy(health: ScheduleHealth): boolean {
  return health === 'failing' || health === 'partial' || health === 'invalid';
}

/** The JSON merge patch of the spec that pauses (true) or resumes (false) a schedule. */
export function pausePatch(paused: boolean): { paused: boolean } {
  return { paused };
}

/** Why the schedule is invalid, for the row's explanation. */
export function scheduleProblem(schedule: NonAdminSchedule): string | null {
  const status = scheduleStatus(schedule);
  const refused = (status.conditions ?? []).find((condition) => condition.status === 'False' && condition.message);
  if (refused) return refused.message ?? null;
  const errors = status.veleroSchedule?.status?.validationErrors ?? [];
  return errors.length ? errors.join('; ') : null;
}

/**
 * Whether pausing/resuming (PATCH) should be offered. The gateway reports only get, list, watch,
 * create and delete per resource; when it reports no patch verb anywhere, the server decides
 * (a refusal is explained), else the schedules' own verbs do.
 */
export function mayPatchSchedules(access: NamespaceAccess | undefined): boolean {
  if (!access) return true;
  const reportsPatch = Object.values(access.permissions ?? {}).some((verbs) => verbs.includes('patch') || verbs.includes('update'));
  if (!reportsPatch) return true;
  const verbs = access.permissions.schedules ?? [];
  return verbs.includes('patch') || verbs.includes('update');
}

/** "in 4m", "due now" once the time has come (the status lags a little), or "—". */
export function nextRunText(next: string | null, now: number): string {
  if (!next) return t.common.none;
  const at = Date.parse(next);
  if (Number.isNaN(at)) return t.common.none;
  return at <= now ? t.schedules.list.due : formatUntil(next, now);
}
