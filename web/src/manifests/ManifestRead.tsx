// Reading something of a backup's manifest (contents, owner graph, diff): NAC builds the
// manifest a few seconds after the backup completes, so a 404 right after is retried for a while
// before it is explained as "no manifest"; the notice each state shows.
import { useEffect, useState, type ReactNode } from 'react';
import { Alert, AlertActionLink, Spinner } from '@patternfly/react-core';
import { ErrorAlert } from '../components/ErrorAlert';
import { useLoad, type Loaded } from '../hooks';
import { t } from '../strings';
import { manifestMissing } from './contents';

/** How often, and how many times, a missing manifest is asked for again. */
export const MANIFEST_RETRY_MS = 3000;
export const MANIFEST_RETRIES = 20;

export interface ManifestRead<T> extends Loaded<T | null> {
  /** The manifest is not there yet and is being asked for again. */
  waiting: boolean;
  /** Asked often enough: NAC has no manifest of this backup. */
  missing: boolean;
  /** Starts over (after "missing"). */
  retry: () => void;
}

/**
 * Runs `load` while `enabled` (else answers null). While the manifest is missing it asks again
 * if `expected` (the backup completed: NAC is building it), else says so at once.
 */
export function useManifestRead<T>(load: (signal: AbortSignal) => Promise<T>, key: string, enabled: boolean, expected = true): ManifestRead<T> {
  const [attempts, setAttempts] = useState<{ key: string; count: number }>({ key, count: 0 });
  const attempt = attempts.key === key ? attempts.count : 0;
  const loaded = useLoad<T | null>((signal) => (enabled ? load(signal) : Promise.resolve(null)), `${key}/${enabled}/${attempt}`);
  const notThere = enabled && manifestMissing(loaded.error);
  const waiting = notThere && expected && attempt < MANIFEST_RETRIES;
  useEffect(() => {
    if (!waiting) return;
    const timer = setTimeout(() => setAttempts({ key, count: attempt + 1 }), MANIFEST_RETRY_MS);
    return () => clearTimeout(timer);
  }, [waiting, key, attempt]);
  return { ...loaded, waiting, missing: notThere && !waiting, retry: () => (attempt === 0 ? loaded.reload() : setAttempts({ key, count: 0 })) };
}

/**
 * What to show instead of the view while there is nothing to show: the backup still running,
 * the manifest being built or missing, an error, loading. Null when `read` has data (a later
 * error is the view's to show, next to what it has).
 */
export function manifestNotice(read: ManifestRead<unknown>, running: boolean): ReactNode | null {
  const m = t.manifests.manifest;
  if (running) return <Alert variant="info" isInline title={m.notYet} data-testid="manifest-not-yet" />;
  if (read.waiting) {
    return (
      <Alert variant="info" isInline customIcon={<Spinner size="md" aria-label={t.app.loading} />} title={m.building} data-testid="manifest-building" />
    );
  }
  if (read.missing) {
    return (
      <Alert variant="info" isInline title={m.missing} actionLinks={<AlertActionLink onClick={read.retry}>{m.tryAgain}</AlertActionLink>} data-testid="manifest-missing" />
    );
  }
  if (read.error && !read.data) return <ErrorAlert error={read.error} onRetry={read.reload} />;
  if (!read.data) return <Spinner size="lg" aria-label={t.app.loading} />;
  return null;
}
