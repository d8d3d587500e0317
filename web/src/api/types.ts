// Shapes of the gateway's REST answers the console reads (see openapi/openapi.json).

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface VeleroProgress {
  itemsBackedUp?: number;
  itemsRestored?: number;
  totalItems?: number;
}

export interface VeleroStatus {
  phase?: string;
  startTimestamp?: string;
  completionTimestamp?: string;
  expiration?: string;
  errors?: number;
  warnings?: number;
  failureReason?: string;
  progress?: VeleroProgress;
  validationErrors?: string[];
}

export interface TenantStatus {
  phase?: string;
  conditions?: Condition[];
  queueInfo?: { estimatedQueuePosition?: number };
  veleroBackup?: { nacuuid?: string; name?: string; namespace?: string; status?: VeleroStatus };
  veleroRestore?: { nacuuid?: string; name?: string; namespace?: string; status?: VeleroStatus };
  [key: string]: unknown;
}

export type BackupSpec = Record<string, unknown>;

export interface NonAdminBackup {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { backupSpec: BackupSpec; deleteBackup?: boolean };
  status?: TenantStatus;
}

export interface NonAdminRestore {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { restoreSpec: Record<string, unknown> & { backupName?: string } };
  status?: TenantStatus;
}

export interface NonAdminBackupStorageLocation {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { backupStorageLocationSpec: Record<string, unknown> };
  status?: TenantStatus & { veleroBackupStorageLocation?: { status?: { phase?: string; message?: string } } };
}

export interface NonAdminSchedule {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { schedule: string; paused?: boolean; skipImmediately?: boolean; template: { backupSpec: BackupSpec } };
  status?: TenantStatus & {
    lastBackup?: { name?: string; veleroBackupName?: string; phase?: string; startTimestamp?: string; completionTimestamp?: string; expiration?: string };
    veleroSchedule?: { status?: { lastBackup?: string; phase?: string } };
    [key: string]: unknown;
  };
}

export interface ObjectList<T> {
  apiVersion: string;
  kind: string;
  metadata: { continue?: string };
  items: T[];
  approvals?: Record<string, string> | null;
}

export interface NamespaceAccess {
  name: string;
  permissions: Record<string, string[]>;
  canDownload: boolean;
}

export interface FieldError {
  field: string;
  message: string;
  reason: string;
}

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId?: string | null;
  errors?: FieldError[];
}

export interface QueueEta {
  startInSeconds: number;
  finishInSeconds: number;
  samples: number;
}

export interface QueueItem {
  kind: string;
  namespace: string;
  name: string;
  phase?: string | null;
  state: string;
  position: number;
  etaSeconds?: number | null;
  eta?: QueueEta | null;
}

export interface NamespaceQueue {
  namespace: string;
  items: QueueItem[];
}

export interface QueueCounts {
  pending: number;
  running: number;
  meanDurationSeconds?: number | null;
}

export interface ClusterQueue {
  backups: QueueCounts;
  restores: QueueCounts;
  mine: QueueItem[];
}

export interface RulesView {
  enforced: Record<string, unknown>;
  defaults: Record<string, unknown>;
  maximum: Record<string, unknown>;
  allowed: Record<string, unknown>;
}

export interface PolicyView {
  namespace: string;
  backup: RulesView;
  restore: RulesView;
  storageLocation: RulesView;
  requireApprovalForStorageLocations: boolean;
  restrictions: string[];
}

export interface Description {
  kind: string;
  namespace: string;
  name: string;
  requestPhase?: string | null;
  veleroPhase?: string | null;
  queuePosition?: number | null;
  eta?: QueueEta | null;
  conditions: Condition[];
  effectiveSpec: Record<string, unknown>;
  progress: { totalItems?: number | null; itemsBackedUp?: number | null; itemsRestored?: number | null; volumeSnapshotsAttempted?: number | null; volumeSnapshotsCompleted?: number | null; [key: string]: unknown };
  started?: string | null;
  completed?: string | null;
  expiration?: string | null;
  errors: number;
  warnings: number;
  failureReason?: string | null;
  validationErrors: string[];
  deletion?: { requested: boolean; phase?: string | null; errors: string[] } | null;
  resourceList?: Record<string, string[]> | null;
  resourceListUnavailable?: string | null;
  [key: string]: unknown;
}

export interface Operation {
  id: string;
  namespace: string;
  kind?: string | null;
  name: string;
  uid: string;
  veleroName?: string | null;
  parentName?: string | null;
  requester?: string | null;
  createdAt: string;
  startedAt?: string | null;
  completedAt?: string | null;
  phase?: string | null;
  phaseRank: number;
  nacPhase?: string | null;
  itemsDone?: number | null;
  itemsTotal?: number | null;
  warnings?: number | null;
  errors?: number | null;
  failureReason?: string | null;
  queuePosition?: number | null;
  deletedAt?: string | null;
  durationMs?: number | null;
}

export interface OperationPage {
  items: Operation[];
  continue?: string | null;
}

export interface TimelineEntry {
  at: string;
  attribute: string;
  value: string;
  reason?: string | null;
  message?: string | null;
}

export interface OperationDetail {
  operation: Operation;
  timeline: TimelineEntry[];
}

export interface KindStatistics {
  kind: string;
  total: number;
  byPhase: Record<string, number>;
  successRate?: number | null;
  p50DurationMs?: number | null;
  p95DurationMs?: number | null;
  itemsDone: number;
  [key: string]: unknown;
}

