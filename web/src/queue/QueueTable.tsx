// My running and waiting backups and restores: state, position and the estimate (start in,
// finish in, and how many past runs it rests on), counting down between refreshes.
import { Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { Link } from 'react-router';
import type { QueueItem } from '../api/types';
import { fmt, t } from '../strings';
import { describeEta, positionText, sortQueueItems } from './eta';

/** Console path of a queue item's object. */
export function queueItemLink(item: QueueItem): string {
  const section = item.kind === 'restore' ? 'restores' : 'backups';
  return `/ns/${encodeURIComponent(item.namespace)}/${section}/${encodeURIComponent(item.name)}`;
}

export function QueueTable({
  items,
  namespace,
  fetchedAt,
  now,
  showNamespace = false,
  testId = 'queue-table',
}: {
  items: QueueItem[];
  namespace: string;
  fetchedAt: number;
  now: number;
  showNamespace?: boolean;
  testId?: string;
}) {
  const words = t.queue.table;
  const kinds: Record<string, string> = t.queue.kinds;
  return (
    <Table aria-label={fmt(words.caption, { namespace })} variant="compact" gridBreakPoint="grid-md" data-testid={testId}>
      <Thead>
        <Tr>
          <Th>{words.kind}</Th>
          <Th>{words.name}</Th>
          {showNamespace && <Th>{words.namespace}</Th>}
          <Th>{words.state}</Th>
          <Th>{words.position}</Th>
          <Th>{words.eta}</Th>
        </Tr>
      </Thead>
      <Tbody>
        {(showNamespace ? items : sortQueueItems(items)).map((item) => {
          const eta = describeEta(item, fetchedAt, now);
          return (
            <Tr key={`${item.namespace}/${item.kind}/${item.name}`} data-testid="queue-item" data-name={item.name} data-kind={item.kind} data-state={item.state}>
              <Td dataLabel={words.kind}>{kinds[item.kind] ?? item.kind}</Td>
              <Td dataLabel={words.name}>
                <Link to={queueItemLink(item)}>{item.name}</Link>
              </Td>
              {showNamespace && <Td dataLabel={words.namespace}>{item.namespace}</Td>}
              <Td dataLabel={words.state}>
                <Label isCompact color={item.state === 'running' ? 'blue' : 'teal'} data-testid="queue-state">
                  {item.state === 'running' ? t.queue.states.running : t.queue.states.pending}
                </Label>
              </Td>
              <Td dataLabel={words.position} data-testid="queue-position">
                {positionText(item)}
              </Td>
              <Td dataLabel={words.eta} data-testid="queue-eta">
                {eta.hasEstimate ? (
                  <>
                    {[eta.start, eta.finish].filter(Boolean).join(' · ')}
                    {eta.basis && (
                      <div style={{ fontSize: '0.85em', color: 'var(--pf-t--global--text--color--subtle)' }} data-testid="queue-eta-basis">
                        {eta.basis}
                      </div>
                    )}
                  </>
                ) : (
                  <span title={t.queue.eta.noneHelp}>{eta.basis}</span>
                )}
              </Td>
            </Tr>
          );
        })}
      </Tbody>
    </Table>
  );
}
