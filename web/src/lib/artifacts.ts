// A backup's or restore's artifacts (Velero log, results, resource list): where they download
// from, fetching them, and whether a failed download only means Velero has not uploaded them yet.
// The document types the log as text/plain and the results and the resource list as JSON
// (`GET …/logs?artifact=…`); the console still checks their shape, as they come from object storage.
import { ApiError, api, apiPath } from '../api/client';
import { isRecord, resourceListOf } from '../api/types';
import type { VeleroResults, VeleroResultSet } from './failureSummary';

export type Artifact = 'log' | 'results' | 'resource-list';
export type ArtifactOwner = 'backups' | 'restores';

/** `/api/v1/namespaces/{ns}/{backups|restores}/{name}/logs?artifact=…` (also the download link). */
export function artifactPath(namespace: string, kind: ArtifactOwner, name: string, artifact: Artifact): string {
  return apiPath(['namespaces', namespace, kind, name, 'logs'], { artifact });
}

const LOGS_PATHS = {
  backups: '/api/v1/namespaces/{namespace}/backups/{name}/logs',
  restores: '/api/v1/namespaces/{namespace}/restores/{name}/logs',
} as const;

/** An artifact as the gateway sends it (text). */
export function fetchArtifact(namespace: string, kind: ArtifactOwner, name: string, artifact: Artifact, signal?: AbortSignal): Promise<string> {
  const path: (typeof LOGS_PATHS)[ArtifactOwner] = LOGS_PATHS[kind];
  return api.text(path, { path: { namespace, name }, query: { artifact }, signal });
}

/** Velero's results of a finished backup or restore. */
export async function fetchResults(namespace: string, kind: ArtifactOwner, name: string, signal?: AbortSignal): Promise<VeleroResults> {
  const results = veleroResultsOf(await api.get(LOGS_PATHS[kind], { path: { namespace, name }, query: { artifact: 'results' }, signal }));
  if (!results) throw new Error('the results are not Velero results');
  return results;
}

/** The resources a finished backup holds ("group/version/Kind" → names). */
export async function fetchResourceList(namespace: string, name: string, signal?: AbortSignal): Promise<Record<string, string[]>> {
  const list = resourceListOf(await api.get(LOGS_PATHS.backups, { path: { namespace, name }, query: { artifact: 'resource-list' }, signal }));
  if (!list) throw new Error('the resource list is not a map of kinds to names');
  return list;
}

/** Whether an artifact fetch failed only because Velero has not uploaded it yet (404/409). */
export function artifactNotReady(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 409);
}

/** A list of strings (null and absent stay as they are); undefined when it is something else. */
function stringList(value: unknown): string[] | null | undefined {
  if (value === null || value === undefined) return value;
  if (!Array.isArray(value)) return undefined;
  const strings = value.filter((entry): entry is string => typeof entry === 'string');
  return strings.length === value.length ? strings : undefined;
}

function resultSetOf(value: unknown): VeleroResultSet | null | undefined | false {
  if (value === null || value === undefined) return value;
  if (!isRecord(value)) return false;
  const velero = stringList(value.velero);
  const cluster = stringList(value.cluster);
  if (velero === undefined && value.velero !== undefined) return false;
  if (cluster === undefined && value.cluster !== undefined) return false;
  let namespaces: Record<string, string[] | null> | null | undefined = value.namespaces === null ? null : undefined;
  if (isRecord(value.namespaces)) {
    namespaces = {};
    for (const [namespace, messages] of Object.entries(value.namespaces)) {
      const list = stringList(messages);
      if (list === undefined) return false;
      namespaces[namespace] = list;
    }
  } else if (value.namespaces !== undefined && value.namespaces !== null) return false;
  return { velero, cluster, namespaces };
}

/** Velero's results file (`{errors: {...}, warnings: {...}}`), or null when it is not one. */
export function veleroResultsOf(value: unknown): VeleroResults | null {
  if (!isRecord(value)) return null;
  const errors = resultSetOf(value.errors);
  const warnings = resultSetOf(value.warnings);
  if (errors === false || warnings === false) return null;
  return { errors, warnings };
}
