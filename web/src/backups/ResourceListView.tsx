// The resources a finished backup holds (`?artifact=resource-list`: "group/version/Kind" → names),
// filterable, fetched when the tab opens.
import { useMemo, useState } from 'react';
import { Alert, Spinner, TextInput } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { ErrorAlert } from '../components/ErrorAlert';
import { useLoad } from '../hooks';
import { fmt, t } from '../strings';
import { artifactNotReady, fetchResourceList } from '../lib/artifacts';

/** Kinds and names matching `filter` (case-insensitive, on kind or name), kinds sorted (pure). */
export function filterResourceList(list: Record<string, string[]> | null | undefined, filter: string): [string, string[]][] {
  const needle = filter.trim().toLowerCase();
  return Object.entries(list ?? {})
    .map(([kind, names]): [string, string[]] => [kind, kind.toLowerCase().includes(needle) ? names : names.filter((name) => name.toLowerCase().includes(needle))])
    .filter(([, names]) => names.length > 0)
    .sort(([a], [b]) => a.localeCompare(b));
}

export function ResourceListView({ namespace, name, canDownload, running }: { namespace: string; name: string; canDownload: boolean | undefined; running: boolean }) {
  const r = t.backups.resources;
  const loaded = useLoad<Record<string, string[]> | null>(
    (signal) => (canDownload && !running ? fetchResourceList(namespace, name, signal) : Promise.resolve(null)),
    `${namespace}/${name}/resource-list/${canDownload}/${running}`,
  );
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => filterResourceList(loaded.data, filter), [loaded.data, filter]);
  if (canDownload === undefined) return <Spinner size="lg" aria-label={t.app.loading} />;
  if (!canDownload) return <Alert variant="warning" isInline title={t.backups.logs.noDownload} />;
  if (running || artifactNotReady(loaded.error)) return <Alert variant="info" isInline title={r.notYet} />;
  if (loaded.error) return <ErrorAlert error={loaded.error} onRetry={loaded.reload} />;
  if (loaded.loading && !loaded.data) return <Spinner size="lg" aria-label={t.app.loading} />;
  const all = Object.values(loaded.data ?? {});
  if (all.length === 0) return <Alert variant="info" isInline isPlain title={r.none} />;
  return (
    <div data-testid="resource-list">
      <p>{fmt(r.count, { count: all.reduce((sum, names) => sum + names.length, 0), kinds: all.length })}</p>
      <TextInput type="search" value={filter} onChange={(_event, value) => setFilter(value)} aria-label={r.filter} placeholder={r.filter} />
      <Table aria-label={r.title} variant="compact" gridBreakPoint="grid-md">
        <Thead>
          <Tr>
            <Th>{r.kind}</Th>
            <Th>{r.objects}</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map(([kind, names]) => (
            <Tr key={kind}>
              <Td dataLabel={r.kind}>
                <code>{kind}</code>
              </Td>
              <Td dataLabel={r.objects}>{names.join(', ')}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </div>
  );
}
