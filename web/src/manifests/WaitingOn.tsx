// On the detail page of a created backup or restore that has not started yet (new or queued):
// the running operations of its namespace it waits on, each with the overlapping items, from
// `GET …/{backups|restores}/{name}/overlaps`, fetched again whenever the operation changes.
import { Alert } from '@patternfly/react-core';
import { api } from '../api/client';
import type { OperationOverlaps } from '../api/types';
import { describeError } from '../components/ErrorAlert';
import { useLoad } from '../hooks';
import { t } from '../strings';
import { OverlapList } from './OverlapList';

interface Props {
  namespace: string;
  kind: 'backups' | 'restores';
  name: string;
  /** Whether the operation has not started yet (see `isPendingOperation`); nothing is fetched otherwise. */
  pending: boolean;
  /** Changes whenever the operation's status does (its resourceVersion or phases). */
  version: string;
}

const OVERLAPS_PATHS = {
  backups: '/api/v1/namespaces/{namespace}/backups/{name}/overlaps',
  restores: '/api/v1/namespaces/{namespace}/restores/{name}/overlaps',
} as const;

export function WaitingOn({ namespace, kind, name, pending, version }: Props) {
  const o = t.manifests.overlaps;
  const answer = useLoad<OperationOverlaps | null>(
    (signal) => (pending ? api.get(OVERLAPS_PATHS[kind], { path: { namespace, name }, signal }) : Promise.resolve(null)),
    `${namespace}/${kind}/${name}/${pending}/${version}`,
  );
  if (!pending) return null;
  if (answer.error) {
    return (
      <Alert variant="warning" isInline isPlain title={o.waitingFailed} data-testid="waiting-on-error">
        {describeError(answer.error).title}
      </Alert>
    );
  }
  const overlaps = answer.data;
  // Shown only while it waits; a stale answer stays until the next one arrives.
  if (!overlaps?.waiting) return null;
  return (
    <Alert variant="info" isInline title={o.waitingTitle} data-testid="waiting-on">
      <p>{o.waitingBody}</p>
      <OverlapList overlaps={overlaps.overlaps} waiting />
    </Alert>
  );
}
