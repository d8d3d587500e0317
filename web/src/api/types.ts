// The console's names for the gateway's types: aliases of the ones generated from
// openapi/openapi.json (schema.d.ts, `npm run gen:api`), plus what the document leaves out or
// leaves open, each checked by a named guard where an answer enters the console.
import type { components, operations } from './schema';

type Schemas = components['schemas'];

export type BackupDiff = Schemas['BackupDiff'];
export type BackupDryRun = Schemas['BackupDryRun'];
export type ChangedItem = Schemas['ChangedItem'];
export type ClusterQueue = Schemas['ClusterQueue'];
export type ContentsPage = Schemas['ContentsPage'];
export type DeleteOutcome = Schemas['DeleteOutcome'];
export type Description = Schemas['Description'];
export type FieldError = Schemas['FieldError'];
export type HiddenItems = Schemas['HiddenItems'];
export type ItemIdentity = Schemas['ItemIdentity'];
export type KindCount = Schemas['KindCount'];
export type KindStatistics = Schemas['KindStatistics'];
export type ManifestItem = Schemas['ManifestItem'];
export type NamespaceAccess = Schemas['NamespaceAccess'];
export type NamespaceCoverage = Schemas['NamespaceCoverage'];
export type NamespaceList = Schemas['NamespaceList'];
export type NamespaceQueue = Schemas['NamespaceQueue'];
export type NamespaceStatistics = Schemas['NamespaceStatistics'];
export type Operation = Schemas['Operation'];
export type OperationDetail = Schemas['OperationDetail'];
export type OperationOverlap = Schemas['OperationOverlap'];
export type OperationOverlaps = Schemas['OperationOverlaps'];
export type OperationPage = Schemas['OperationPage'];
export type OwnerGraph = Schemas['OwnerGraphView'];
export type PolicyView = Schemas['PolicyView'];
export type PreviewCounts = Schemas['PreviewCounts'];
export type PreviewEntry = Schemas['PreviewEntry'];
export type ProblemDetails = Schemas['ProblemDetails'];
export type QueueCounts = Schemas['QueueCounts'];
export type QueueItem = Schemas['QueueItem'];
export type RestorePreview = Schemas['RestorePreviewView'];
export type RulesView = Schemas['RulesView'];
export type SessionInfo = Schemas['SessionInfo'];
export type SharedStorage = Schemas['SharedStorage'];
export type TenantResource = Schemas['TenantResource'];
export type TimelineEntry = Schemas['TimelineEntry'];

/** The filters and page of a tenant list (`GET …/backups`, `…/restores`, …). */
export type ListQuery = NonNullable<operations['list_backups']['parameters']['query']>;
/** The filters and page of `GET …/history`. */
export type HistoryQuery = NonNullable<operations['namespace_history']['parameters']['query']>;
/** The filters and page of `GET …/backups/{name}/contents`. */
export type ContentsQuery = NonNullable<operations['backup_contents']['parameters']['query']>;
/** The window of `GET …/stats`. */
export type StatsQuery = NonNullable<operations['namespace_stats']['parameters']['query']>;

// NAC's custom resources. The document gives `apiVersion`, `kind` and `metadata` (an
// `ObjectMeta`) without requiring them, as a create body may leave them out; every object the
// gateway answers has its metadata, which the console checks (`isTenantObject`) on every object
// that comes in.

/** The metadata of a Kubernetes object, as the document describes it. */
export type ObjectMeta = Schemas['ObjectMeta'];

/** What every Kubernetes object the gateway answers has besides its spec and status. */
export interface KubeObject {
  metadata: ObjectMeta;
}

export type NonAdminBackup = Schemas['NonAdminBackup'] & KubeObject;
export type NonAdminRestore = Schemas['NonAdminRestore'] & KubeObject;
export type NonAdminBackupStorageLocation = Schemas['NonAdminBackupStorageLocation'] & KubeObject;
export type NonAdminSchedule = Schemas['NonAdminSchedule'] & KubeObject;

/** NAC's request phase of a custom resource (`status.phase`). */
export type RequestPhase = NonNullable<NonNullable<Schemas['NonAdminBackup']['status']>['phase']>;

/** The custom resource each tenant resource of the API serves. */
export interface TenantObjects {
  backups: NonAdminBackup;
  restores: NonAdminRestore;
  'storage-locations': NonAdminBackupStorageLocation;
  schedules: NonAdminSchedule;
}

/** A backup's spec (the Velero backup spec NAC checks against the administrator's policy). */
export type BackupSpec = Schemas['NonAdminBackup']['spec']['backupSpec'];

/** A storage location's spec (the Velero location spec; `credential` names a Secret of the namespace). */
export type StorageLocationSpec = Schemas['NonAdminBackupStorageLocation']['spec']['backupStorageLocationSpec'];

/** A status condition of a custom resource (metav1.Condition). */
export type Condition = NonNullable<NonNullable<Schemas['NonAdminBackup']['status']>['conditions']>[number];

/** What a sentence about a condition reads (a history timeline entry has no transition time). */
export type ConditionFacts = Pick<Condition, 'type' | 'status'> & Partial<Pick<Condition, 'reason' | 'message' | 'lastTransitionTime'>>;

