// The owner graph of a completed backup (`GET …/graph`) as an indented tree: owners, and what
// they own below them; how many items stand alone; owner references to objects not in the backup.
import { useMemo } from 'react';
import { Content, ExpandableSection, Label, List, ListItem } from '@patternfly/react-core';
import { api } from '../api/client';
import { ErrorAlert } from '../components/ErrorAlert';
import { fmt, t } from '../strings';
import { keyTitle, ownerTree } from './graph';
import { manifestNotice, useManifestRead } from './ManifestRead';

/** `running`: the backup may still change; `completed`: it finished with data (a manifest is expected). */
export function OwnerGraphView({ namespace, name, running, completed }: { namespace: string; name: string; running: boolean; completed: boolean }) {
  const g = t.manifests.graph;
  const read = useManifestRead(
    (signal) => api.get('/api/v1/namespaces/{namespace}/backups/{name}/graph', { path: { namespace, name }, signal }),
    `${namespace}/${name}/graph`,
    !running,
    completed,
  );
  const tree = useMemo(() => (read.data ? ownerTree(read.data) : null), [read.data]);
  const notice = manifestNotice(read, running);
  if (notice || !tree || !read.data) return <div data-testid="graph-view">{notice}</div>;
  const missing = read.data.missingOwners ?? [];
  return (
    <div data-testid="graph-view">
      <Content component="p">{g.intro}</Content>
      {read.error ? <ErrorAlert error={read.error} onRetry={read.reload} /> : null}
      {tree.rows.length === 0 ? (
        <Content component="p" data-testid="graph-no-edges">
          {g.noEdges}
        </Content>
      ) : (
        <ul aria-label={g.treeLabel} className="nac-owner-tree" data-testid="graph-tree">
          {tree.rows.map((row, index) => (
            <li
              key={`${row.key}/${index}`}
              style={{ paddingInlineStart: `${row.depth * 1.5}rem` }}
              data-testid="graph-row"
              data-key={row.key}
              data-depth={row.depth}
            >
              {row.depth > 0 ? <span aria-hidden="true">└ </span> : null}
              <code>{keyTitle(row.key)}</code>{' '}
              {row.children > 0 && !row.repeated && !row.cycle ? (
                <Label isCompact color="blue">
                  {fmt(g.owns, { count: row.children })}
                </Label>
              ) : null}
              {row.repeated ? <small>({g.alsoShown})</small> : null}
              {row.cycle ? <small>({g.cycle})</small> : null}
            </li>
          ))}
        </ul>
      )}
      {tree.truncated && (
        <Content component="small" data-testid="graph-truncated">
          {fmt(g.truncated, { count: tree.rows.length })}
        </Content>
      )}
      {tree.standalone > 0 && (
        <Content component="p" data-testid="graph-standalone">
          {fmt(g.standalone, { count: tree.standalone })}
        </Content>
      )}
      {missing.length > 0 && (
        <ExpandableSection toggleText={fmt(g.missingTitle, { count: missing.length })} data-testid="graph-missing">
          <List isPlain>
            {missing.map((reference) => (
              <ListItem key={`${reference.dependent}/${reference.ownerUid}`}>{fmt(g.missingItem, { dependent: keyTitle(reference.dependent), uid: reference.ownerUid })}</ListItem>
            ))}
          </List>
        </ExpandableSection>
      )}
    </div>
  );
}
