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