/** One page of a tenant list with its items checked (`listPage` in lib/listAll). */
export interface TenantList<R extends TenantResource> {
  items: TenantObjects[R][];
  /** The next page's token, when there is one. */
  continue?: string;
  /** Storage locations only: approval state by name. */
  approvals: Record<string, string>;
}

/** One change event of `/api/v1/namespaces/{ns}/events`: the frame's name and its data (the
 *  document's `StreamChange`; the stream itself is a `text/event-stream` string there, so
 *  `parseChangeEvent` checks the data). */
export type ChangeEvent = { type: Schemas['ChangeAction'] } & Omit<Schemas['StreamChange'], 'object'> & { object: unknown };

/** Whether a JSON value is an object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The spec field each custom resource cannot be without (required by its CRD). */
const REQUIRED_SPEC_FIELD: Record<TenantResource, string> = {
  backups: 'backupSpec',
  restores: 'restoreSpec',
  'storage-locations': 'backupStorageLocationSpec',
  schedules: 'template',
};

/**
 * Whether `value` is an object of `resource`: it has `metadata.name` (which the document's
 * schemas leave out) and its spec's required field. The rest of the object is taken as the
 * document says.
 */
export function isTenantObject<R extends TenantResource>(resource: R, value: unknown): value is TenantObjects[R] {
  return isRecord(value) && isRecord(value.metadata) && typeof value.metadata.name === 'string' && isRecord(value.spec) && REQUIRED_SPEC_FIELD[resource] in value.spec;
}

/** `value` as an object of `resource`, or an error naming what was wrong. */
export function tenantObject<R extends TenantResource>(resource: R, value: unknown): TenantObjects[R] {
  if (!isTenantObject(resource, value)) throw new Error(`the gateway sent a ${resource} object without metadata.name or spec`);
  return value;
}

const CHANGE_ACTIONS: readonly string[] = ['ADDED', 'MODIFIED', 'DELETED'] satisfies Schemas['ChangeAction'][];
const TENANT_RESOURCES: readonly string[] = ['backups', 'restores', 'storage-locations', 'schedules'] satisfies TenantResource[];
const isChangeAction = (value: unknown): value is Schemas['ChangeAction'] => typeof value === 'string' && CHANGE_ACTIONS.includes(value);
const isTenantResource = (value: unknown): value is TenantResource => typeof value === 'string' && TENANT_RESOURCES.includes(value);

/** The change event of one SSE message (`type` is the event's name), or null when it is not one. */
export function parseChangeEvent(type: string, data: string): ChangeEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isChangeAction(type) || !isRecord(value)) return null;
  const { namespace, resource, name, object } = value;
  if (typeof namespace !== 'string' || !isTenantResource(resource) || typeof name !== 'string') return null;
  return { type, namespace, resource, name, object };
}

/**
 * Whether a JSON answer is a problem (RFC 9457 as the gateway writes it). Error answers are
 * read before any type is known, so the console checks the fields it shows.
 */
export function isProblemDetails(value: unknown): value is ProblemDetails {
  return isRecord(value) && typeof value.status === 'number' && typeof value.title === 'string' && typeof value.detail === 'string' && typeof value.code === 'string';
}

/**
 * The conditions of a description: `Description.conditions` is an array of free objects in the
 * document (they are the custom resource's status conditions). Objects without a string `type`
 * and `status` are left out; other fields are kept when they are strings.
 */
export function descriptionConditions(description: Pick<Description, 'conditions'>): ConditionFacts[] {
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return description.conditions.flatMap(({ type, status, reason, message, lastTransitionTime }) =>
    typeof type === 'string' && typeof status === 'string' ? [{ type, status, reason: text(reason), message: text(message), lastTransitionTime: text(lastTransitionTime) }] : [],
  );
}

/** A whole number of a free JSON object (`Description.progress` is one in the document). */
export function countOf(object: Record<string, unknown> | null | undefined, key: string): number | undefined {
  const value = object?.[key];
  return typeof value === 'number' ? value : undefined;
}

/** The string values of a free JSON object (e.g. a list's `approvals`), others left out. */
export function stringValues(object: Record<string, unknown> | null | undefined): Record<string, string> {
  const strings: Record<string, string> = {};
  for (const [key, value] of Object.entries(object ?? {})) if (typeof value === 'string') strings[key] = value;
  return strings;
}

/**
 * A backup's resource list (`"group/version/Kind"` → names), from the artifact's JSON or a
 * description's `resourceList` (a free object in the document); null when it is not one.
 */
export function resourceListOf(value: unknown): Record<string, string[]> | null {
  if (!isRecord(value)) return null;
  const list: Record<string, string[]> = {};
  for (const [kind, names] of Object.entries(value)) {
    const strings: unknown[] = Array.isArray(names) ? names : [];
    const valid = strings.filter((name): name is string => typeof name === 'string');
    if (!Array.isArray(names) || valid.length !== strings.length) return null;
    list[kind] = valid;
  }
  return list;
}
