// The deletion actions of a backup (seed 003), from its conditions: each action's outcome in the
// order they run, and — while a failing action holds the deletion — what it waits on.
import { Alert, Content, Label, Title } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { formatTimestamp } from '../format';
import { fmt, t } from '../strings';
import type { Tone } from './backupStatus';
import { blockingAction, type DeletionActionOutcome } from './deletionActions';

const TONE_COLOR: Record<Tone, 'green' | 'blue' | 'orange' | 'red' | 'grey'> = {
  success: 'green',
  info: 'blue',
  warning: 'orange',
  danger: 'red',
  custom: 'grey',
};

/** "The deletion waits on deletion action X: …" while a Failed action holds it, else nothing. */
export function DeletionWaiting({ actions }: { actions: DeletionActionOutcome[] }) {
  const blocking = blockingAction(actions);
  if (!blocking) return null;
  return (
    <p data-testid="deletion-waiting">
      <strong>{fmt(t.manifests.deletionActions.waiting, { name: blocking.name, message: blocking.message || blocking.reason })}</strong>
    </p>
  );
}

export function DeletionActionsView({ name, actions }: { name: string; actions: DeletionActionOutcome[] }) {
  const d = t.manifests.deletionActions;
  if (actions.length === 0) return null;
  return (
    <section data-testid="deletion-actions">
      <Title headingLevel="h2" size="lg">
        {d.title}
      </Title>
      <Content component="p">{d.intro}</Content>
      {blockingAction(actions) && (
        <Alert variant="danger" isInline isPlain title={<DeletionWaiting actions={actions} />} />
      )}
      <Table aria-label={fmt(d.tableLabel, { name })} variant="compact" gridBreakPoint="grid-md">
        <Thead>
          <Tr>
            <Th>{d.action}</Th>
            <Th>{d.status}</Th>
            <Th>{d.reason}</Th>
            <Th>{d.message}</Th>
            <Th>{d.time}</Th>
          </Tr>
        </Thead>
        <Tbody>
          {actions.map((action) => (
            <Tr key={action.name} data-testid="deletion-action" data-name={action.name} data-reason={action.reason}>
              <Td dataLabel={d.action}>
                <code>{action.name}</code>
              </Td>
              <Td dataLabel={d.status}>{action.status}</Td>
              <Td dataLabel={d.reason}>
                <Label isCompact color={TONE_COLOR[action.tone]}>
                  {action.reason || t.common.none}
                </Label>
              </Td>
              <Td dataLabel={d.message}>{action.message || t.common.none}</Td>
              <Td dataLabel={d.time}>{formatTimestamp(action.time)}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </section>
  );
}
