// A restore's Velero log (GET …/restores/{name}/logs?artifact=log, text): loaded once the restore
// has finished, searchable (matches highlighted), filterable by level, downloadable.
import { useMemo, useState } from 'react';
import {
  Alert,
  FormSelect,
  FormSelectOption,
  SearchInput,
  Spinner,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
} from '@patternfly/react-core';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { DownloadLink, MarkedText, useLogText } from '../components/LogText';
import { artifactPath } from '../lib/artifacts';
import { searchLog, type LevelFilter } from '../lib/logSearch';
import { fmt, t } from '../strings';
import { restoreLogsAction } from './actions';

/** Most lines rendered at once (the search narrows a longer log). */
export const MAX_RENDERED_LINES = 3000;

export function RestoreLogPanel({ namespace, name, finished, canDownload }: { namespace: string; name: string; finished: boolean; canDownload: boolean }) {
  const l = t.restores.logs;
  const path = artifactPath(namespace, 'restores', name, 'log');
  const log = useLogText(namespace, 'restores', name, finished && canDownload);
  const [query, setQuery] = useState('');
  const [level, setLevel] = useState<LevelFilter>('all');
  const found = useMemo(() => searchLog(log.data ?? '', query, level), [log.data, query, level]);

  let body;
  if (!canDownload) body = <Alert variant="warning" isInline title={t.restores.detail.logsNotAllowed} />;
  else if (!finished) body = <Alert variant="info" isInline isPlain title={t.restores.detail.logsNotReady} data-testid="logs-not-ready" />;
  else if (log.error) body = <ErrorAlert error={log.error} onRetry={log.reload} />;
  else if (log.loading && log.data == null) body = <Spinner size="lg" aria-label={l.loading} />;
  else {
    const shown = found.lines.slice(0, MAX_RENDERED_LINES);
    body = (
      <>
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <SearchInput
                aria-label={l.search}
                placeholder={l.search}
                value={query}
                onChange={(_event, value) => setQuery(value)}
                onClear={() => setQuery('')}
                data-testid="log-search"
              />
            </ToolbarItem>
            <ToolbarItem>
              <FormSelect aria-label={l.level} value={level} onChange={(_event, value) => setLevel(value as LevelFilter)} data-testid="log-level">
                <FormSelectOption value="all" label={l.levelAll} />
                <FormSelectOption value="warning" label={l.levelWarning} />
                <FormSelectOption value="error" label={l.levelError} />
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem alignItems="center">
              <span aria-live="polite" data-testid="log-count">
                {fmt(l.matches, { shown: found.lines.length, total: found.total })}
              </span>
            </ToolbarItem>
            <ToolbarItem>
              <DownloadLink href={path} fileName={`${name}.log`} label={l.download} testId="log-download" />
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
        {found.total === 0 ? (
          <Alert variant="info" isInline isPlain title={l.empty} />
        ) : found.lines.length === 0 ? (
          <Alert variant="info" isInline isPlain title={l.noMatch} data-testid="log-no-match" />
        ) : (
          <pre className="nac-log-viewer" tabIndex={0} role="region" aria-label={l.region} data-testid="log-text">
            {shown.map((line) => (
              <div key={line.number} data-level={line.level}>
                <span aria-hidden="true" style={{ opacity: 0.5, userSelect: 'none' }}>
                  {String(line.number).padStart(4, ' ')}{' '}
                </span>
                <MarkedText text={line.text} ranges={line.matches} />
              </div>
            ))}
          </pre>
        )}
        {found.lines.length > MAX_RENDERED_LINES && <small>{fmt(l.truncated, { count: MAX_RENDERED_LINES })}</small>}
      </>
    );
  }
  return (
    <div data-testid="restore-logs">
      {body}
      <CopyAs title={t.restores.detail.copyLogs} action={restoreLogsAction(namespace, name)} />
    </div>
  );
}
