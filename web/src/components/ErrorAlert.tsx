// Shows a failed call in plain words: a refused permission names the missing verb/resource,
// validation errors list their fields, and the request id is there for support.
import { Alert, AlertActionLink, List, ListItem } from '@patternfly/react-core';
import { ApiError } from '../api/client';
import { fmt, t } from '../strings';

/** Title and body text for an error (pure; unit-tested). */
export function describeError(error: unknown): { title: string; detail: string; requestId?: string } {
  if (error instanceof ApiError) {
    const problem = error.problem;
    const requestId = problem?.requestId ?? undefined;
    if (error.status === 0) return { title: t.errors.network, detail: '' };
    if (error.status === 401) return { title: t.errors.unauthenticated, detail: '', requestId };
    if (error.status === 403) {
      const missing = parseForbidden(problem?.detail ?? '');
      return {
        title: t.errors.forbiddenTitle,
        detail: missing ? fmt(t.errors.forbiddenDetail, missing) : (problem?.detail ?? ''),
        requestId,
      };
    }
    if (error.status === 503) return { title: t.errors.unavailable, detail: problem?.detail ?? '', requestId };
    return { title: problem?.title ?? t.errors.generic, detail: problem?.detail ?? error.message, requestId };
  }
  return { title: t.errors.generic, detail: error instanceof Error ? error.message : String(error) };
}

/** "you may not create nonadminbackups in namespace team-b" → its parts. */
export function parseForbidden(detail: string): { verb: string; resource: string; namespace: string } | null {
  const match = /may not (\S+) (\S+) in namespace (\S+)/.exec(detail);
  return match ? { verb: match[1], resource: match[2], namespace: match[3] } : null;
}

export function ErrorAlert({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const { title, detail, requestId } = describeError(error);
  const fieldErrors = error instanceof ApiError ? (error.problem?.errors ?? []) : [];
  return (
    <Alert
      variant={error instanceof ApiError && error.status === 403 ? 'warning' : 'danger'}
      isInline
      title={title}
      actionLinks={onRetry ? <AlertActionLink onClick={onRetry}>{t.app.retry}</AlertActionLink> : undefined}
      data-testid="error-alert"
    >
      {detail && <p>{detail}</p>}
      {fieldErrors.length > 0 && (
        <List>
          {fieldErrors.map((e, index) => (
            <ListItem key={`${e.field}-${index}`}>
              <code>{e.field}</code>: {e.message}
            </ListItem>
          ))}
        </List>
      )}
      {requestId && <small>{fmt(t.errors.requestId, { id: requestId })}</small>}
    </Alert>
  );
}
