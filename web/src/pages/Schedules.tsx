// The namespace's schedules, live: cron (in plain words), paused or active, last and next run,
// health of the newest run (failing ones highlighted, also from the coverage answer), pause /
// resume without confirmation, deletion with confirmation; a row expands to its recent runs,
// template and "copy as" of its actions.
import { Fragment, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import {
  Alert,
  Button,
  CodeBlock,
  CodeBlockCode,
  Content,
  Flex,
  Label,
  List,
  ListItem,
  PageSection,
  Title,
  Tooltip,
} from '@patternfly/react-core';
import { ExpandableRowContent, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import PauseIcon from '@patternfly/react-icons/dist/esm/icons/pause-icon';
import PlayIcon from '@patternfly/react-icons/dist/esm/icons/play-icon';
import { api } from '../api/client';
import type { NonAdminSchedule } from '../api/types';
import { useDeleteDialog } from '../components/ConfirmDeleteModal';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { CreateLink, ListBody, RowDeleteButton, Timestamped } from '../components/ListPage';
import { ListHeading } from '../components/PageHeading';
import { PhaseLabel } from '../components/PhaseLabel';
import { formatAge, formatTimestamp } from '../format';
import { useLiveList, useLoad, useNow } from '../hooks';
import { may, useNamespaceAccess } from '../namespaces';
import { scheduleDeleteAction, schedulePauseAction } from '../restores/actions';
import { listAll } from '../lib/listAll';
import { describeCron } from '../schedules/cron';
import {
  isUnhealthy,
  lastRunTime,
  mayPatchSchedules,
  newestRun,
  nextRunText,
  nextRunTime,
  pausePatch,
  scheduleHealth,
  scheduleProblem,
  scheduleStatus,
  type ScheduleHealth,
} from '../schedules/scheduleStatus';
import { fmt, t } from '../strings';
import { toYaml } from '../yaml';

const HEALTH_COLOR: Record<ScheduleHealth, 'green' | 'red' | 'orange' | 'blue' | 'grey'> = {
  healthy: 'green',
  failing: 'red',
  partial: 'orange',
  running: 'blue',
  paused: 'grey',
  invalid: 'red',
  noRuns: 'grey',
};

/** Highlight of a failing schedule's row: a red bar on its left edge. */
const PROBLEM_ROW = { boxShadow: 'inset 4px 0 0 var(--pf-t--global--border--color--status--danger--default, #c9190b)' };

/** A key that changes when any schedule's newest run changes (to re-read coverage) (pure). */
export function runsSignature(items: NonAdminSchedule[] | undefined): string {
  return (items ?? [])
    .map((item) => `${item.metadata.name}:${newestRun(item)?.name ?? ''}:${newestRun(item)?.phase ?? ''}`)
    .sort()
    .join('|');
}

export default function Schedules() {
  const { namespace = '' } = useParams();
  const l = t.schedules.list;
  const access = useNamespaceAccess(namespace);
  const canCreate = may(access, 'schedules', 'create');
  const canDelete = may(access, 'schedules', 'delete');
  const canPatch = mayPatchSchedules(access);
  const live = useLiveList(namespace, 'schedules', (signal) => listAll(namespace, 'schedules', signal).then((all) => all.items));
  const signature = runsSignature(live.data);
  const coverage = useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/coverage', { path: { namespace }, signal }), `${namespace}/${signature}`);
  const failing = coverage.data?.failingSchedules ?? [];
  const now = useNow();
  const deletion = useDeleteDialog(t.schedules.delete, (name) => scheduleDeleteAction(namespace, name), live.reload);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [busy, setBusy] = useState<Set<string>>(new Set());
  const [actionError, setActionError] = useState<unknown>(null);
  const base = `/ns/${encodeURIComponent(namespace)}`;
  const rows = useMemo(() => [...(live.data ?? [])].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)), [live.data]);
  const unhealthy = rows.filter((row) => isUnhealthy(scheduleHealth(row, failing)));

  const togglePause = async (schedule: NonAdminSchedule) => {
    const name = schedule.metadata.name;
    setBusy((current) => new Set(current).add(name));
    setActionError(null);
    try {
      await api.patch('/api/v1/namespaces/{namespace}/schedules/{name}', { path: { namespace, name }, body: pausePatch(!schedule.spec.paused) });
    } catch (error) {
      setActionError(error);
    } finally {
      setBusy((current) => {
        const next = new Set(current);
        next.delete(name);
        return next;
      });
      live.reload();
    }
  };

  const createButton = <CreateLink to={`${base}/schedules/new`} allowed={canCreate} deniedReason={l.noCreate} label={l.create} testId="schedule-create" />;

  return (
    <PageSection data-testid="schedules-page">
      <ListHeading title={l.title} stream={live.stream} intro={l.intro} action={createButton} />
      <ListBody list={live} isEmpty={rows.length === 0} loadingLabel={l.loading} empty={{ title: l.empty, body: l.emptyBody, testId: 'schedules-empty', action: createButton }}>
        {actionError ? (
          <div data-testid="schedule-action-error">
            <ErrorAlert error={actionError} />
          </div>
        ) : null}
        {unhealthy.length > 0 && (
          <Alert variant="danger" isInline title={fmt(l.failingAlert, { count: unhealthy.length, names: unhealthy.map((row) => row.metadata.name).join(', ') })} data-testid="schedules-failing" />
        )}
        {coverage.error ? <Alert variant="warning" isInline isPlain title={l.coverageFailed} /> : null}
        <Table aria-label={fmt(l.label, { namespace })} gridBreakPoint="grid-lg" variant="compact" data-testid="schedule-table">
          <Thead>
            <Tr>
              <Th screenReaderText={t.schedules.list.details} />
              <Th>{t.common.name}</Th>
              <Th modifier="wrap">{l.cron}</Th>
              <Th modifier="wrap">{l.state}</Th>
              <Th modifier="wrap">{l.lastRun}</Th>
              <Th modifier="wrap">{l.nextRun}</Th>
              <Th modifier="wrap">{l.health}</Th>
              <Th screenReaderText={t.common.actions} />
            </Tr>
          </Thead>
          {rows.map((schedule, rowIndex) => {
            const name = schedule.metadata.name;
            const health = scheduleHealth(schedule, failing);
            const run = newestRun(schedule);
            const last = lastRunTime(schedule);
            const next = nextRunTime(schedule);
            const isOpen = expanded.has(name);
            const paused = !!schedule.spec.paused;
            const problem = scheduleProblem(schedule);
            const status = scheduleStatus(schedule);
            return (
              <Tbody key={name} isExpanded={isOpen}>
                <Tr data-testid="schedule-row" data-name={name} data-health={health} style={isUnhealthy(health) ? PROBLEM_ROW : undefined}>
                  <Td
                    expand={{
                      rowIndex,
                      isExpanded: isOpen,
                      onToggle: () =>
                        setExpanded((current) => {
                          const nextSet = new Set(current);
                          if (nextSet.has(name)) nextSet.delete(name);
                          else nextSet.add(name);
                          return nextSet;
                        }),
                      expandId: `schedule-expand-${rowIndex}`,
                    }}
                    data-testid="schedule-expand"
                  />
                  <Td dataLabel={t.common.name}>{name}</Td>
                  <Td dataLabel={l.cron} data-testid="schedule-cron">
                    <code style={{ whiteSpace: 'nowrap' }}>{schedule.spec.schedule}</code>
                    <div>
                      <small>{describeCron(schedule.spec.schedule)}</small>
                    </div>
                  </Td>
                  <Td dataLabel={l.state} data-testid="schedule-state">
                    <Label isCompact color={paused ? 'grey' : 'green'}>
                      {paused ? l.paused : l.active}
                    </Label>
                  </Td>
                  <Td dataLabel={l.lastRun} data-testid="schedule-last-run">
                    {last ? (
                      <Timestamped at={last}>{fmt(l.ago, { age: formatAge(last, now) })}</Timestamped>
                    ) : (
                      l.never
                    )}
                  </Td>
                  <Td dataLabel={l.nextRun} data-testid="schedule-next-run">
                    {next ? (
                      <Timestamped at={next}>{nextRunText(next, now)}</Timestamped>
                    ) : (
                      t.common.none
                    )}
                  </Td>
                  <Td dataLabel={l.health}>
                    <Label isCompact color={HEALTH_COLOR[health]} data-testid="schedule-health">
                      {t.schedules.health[health]}
                    </Label>
                    {run && (
                      <div>
                        <Link to={`${base}/backups/${encodeURIComponent(run.name)}`} data-testid="schedule-run-link" aria-label={fmt(l.runLink, { name: run.name })}>
                          <small>{run.name}</small>
                        </Link>
                      </div>
                    )}
                    {problem && (
                      <div>
                        <small>{fmt(l.problem, { message: problem })}</small>
                      </div>
                    )}
                  </Td>
                  <Td isActionCell>
                    <Flex flexWrap={{ default: 'nowrap' }} spaceItems={{ default: 'spaceItemsXs' }}>
                      <Tooltip content={fmt(paused ? l.resumeLabel : l.pauseLabel, { name })}>
                        <Button
                          variant="plain"
                          aria-label={fmt(paused ? l.resumeLabel : l.pauseLabel, { name })}
                          icon={paused ? <PlayIcon /> : <PauseIcon />}
                          onClick={() => void togglePause(schedule)}
                          isLoading={busy.has(name)}
                          isAriaDisabled={busy.has(name) || !canPatch}
                          data-testid="schedule-pause"
                        />
                      </Tooltip>
                      <RowDeleteButton label={fmt(l.deleteLabel, { name })} allowed={canDelete} deniedReason={l.noDelete} onClick={() => deletion.ask(name)} testId="schedule-delete" />
                    </Flex>
                  </Td>
                </Tr>
                <Tr isExpanded={isOpen}>
                  <Td colSpan={8}>
                    {isOpen && (
                      <ExpandableRowContent>
                        <Fragment>
                          <div data-testid="schedule-details">
                            <Title headingLevel="h3" size="md">
                              {l.recentRuns}
                            </Title>
                            {(status.recentBackups ?? []).length ? (
                              <List isPlain>
                                {(status.recentBackups ?? []).map((recent) => (
                                  <ListItem key={recent.name}>
                                    <PhaseLabel phase={recent.phase} />{' '}
                                    <Link to={`${base}/backups/${encodeURIComponent(recent.name)}`}>{recent.name}</Link>{' '}
                                    <small>{formatTimestamp(recent.startTimestamp)}</small>
                                  </ListItem>
                                ))}
                              </List>
                            ) : (
                              <Content component="p">{l.never}</Content>
                            )}
                            <Title headingLevel="h3" size="md">
                              {l.template}
                            </Title>
                            <CodeBlock>
                              <CodeBlockCode>{toYaml(schedule.spec.template.backupSpec)}</CodeBlockCode>
                            </CodeBlock>
                            <CopyAs title={paused ? l.copyResume : l.copyPause} action={schedulePauseAction(namespace, name, !paused)} />
                          </div>
                        </Fragment>
                      </ExpandableRowContent>
                    )}
                  </Td>
                </Tr>
              </Tbody>
            );
          })}
        </Table>
      </ListBody>
      {deletion.dialog}
    </PageSection>
  );
}
