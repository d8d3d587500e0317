// A backup's timeline from the history store: phase, Velero phase, queue and condition changes,
// oldest first, as a vertical stepper with times; follows the backup's live version.
import { Alert, ProgressStep, ProgressStepper, Spinner } from '@patternfly/react-core';
import { api } from '../api/client';
import type { OperationDetail } from '../api/types';
import { describeError } from '../components/ErrorAlert';
import { formatTimestamp } from '../format';
import { useLoad } from '../hooks';
import { fmt, t } from '../strings';
import { describeTimelineEntry, pickOperation, type Tone } from './backupStatus';

const VARIANT: Record<Tone, 'success' | 'danger' | 'warning' | 'info' | 'default'> = {
  success: 'success',
  danger: 'danger',
  warning: 'warning',
  info: 'info',
  custom: 'default',
};

/** Finds the backup's operation (`?q=NAME&kind=backup`) and loads its timeline; null when none. */
export async function loadBackupTimeline(namespace: string, name: string, uid: string | undefined, signal?: AbortSignal): Promise<OperationDetail | null> {
  const page = await api.get('/api/v1/namespaces/{namespace}/history', { path: { namespace }, query: { q: name, kind: ['backup'], limit: 100 }, signal });
  const operation = pickOperation(page.items ?? [], name, uid);
  if (!operation) return null;
  return api.get('/api/v1/namespaces/{namespace}/history/{operationId}', { path: { namespace, operationId: operation.id }, signal });
}

export function BackupTimeline({ namespace, name, uid, version }: { namespace: string; name: string; uid?: string; version?: string }) {
  const w = t.backups.detail;
  const loaded = useLoad((signal) => loadBackupTimeline(namespace, name, uid, signal), `${namespace}/${name}/${uid}/${version}`);
  if (loaded.error && !loaded.data) {
    const { title, detail } = describeError(loaded.error);
    return <Alert variant="warning" isInline title={fmt(w.timelineUnavailable, { reason: title })}>{detail}</Alert>;
  }
  if (loaded.loading && loaded.data === undefined) return <Spinner size="lg" aria-label={t.app.loading} />;
  const timeline = loaded.data?.timeline ?? [];
  if (timeline.length === 0) return <Alert variant="info" isInline isPlain title={w.timelineEmpty} data-testid="timeline-empty" />;
  return (
    <ProgressStepper isVertical aria-label={fmt(t.backups.timeline.label, { name })} data-testid="timeline">
      {timeline.map((entry, index) => {
        const { text, tone } = describeTimelineEntry(entry);
        return (
          <ProgressStep
            key={`${entry.at}/${entry.attribute}/${index}`}
            variant={VARIANT[tone]}
            isCurrent={index === timeline.length - 1}
            description={formatTimestamp(entry.at)}
            titleId={`timeline-${index}`}
            aria-label={text}
            data-testid="timeline-entry"
          >
            {text}
          </ProgressStep>
        );
      })}
    </ProgressStepper>
  );
}
