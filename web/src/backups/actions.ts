// The "copy as YAML / curl / nac CLI" descriptions of every backup action (create, describe, logs,
// results, delete, restore), built in one place so the console and the CLI stay in step.
import { apiPath, nsPath } from '../api/client';
import { deleteActionOf, type CopyableAction, type DeleteAction } from '../components/CopyAs';
import { artifactPath } from '../lib/artifacts';
import { nacManifest, shellQuote } from '../lib/fields';
import { backupObject, buildCreateCli } from './createForm';

const nacBackup = (verb: string, namespace: string, name: string, extra: string[] = []) =>
  ['nac', 'backup', verb, shellQuote(name), '-n', shellQuote(namespace), ...extra].join(' ');

export function createAction(namespace: string, body: { name: string; spec: { backupSpec: Record<string, unknown> } }): CopyableAction {
  return {
    method: 'POST',
    path: nsPath(namespace, 'backups'),
    body,
    object: backupObject(namespace, body.name, body.spec.backupSpec),
    cli: buildCreateCli(namespace, body.name, body.spec.backupSpec),
  };
}

export function describeAction(namespace: string, name: string): CopyableAction {
  return {
    method: 'GET',
    path: apiPath(['namespaces', namespace, 'backups', name, 'describe'], { details: true }),
    cli: nacBackup('get', namespace, name, ['-o', 'yaml']),
  };
}

export function logsAction(namespace: string, name: string): CopyableAction {
  return { method: 'GET', path: artifactPath(namespace, 'backups', name, 'log'), cli: nacBackup('logs', namespace, name) };
}

export function resultsAction(namespace: string, name: string): CopyableAction {
  return { method: 'GET', path: artifactPath(namespace, 'backups', name, 'results') };
}

export function deleteAction(namespace: string, name: string): DeleteAction {
  return deleteActionOf('backups', namespace, name, nacBackup('delete', namespace, name));
}

/** The restore name proposed for a backup (`NAME-restore`, kept within 253 characters). */
export function restoreNameFor(backupName: string): string {
  return `${backupName.slice(0, 253 - '-restore'.length)}-restore`;
}

/** A restore of the whole backup, as the restore wizard's simplest case. */
export function restoreAction(namespace: string, backupName: string): CopyableAction {
  const name = restoreNameFor(backupName);
  const restoreSpec = { backupName };
  return {
    method: 'POST',
    path: nsPath(namespace, 'restores'),
    body: { name, spec: { restoreSpec } },
    object: nacManifest('NonAdminRestore', namespace, name, { restoreSpec }),
    cli: ['nac', 'restore', 'create', shellQuote(name), '-n', shellQuote(namespace), '--from-backup', shellQuote(backupName)].join(' '),
  };
}
