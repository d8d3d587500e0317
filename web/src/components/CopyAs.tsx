// "Copy as YAML / curl / nac CLI" for an action, so anything done in the console can be
// repeated from a terminal or a CI script.
import { useState } from 'react';
import { ClipboardCopy, ClipboardCopyVariant, ExpandableSection, Tab, Tabs, TabTitleText } from '@patternfly/react-core';
import { nsPath } from '../api/client';
import type { TenantResource } from '../api/types';
import { toYaml } from '../yaml';
import { t } from '../strings';

export interface CopyableAction {
  /** HTTP method and API path (`/api/v1/...`). */
  method: string;
  path: string;
  /** JSON body, if any. */
  body?: unknown;
  /** The Kubernetes object, for YAML (omit when the action is not a create). */
  object?: unknown;
  /** The equivalent `nac` command line. */
  cli?: string;
}

/** The deletion of one object: how to copy it, and what it deletes (sent by ConfirmDeleteModal). */
export interface DeleteAction extends CopyableAction {
  method: 'DELETE';
  target: { resource: TenantResource; namespace: string; name: string };
}

/** The `DELETE /api/v1/namespaces/{namespace}/{resource}/{name}` of an object. */
export function deleteActionOf(resource: TenantResource, namespace: string, name: string, cli?: string): DeleteAction {
  return { method: 'DELETE', path: nsPath(namespace, resource, name), ...(cli ? { cli } : {}), target: { resource, namespace, name } };
}

/** The curl command of an action (pure; the token comes from $NAC_TOKEN). */
export function curlCommand(action: CopyableAction, origin: string): string {
  const parts = [`curl -sS -X ${action.method}`, `-H "Authorization: Bearer $NAC_TOKEN"`];
  if (action.body !== undefined) {
    parts.push(`-H 'Content-Type: application/json'`);
    parts.push(`--data '${JSON.stringify(action.body).replace(/'/g, `'\\''`)}'`);
  }
  parts.push(`'${origin}${action.path}'`);
  return parts.join(' ');
}

export function CopyAs({ action, title }: { action: CopyableAction; title: string }) {
  const [expanded, setExpanded] = useState(false);
  const [tab, setTab] = useState<string | number>(action.object ? 'yaml' : 'curl');
  const origin = typeof window === 'undefined' ? '' : window.location.origin;
  return (
    <ExpandableSection toggleText={title} isExpanded={expanded} onToggle={(_e, value) => setExpanded(value)} data-testid="copy-as">
      <Tabs activeKey={tab} onSelect={(_e, key) => setTab(key)} aria-label={title} isBox>
        {action.object !== undefined && (
          <Tab eventKey="yaml" title={<TabTitleText>YAML</TabTitleText>}>
            <ClipboardCopy isCode isReadOnly variant={ClipboardCopyVariant.expansion} isExpanded hoverTip={t.common.copy} clickTip={t.common.copied}>
              {toYaml(action.object)}
            </ClipboardCopy>
          </Tab>
        )}
        <Tab eventKey="curl" title={<TabTitleText>curl</TabTitleText>}>
          <ClipboardCopy isCode isReadOnly variant={ClipboardCopyVariant.expansion} isExpanded hoverTip={t.common.copy} clickTip={t.common.copied}>
            {curlCommand(action, origin)}
          </ClipboardCopy>
        </Tab>
        {action.cli ? (
          <Tab eventKey="cli" title={<TabTitleText>nac CLI</TabTitleText>}>
            <ClipboardCopy isCode isReadOnly variant={ClipboardCopyVariant.expansion} isExpanded hoverTip={t.common.copy} clickTip={t.common.copied}>
              {action.cli}
            </ClipboardCopy>
          </Tab>
        ) : undefined}
      </Tabs>
    </ExpandableSection>
  );
}
