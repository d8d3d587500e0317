// Items of a backup the signed-in user may not list (Kubernetes RBAC), counted per resource:
// the gateway never names them, and the console says how many and why.
import { Alert, List, ListItem } from '@patternfly/react-core';
import type { HiddenItems } from '../api/types';
import { t } from '../strings';

export function HiddenNotice({ hidden }: { hidden?: HiddenItems[] }) {
  if (!hidden || hidden.length === 0) return null;
  const h = t.manifests.hidden;
  return (
    <Alert variant="info" isInline title={h.title} data-testid="hidden-items">
      <p>{h.body}</p>
      <List>
        {hidden.map((line) => (
          <ListItem key={`${line.group}/${line.resource}/${line.namespace ?? ''}`} data-testid="hidden-item">
            {line.message}
          </ListItem>
        ))}
      </List>
    </Alert>
  );
}