export interface NamespaceStatistics {
  namespace: string;
  from: string;
  to: string;
  kinds: KindStatistics[];
}

export interface NamespaceCoverage {
  namespace: string;
  lastSuccessfulBackup?: string | null;
  lastSuccessfulBackupAt?: string | null;
  lastSuccessfulBackupAgeSeconds?: number | null;
  failingSchedules: string[];
}

export interface DeleteOutcome {
  kind: string;
  name: string;
  permanent: boolean;
  message: string;
}

export interface SessionInfo {
  username: string;
  groups: string[];
  expiresAt: string;
  csrfToken: string;
}

/** One Server-Sent Event of `/api/v1/namespaces/{ns}/events`. */
export interface ChangeEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  namespace: string;
  resource: 'backups' | 'restores' | 'storage-locations' | 'schedules';
  name: string;
  object: unknown;
}

// Backup manifests (seed 002): `…/backups/{name}/manifest|contents|graph|diff`, the backup
// dry-run (`POST …/backups?dryRun=true`) and the restore preview (`POST …/restores?dryRun=true`).

/** One object of a backup, reduced to its selectable fields. */
export interface ManifestItem {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespace?: string | null;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  owners?: string[];
  uid?: string | null;
}

/** How many items of one kind a manifest holds. */
export interface KindCount {
  group: string;
  kind: string;
  resource: string;
  count: number;
}

/** Which backup a manifest describes. */
export interface ManifestBackup {
  namespace: string;
  name: string;
  veleroBackup: string;
  completedAt?: string | null;
}

/** Items of a backup the caller may not list, counted per resource: never named. */
export interface HiddenItems {
  group: string;
  resource: string;
  kind: string;
  namespace?: string | null;
  count: number;
  /** `3 Secret items hidden: you may not list secrets in team-a` */
  message: string;
}

/** One page of a backup's contents (`GET …/contents`). */
export interface ContentsPage {
  backup: ManifestBackup;
  counts: KindCount[];
  total: number;
  matched: number;
  items: ManifestItem[];
  continue?: string | null;
  hidden?: HiddenItems[];
}

/** The owner graph (`GET …/graph`): item keys `<resource>[.<group>]/<namespace>/<version>/<name>`. */
export interface OwnerGraph {
  nodes: string[];
  edges: { owner: string; dependent: string }[];
  missingOwners?: { dependent: string; ownerUid: string }[];
}

/** Which object an item is, whatever version it was stored at. */
export interface ItemIdentity {
  groupResource: string;
  namespace?: string | null;
  name: string;
}

export type ChangedField = 'version' | 'labels' | 'annotations' | 'owners';

export interface ChangedItem {
  identity: ItemIdentity;
  fields: ChangedField[];
  before: ManifestItem;
  after: ManifestItem;
}

/** The changes from backup `from` (`against`) to backup `to` (`GET …/diff?against=`). */
export interface BackupDiff {
  from: ManifestBackup;
  to: ManifestBackup;
  added: ManifestItem[];
  removed: ManifestItem[];
  changed: ChangedItem[];
  unchanged: number;
  hidden?: HiddenItems[];
}

/** The objects a new operation shares with one running operation ("backup X", "restore Y"). */
export interface OperationOverlap {
  operation: string;
  total: number;
  items: ItemIdentity[];
  truncated: boolean;
}

/** Whether a created backup or restore that has not started waits on running operations
 *  (`GET …/backups/{name}/overlaps`, `GET …/restores/{name}/overlaps`). */
export interface OperationOverlaps {
  operation: string;
  pending: boolean;
  waiting: boolean;
  overlaps: OperationOverlap[];
}

/** A list the caller could not read: its objects are missing from a dry-run. */
export interface UnreadableList {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespace?: string | null;
  reason: 'Forbidden' | 'Failed' | string;
  message: string;
}

/** What a backup would take (`POST …/backups?dryRun=true`). */
export interface BackupDryRun {
  apiVersion: string;
  kind: string;
  backup: Record<string, unknown>;
  counts: KindCount[];
  totalItems: number;
  items: ManifestItem[];
  unreadable: UnreadableList[];
  overlaps: OperationOverlap[];
  hidden?: HiddenItems[];
}

export type RestoreAction = 'Create' | 'Update' | 'Skip' | 'Fail' | 'Undetermined';

/** One line of a restore preview. */
export interface PreviewEntry {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespace?: string | null;
  targetNamespace?: string | null;
  name: string;
  action: RestoreAction | string;
  reason: string;
  message: string;
  warning?: boolean;
}

export interface PreviewCounts {
  total: number;
  create: number;
  update: number;
  skip: number;
  fail: number;
  undetermined: number;
  excluded: number;
  warnings: number;
  namespacesCreated: number;
}

/** What a restore would do (`POST …/restores?dryRun=true`). */
export interface RestorePreview {
  apiVersion: string;
  kind: string;
  restore: Record<string, unknown>;
  backupName: string;
  entries: PreviewEntry[];
  counts: PreviewCounts;
  overlaps: OperationOverlap[];
  hidden?: HiddenItems[];
}

/** The namespace's place in the shared backup pool (`GET …/sharedstorage`, seed 001). */
export interface SharedStorage {
  configured: boolean;
  state?: 'Provisioning' | 'WaitingForCapacity' | 'Ready' | 'Unavailable' | 'Retained' | 'Purging' | string;
  message?: string | null;
  purgeAfter?: string | null;
}
