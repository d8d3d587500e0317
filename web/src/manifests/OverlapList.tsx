// Running operations a new backup or restore would wait on, each with its overlapping items
// (expandable); the dry-run and the restore preview show it, and the detail pages of a created
// backup or restore that has not started yet (see WaitingOn).
import { Content, ExpandableSection, List, ListItem, Title } from '@patternfly/react-core';
import type { OperationOverlap } from '../api/types';
import { fmt, t } from '../strings';
import { identityText } from './contents';
import { overlapTitle } from './preview';

/** `waiting`: the operation exists and waits (titles say "Waiting on …", not "Would wait on …"). */
export function OverlapList({ overlaps, waiting = false }: { overlaps: OperationOverlap[]; waiting?: boolean }) {
  const o = t.manifests.overlaps;
  if (overlaps.length === 0) {
    return (
      <Content component="p" data-testid="overlaps-none">
        {o.none}
      </Content>
    );
  }
  return (
    <section data-testid="overlaps">
      {/* A waiting operation's list sits under its own "Waiting on running operations". */}
      {!waiting && <Title headingLevel="h3">{o.title}</Title>}
      {overlaps.map((overlap) => (
        <ExpandableSection key={overlap.operation} toggleText={overlapTitle(overlap, waiting)} data-testid="overlap" data-operation={overlap.operation}>
          <List>
            {overlap.items.map((item) => (
              <ListItem key={identityText(item)} data-testid="overlap-item">
                <code>{identityText(item)}</code>
              </ListItem>
            ))}
          </List>
          {overlap.truncated && <Content component="small">{fmt(o.truncated, { count: overlap.total - overlap.items.length })}</Content>}
        </ExpandableSection>
      ))}
    </section>
  );
}
