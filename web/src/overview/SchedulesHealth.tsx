// The dashboard's schedules: each with its health, cron, next run and last run, the unhealthy
// ones first.
import { Label, List, ListItem } from '@patternfly/react-core';
import type { NonAdminSchedule } from '../api/types';
import { formatAge, formatUntil } from '../format';
import { fmt, t } from '../strings';
import { healthColor, lastRunOf, scheduleHealth, sortSchedulesByHealth } from './schedules';

export function SchedulesHealth({ schedules, failing, now }: { schedules: NonAdminSchedule[]; failing: readonly string[]; now: number }) {
  const words = t.overview.dashboard.schedules;
  if (schedules.length === 0) return <p data-testid="schedules-empty">{words.empty}</p>;
  return (
    <List isPlain isBordered data-testid="dashboard-schedules">
      {sortSchedulesByHealth(schedules, failing).map((schedule) => {
        const health = scheduleHealth(schedule, failing);
        const last = lastRunOf(schedule);
        const lastAt = last?.completionTimestamp ?? last?.startTimestamp;
        const nextRun = typeof schedule.status?.nextRun === 'string' ? schedule.status.nextRun : undefined;
        const parts = [fmt(words.cron, { cron: schedule.spec.schedule })];
        if (!schedule.spec.paused && nextRun && Date.parse(nextRun) > now) parts.push(fmt(words.next, { when: formatUntil(nextRun, now) }));
        parts.push(
          !last
            ? words.neverRan
            : lastAt
              ? fmt(words.lastRun, { phase: last.phase ?? t.common.none, age: formatAge(lastAt, now) })
              : fmt(words.lastRunNoTime, { phase: last.phase ?? t.common.none }),
        );
        return (
          <ListItem key={schedule.metadata.name} data-testid="schedule-health" data-name={schedule.metadata.name} data-health={health}>
            <div style={{ display: 'flex', flexWrap: 'wrap', gap: '0.5rem', alignItems: 'center' }}>
              <strong>{schedule.metadata.name}</strong>
              <Label isCompact color={healthColor(health)}>
                {words.health[health]}
              </Label>
            </div>
            <small>{parts.join(' · ')}</small>
          </ListItem>
        );
      })}
    </List>
  );
}
