// The operations table of the history page: one row per operation (kind, name, phase,
// requester, created, duration, items, deleted marker); a row expands to its timeline.
import { Fragment, useState } from 'react';
import { Button, Label, Tooltip } from '@patternfly/react-core';
import AngleDownIcon from '@patternfly/react-icons/dist/esm/icons/angle-down-icon';
import AngleRightIcon from '@patternfly/react-icons/dist/esm/icons/angle-right-icon';
import { ExpandableRowContent, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { Link } from 'react-router';
import type { Operation } from '../api/types';
import { PhaseLabel } from '../components/PhaseLabel';
import { formatAge, formatTimestamp } from '../format';
import { fmt, t } from '../strings';
import { OperationTimeline } from './OperationTimeline';
import { durationText, itemsText, kindLabel, operationLink, parentLink } from './operations';

export function HistoryTable({ namespace, operations, now }: { namespace: string; operations: Operation[]; now: number }) {
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const words = t.history.table;
  const toggle = (id: string) =>
    setExpanded((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <Table aria-label={words.caption} gridBreakPoint="grid-md" variant="compact" data-testid="history-table">
      <Thead>
        <Tr>
          <Th screenReaderText={words.details} />
          <Th modifier="wrap">{words.kind}</Th>
          <Th modifier="wrap">{words.name}</Th>
          <Th modifier="wrap">{words.phase}</Th>
          <Th modifier="wrap">{words.requester}</Th>
          <Th modifier="wrap">{words.created}</Th>
          <Th modifier="wrap">{words.duration}</Th>
          <Th modifier="wrap">{words.items}</Th>
        </Tr>
      </Thead>
      {operations.map((operation) => {
        const isExpanded = expanded.has(operation.id);
        const link = operationLink(namespace, operation);
        const parent = operation.parentName ? parentLink(namespace, operation) : null;
        return (
          <Tbody key={operation.id} isExpanded={isExpanded}>
            <Tr data-testid="history-row" data-operation-id={operation.id} data-name={operation.name}>
              <Td dataLabel={words.details} style={{ width: '3rem' }}>
                <Button
                  variant="plain"
                  size="sm"
                  aria-label={fmt(words.expand, { name: operation.name })}
                  aria-expanded={isExpanded}
                  aria-controls={`history-timeline-${operation.id}`}
                  onClick={() => toggle(operation.id)}
                  icon={isExpanded ? <AngleDownIcon /> : <AngleRightIcon />}
                  data-testid="history-expand"
                />
              </Td>
              <Td dataLabel={words.kind}>{kindLabel(operation.kind)}</Td>
              <Td dataLabel={words.name}>
                {link ? <Link to={link}>{operation.name}</Link> : <span>{operation.name}</span>}
                {operation.deletedAt && (
                  <Fragment>
                    {' '}
                    <Tooltip content={fmt(words.deletedAt, { when: formatTimestamp(operation.deletedAt) })}>
                      <Label isCompact variant="outline" color="grey" data-testid="history-deleted" tabIndex={0}>
                        {words.deleted}
                      </Label>
                    </Tooltip>
                  </Fragment>
                )}
                {operation.parentName && (
                  <div style={{ fontSize: '0.85em', color: 'var(--pf-t--global--text--color--subtle)' }}>
                    {parent ? <Link to={parent}>{fmt(words.from, { parent: operation.parentName })}</Link> : fmt(words.from, { parent: operation.parentName })}
                  </div>
                )}
              </Td>
              <Td dataLabel={words.phase}>
                <PhaseLabel phase={operation.phase} />
              </Td>
              <Td dataLabel={words.requester}>{operation.requester ?? (operation.kind === 'schedule_run' ? words.scheduled : t.common.none)}</Td>
              <Td dataLabel={words.created}>
                <time dateTime={operation.createdAt} title={formatTimestamp(operation.createdAt)}>
                  {fmt(words.ago, { age: formatAge(operation.createdAt, now) })}
                </time>
              </Td>
              <Td dataLabel={words.duration}>{durationText(operation, now)}</Td>
              <Td dataLabel={words.items}>{itemsText(operation)}</Td>
            </Tr>
            {isExpanded && (
              <Tr isExpanded id={`history-timeline-${operation.id}`}>
                <Td colSpan={8}>
                  <ExpandableRowContent>
                    <OperationTimeline namespace={namespace} operationId={operation.id} />
                  </ExpandableRowContent>
                </Td>
              </Tr>
            )}
          </Tbody>
        );
      })}
    </Table>
  );
}
