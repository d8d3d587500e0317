// Where a backup's or restore's artifacts (Velero log, results, resource list) are downloaded
// from, and whether a failed download only means Velero has not uploaded them yet.
import { ApiError, apiPath } from '../api/client';

export type Artifact = 'log' | 'results' | 'resource-list';

/** `/api/v1/namespaces/{ns}/{backups|restores}/{name}/logs?artifact=…` (also the download link). */
export function artifactPath(namespace: string, kind: 'backups' | 'restores', name: string, artifact: Artifact): string {
  return apiPath(['namespaces', namespace, kind, name, 'logs'], { artifact });
}

/** Whether an artifact fetch failed only because Velero has not uploaded it yet (404/409). */
export function artifactNotReady(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 409);
}
