// Comparing two backups (pure, unit-tested): which one is the earlier (so "added" means "new
// since"), the backups one may compare with, and what changed in an item, in words.
import type { ChangedItem, NonAdminBackup } from '../api/types';
import { fmt, t } from '../strings';

const finishedAt = (backup: NonAdminBackup) => backup.status?.veleroBackup?.status?.completionTimestamp ?? backup.metadata.creationTimestamp ?? '';

/** Backups with a manifest to compare with (Completed or PartiallyFailed, not this one), newest first. */
export function comparableBackups(backups: NonAdminBackup[], current: string): NonAdminBackup[] {
  return backups
    .filter((backup) => backup.metadata.name !== current)
    .filter((backup) => ['Completed', 'PartiallyFailed'].includes(backup.status?.veleroBackup?.status?.phase ?? ''))
    .sort((a, b) => finishedAt(b).localeCompare(finishedAt(a)) || a.metadata.name.localeCompare(b.metadata.name));
}

/**
 * Which backup is diffed against which: the later one is `name`, the earlier `against`, so the
 * answer reads forward in time. Without times, the current backup is the later one.
 */
export function diffDirection(current: { name: string; at?: string | null }, other: { name: string; at?: string | null }): { name: string; against: string } {
  const currentAt = Date.parse(current.at ?? '');
  const otherAt = Date.parse(other.at ?? '');
  if (!Number.isNaN(currentAt) && !Number.isNaN(otherAt) && otherAt > currentAt) return { name: other.name, against: current.name };
  return { name: current.name, against: other.name };
}

/** When a backup finished (for {@link diffDirection}). */
export function backupFinishedAt(backup: NonAdminBackup | undefined): string | undefined {
  return backup ? finishedAt(backup) || undefined : undefined;
}

export interface MapChanges {
  added: [string, string][];
  removed: [string, string][];
  changed: [string, string, string][];
}

/** Keys added, removed and changed from one string map to another, each sorted by key. */
export function mapChanges(before: Record<string, string> | undefined, after: Record<string, string> | undefined): MapChanges {
  const b = before ?? {};
  const a = after ?? {};
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort();
  const changes: MapChanges = { added: [], removed: [], changed: [] };
  for (const key of keys) {
    if (!(key in b)) changes.added.push([key, a[key]]);
    else if (!(key in a)) changes.removed.push([key, b[key]]);
    else if (a[key] !== b[key]) changes.changed.push([key, b[key], a[key]]);
  }
  return changes;
}

function mapText(label: string, changes: MapChanges): string {
  const c = t.manifests.compare;
  const parts = [
    ...changes.added.map(([key, value]) => fmt(c.mapAdded, { key, value })),
    ...changes.removed.map(([key, value]) => fmt(c.mapRemoved, { key, value })),
    ...changes.changed.map(([key, before, after]) => fmt(c.mapChanged, { key, before, after })),
  ];
  return `${label}: ${parts.join(', ')}`;
}

/** One line per changed field: "labels: +tier=db, −app=web", "version v1beta1 → v1", "owners: 1 added, 0 removed". */
export function describeChange(changed: ChangedItem): string[] {
  const c = t.manifests.compare;
  return changed.fields.map((field) => {
    switch (field) {
      case 'version':
        return fmt(c.fieldVersion, { before: changed.before.version, after: changed.after.version });
      case 'labels':
        return mapText(c.fieldLabels, mapChanges(changed.before.labels, changed.after.labels));
      case 'annotations':
        return mapText(c.fieldAnnotations, mapChanges(changed.before.annotations, changed.after.annotations));
      case 'owners': {
        const before = new Set(changed.before.owners ?? []);
        const after = new Set(changed.after.owners ?? []);
        const added = [...after].filter((uid) => !before.has(uid)).length;
        const removed = [...before].filter((uid) => !after.has(uid)).length;
        return `${c.fieldOwners}: ${fmt(c.ownersChanged, { added, removed })}`;
      }
      default:
        return String(field);
    }
  });
}
