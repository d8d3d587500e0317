// A backup's Velero log: fetched as text, searchable (matches marked, n of M, jump between them),
// re-fetched while the backup runs when "follow" is on, and downloadable.
import { useEffect, useMemo, useRef, useState } from 'react';
import {
  Alert,
  Button,
  Spinner,
  Switch,
  TextInput,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
  Tooltip,
} from '@patternfly/react-core';
import AngleDownIcon from '@patternfly/react-icons/dist/esm/icons/angle-down-icon';
import AngleUpIcon from '@patternfly/react-icons/dist/esm/icons/angle-up-icon';
import SyncAltIcon from '@patternfly/react-icons/dist/esm/icons/sync-alt-icon';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { DownloadLink, MarkedText, useLogText } from '../components/LogText';
import { artifactNotReady, artifactPath } from '../lib/artifacts';
import { findMatches, lineCount, stepMatch } from '../lib/logSearch';
import { fmt, t } from '../strings';
import { logsAction } from './actions';

/** How often "follow" fetches the log again while the backup runs. */
export const FOLLOW_INTERVAL_MS = 5000;

export interface LogViewerProps {
  namespace: string;
  name: string;
  /** Whether the backup may still change (follow mode only then). */
  running: boolean;
  /** NamespaceAccess.canDownload. */
  canDownload: boolean | undefined;
}

export function LogViewer({ namespace, name, running, canDownload }: LogViewerProps) {
  const l = t.backups.logs;
  const path = artifactPath(namespace, 'backups', name, 'log');
  const log = useLogText(namespace, 'backups', name, !!canDownload);
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState('');
  const [picked, setPicked] = useState<{ query: string; index: number }>();
  const viewer = useRef<HTMLPreElement>(null);

  // Follow: fetch again while running; once more when the backup has just finished.
  const wasRunning = useRef(running);
  const { reload } = log;
  useEffect(() => {
    if (wasRunning.current && !running && canDownload) reload();
    wasRunning.current = running;
    if (!running || !follow || !canDownload) return;
    const timer = setInterval(reload, FOLLOW_INTERVAL_MS);
    return () => clearInterval(timer);
  }, [running, follow, canDownload, reload]);

  const text = log.data ?? '';
  const matches = useMemo(() => findMatches(text, query), [text, query]);
  const count = matches.ranges.length;

  // A new query starts at the first match; a re-fetched log keeps the position when it can.
  const current = picked?.query === query ? Math.min(picked.index, count - 1) : count > 0 ? 0 : -1;

  useEffect(() => {
    const element = viewer.current;
    if (!element) return;
    if (current >= 0) {
      element.querySelector(`mark[data-match="${current}"]`)?.scrollIntoView?.({ block: 'center' });
    } else if (follow && running) {
      element.scrollTop = element.scrollHeight;
    }
  }, [current, matches, follow, running]);

  const step = (direction: 1 | -1) => setPicked({ query, index: stepMatch(current, count, direction) });

  if (canDownload === undefined) return <Spinner size="lg" aria-label={t.app.loading} />;
  if (!canDownload) {
    return (
      <Alert variant="warning" isInline title={l.noDownload} data-testid="logs-no-permission" />
    );
  }

  const notReady = !!log.error && artifactNotReady(log.error);
  return (
    <div data-testid="log-viewer">
      <Toolbar>
        <ToolbarContent>
          <ToolbarItem>
            <TextInput
              type="search"
              value={query}
              onChange={(_event, value) => setQuery(value)}
              onKeyDown={(event) => {
                if (event.key === 'Enter') {
                  event.preventDefault();
                  step(event.shiftKey ? -1 : 1);
                }
              }}
              placeholder={l.searchPlaceholder}
              aria-label={l.search}
              data-testid="log-search"
            />
          </ToolbarItem>
          <ToolbarItem alignItems="center">
            <span aria-live="polite" data-testid="log-match-count">
              {query ? (count ? fmt(l.matchCount, { current: current + 1, total: count }) : l.noMatches) : ''}
            </span>
          </ToolbarItem>
          <ToolbarItem>
            <Button variant="plain" aria-label={l.previous} onClick={() => step(-1)} isDisabled={!count} icon={<AngleUpIcon />} data-testid="log-previous" />
            <Button variant="plain" aria-label={l.next} onClick={() => step(1)} isDisabled={!count} icon={<AngleDownIcon />} data-testid="log-next" />
          </ToolbarItem>
          <ToolbarItem>
            <Tooltip content={l.followHelp}>
              <Switch
                id={`log-follow-${name}`}
                label={l.follow}
                isChecked={follow && running}
                isDisabled={!running}
                onChange={(_event, checked) => setFollow(checked)}
                data-testid="log-follow"
              />
            </Tooltip>
          </ToolbarItem>
          <ToolbarItem>
            <Button variant="secondary" icon={<SyncAltIcon />} onClick={reload} isDisabled={log.loading} data-testid="log-refresh">
              {l.refresh}
            </Button>
          </ToolbarItem>
          <ToolbarItem>
            <DownloadLink href={path} fileName={`${name}.log`} label={l.download} isDisabled={!log.data} testId="log-download" />
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      {matches.truncated && <Alert variant="info" isInline isPlain title={fmt(l.truncatedMatches, { count })} />}
      {log.loading && log.data === undefined && <Spinner size="lg" aria-label={l.loading} />}
      {notReady && <Alert variant="info" isInline title={l.notYet} data-testid="logs-not-yet" />}
      {log.error && !notReady ? <ErrorAlert error={log.error} onRetry={reload} /> : null}
      {log.data !== undefined && log.data !== null && !log.error && (
        <>
          <small>{fmt(l.lines, { count: lineCount(text) })}</small>
          <pre className="nac-log-viewer" ref={viewer} tabIndex={0} aria-label={l.title} data-testid="log-text">
            {text ? <MarkedText text={text} ranges={matches.ranges} current={current} /> : l.empty}
          </pre>
        </>
      )}
      <CopyAs title={t.backups.detail.copyLogs} action={logsAction(namespace, name)} />
    </div>
  );
}
