// "Copy as YAML / curl / nac CLI" descriptions of every restore, storage-location and schedule
// action, built in one place. The `nac` CLI covers restores only; the other kinds get YAML and curl.
import { nsPath } from '../api/client';
import { deleteActionOf, type CopyableAction, type DeleteAction } from '../components/CopyAs';
import { artifactPath } from '../lib/artifacts';
import { shellQuote } from '../lib/fields';
import { restoreCreateCli, restoreManifest, type RestoreRequest } from './restoreForm';

const nacRestore = (verb: string, namespace: string, name: string, extra: string[] = []) =>
  ['nac', 'restore', verb, shellQuote(name), '-n', shellQuote(namespace), ...extra].join(' ');

export function restoreCreateAction(namespace: string, request: RestoreRequest): CopyableAction {
  return {
    method: 'POST',
    path: nsPath(namespace, 'restores'),
    body: request,
    object: restoreManifest(namespace, request),
    cli: restoreCreateCli(namespace, request) ?? undefined,
  };
}

export function restoreDescribeAction(namespace: string, name: string): CopyableAction {
  return { method: 'GET', path: nsPath(namespace, 'restores', name, 'describe'), cli: nacRestore('get', namespace, name, ['-o', 'yaml']) };
}

export function restoreLogsAction(namespace: string, name: string): CopyableAction {
  return { method: 'GET', path: artifactPath(namespace, 'restores', name, 'log'), cli: nacRestore('logs', namespace, name) };
}

export function restoreResultsAction(namespace: string, name: string): CopyableAction {
  return { method: 'GET', path: artifactPath(namespace, 'restores', name, 'results') };
}

export function restoreDeleteAction(namespace: string, name: string): DeleteAction {
  return deleteActionOf('restores', namespace, name, nacRestore('delete', namespace, name));
}

export function locationCreateAction(namespace: string, request: { name: string; spec: unknown }, object: unknown): CopyableAction {
  return { method: 'POST', path: nsPath(namespace, 'storage-locations'), body: request, object };
}

export function locationDeleteAction(namespace: string, name: string): DeleteAction {
  return deleteActionOf('storage-locations', namespace, name);
}

export function scheduleCreateAction(namespace: string, request: { name: string; spec: unknown }, object: unknown): CopyableAction {
  return { method: 'POST', path: nsPath(namespace, 'schedules'), body: request, object };
}

export function scheduleDeleteAction(namespace: string, name: string): DeleteAction {
  return deleteActionOf('schedules', namespace, name);
}

export function schedulePauseAction(namespace: string, name: string, paused: boolean): CopyableAction {
  return { method: 'PATCH', path: nsPath(namespace, 'schedules', name), body: { paused } };
}
