// Field helpers shared by the create forms (backup, restore, schedule, storage location): object
// names, comma-separated resource lists and the label selector with the administrator's rules,
// generated names, Idempotency-Keys, shell quoting, the NAC object a request creates, and mapping
// the server's 422 field paths onto form fields.
import { ApiError } from '../api/client';
import type { FieldError, RulesView } from '../api/types';
import { fmt, t } from '../strings';
import { parseLabelSelector, toLabelSelector } from './labelSelector';
import { ruleViolation } from './specRules';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `name` is a lowercase RFC 1123 subdomain (the shape of Kubernetes object names). */
export function isSubdomain(name: string): boolean {
  return SUBDOMAIN.test(name);
}

/** Why `name` is not a valid object name (lowercase RFC 1123 subdomain, ≤ `max`), or null. */
export function objectNameError(name: string, max = 253): string | null {
  if (!name) return t.restores.fields.nameRequired;
  if (name.length > max) return fmt(t.restores.fields.nameTooLong, { max });
  if (!isSubdomain(name)) return t.restores.fields.nameInvalid;
  return null;
}

/** The entries of a comma- or whitespace-separated list, trimmed, without empties or repeats. */
export function parseNameList(text: string): string[] {
  const seen = new Set<string>();
  for (const part of text.split(/[\s,]+/)) {
    const value = part.trim();
    if (value) seen.add(value);
  }
  return [...seen];
}

const RESOURCE = /^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$/;

/** Why a resource list (`deployments, configmaps, routes.route.openshift.io`) is invalid, or null. */
export function resourceListError(resources: string[]): string | null {
  const bad = resources.find((resource) => !RESOURCE.test(resource));
  if (bad !== undefined) return fmt(t.restores.fields.resourceInvalid, { resource: bad });
  if (resources.includes('*') && resources.length > 1) return t.restores.fields.resourceStarAlone;
  return null;
}

/** Resources named in both lists (an include/exclude contradiction). */
export function overlapping(included: string[], excluded: string[]): string[] {
  return included.filter((resource) => resource !== '*' && excluded.includes(resource));
}

/** The fields that choose what a backup or restore covers, as typed. */
export interface ResourceSelection {
  includedResources: string;
  excludedResources: string;
  labelSelector: string;
}

/**
 * Why the included / excluded resources or the label selector are wrong: not resource names, named
 * in both lists, not a selector, or against the administrator's rules (paths relative to the spec).
 */
export function resourceSelectionErrors(form: ResourceSelection, rules: RulesView | undefined): Partial<Record<keyof ResourceSelection, string>> {
  const errors: Partial<Record<keyof ResourceSelection, string>> = {};
  const included = parseNameList(form.includedResources);
  const excluded = parseNameList(form.excludedResources);
  const includedError = resourceListError(included) ?? ruleViolation(rules, 'includedResources', included);
  if (includedError) errors.includedResources = includedError;
  const excludedError = resourceListError(excluded) ?? ruleViolation(rules, 'excludedResources', excluded);
  if (excludedError) errors.excludedResources = excludedError;
  const both = overlapping(included, excluded);
  if (!errors.excludedResources && both.length) errors.excludedResources = fmt(t.restores.form.resourceInBoth, { resources: both.join(', ') });
  const selector = parseLabelSelector(form.labelSelector);
  if (!selector.ok) errors.labelSelector = selector.error;
  else {
    const violation = ruleViolation(rules, 'labelSelector', selector.terms.length ? toLabelSelector(selector.terms) : undefined);
    if (violation) errors.labelSelector = violation;
  }
  return errors;
}

/** The spec fields of a selection: only the lists (cut by `split`) and selector that were filled in. */
export function resourceSelectionSpec(form: ResourceSelection, split: (text: string) => string[] = parseNameList): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  const included = split(form.includedResources);
  const excluded = split(form.excludedResources);
  if (included.length) spec.includedResources = included;
  if (excluded.length) spec.excludedResources = excluded;
  const selector = parseLabelSelector(form.labelSelector);
  if (selector.ok && selector.terms.length) spec.labelSelector = toLabelSelector(selector.terms);
  return spec;
}

export type NacKind = 'NonAdminBackup' | 'NonAdminRestore' | 'NonAdminSchedule' | 'NonAdminBackupStorageLocation';

/** The NAC object a create request makes (for "copy as YAML"). */
export function nacManifest<S>(kind: NacKind, namespace: string, name: string, spec: S) {
  return { apiVersion: 'oadp.openshift.io/v1alpha1', kind, metadata: { name, namespace }, spec };
}

/** `prefix-YYYYMMDDhhmmss` in UTC, cut so it stays a valid name of at most 63 characters. */
export function generatedName(prefix: string, at: Date): string {
  const stamp = at.toISOString().replace(/[-:TZ.]/g, '').slice(0, 14);
  const head = prefix.slice(0, 63 - stamp.length - 1).replace(/[^a-z0-9.-]/g, '-').replace(/[-.]+$/, '');
  return `${head || 'x'}-${stamp}`;
}

/** The Idempotency-Key for a body: the previous one while the body is unchanged, else a new one. */
export function idempotencyKeyFor(
  previous: { body: string; key: string } | null,
  body: string,
  newKey: () => string,
): { body: string; key: string } {
  return previous && previous.body === body ? previous : { body, key: newKey() };
}

/** A fresh Idempotency-Key (random UUID; `crypto.randomUUID` needs a secure context, hence the fallback). */
export function newIdempotencyKey(): string {
  const cryptoApi = globalThis.crypto;
  if (cryptoApi?.randomUUID) return cryptoApi.randomUUID();
  const bytes = new Uint8Array(16);
  if (cryptoApi?.getRandomValues) cryptoApi.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i += 1) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Spreads the server's field errors over a form, each field's messages in order: `map` turns a
 * server path (`spec.restoreSpec.includedResources[0]`) into a form field or null; unplaced errors are kept.
 */
export function fieldErrorLists<F extends string>(
  errors: FieldError[] | undefined,
  map: (path: string) => F | null,
): { byField: Partial<Record<F, string[]>>; unplaced: FieldError[] } {
  const byField: Partial<Record<F, string[]>> = {};
  const unplaced: FieldError[] = [];
  for (const error of errors ?? []) {
    const field = map(error.field);
    if (field === null) unplaced.push(error);
    else (byField[field] ??= []).push(error.message);
  }
  return { byField, unplaced };
}

/** Like `fieldErrorLists`, with each field's messages joined into one text. */
export function placeFieldErrors<F extends string>(
  errors: FieldError[] | undefined,
  map: (path: string) => F | null,
): { byField: Partial<Record<F, string>>; unplaced: FieldError[] } {
  const lists = fieldErrorLists(errors, map);
  const byField: Partial<Record<F, string>> = {};
  for (const [field, messages] of Object.entries(lists.byField) as [F, string[]][]) byField[field] = messages.join(' ');
  return { byField, unplaced: lists.unplaced };
}

/** A server path without its prefix and indexes: `spec.restoreSpec.labelSelector.matchLabels` → `labelSelector.matchLabels`. */
export function relativePath(path: string, prefix: string): string | null {
  const clean = path.replace(/\[\d+\]/g, '');
  if (clean === prefix) return '';
  return clean.startsWith(prefix + '.') ? clean.slice(prefix.length + 1) : null;
}

/** Single-quotes a word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The field errors of a refused create: 422 field errors placed by `map`, and 409
 * "already exists" on the name field. Null for other failures (shown as a whole).
 */
export function refusalToFieldErrors<F extends string>(
  error: unknown,
  map: (path: string) => F | null,
  nameField: F,
): { byField: Partial<Record<F, string>>; unplaced: FieldError[] } | null {
  if (!(error instanceof ApiError)) return null;
  if (error.status === 422 && error.problem?.errors?.length) return placeFieldErrors(error.problem.errors, map);
  if (error.status === 409 && error.problem?.code === 'already-exists') {
    const byField: Partial<Record<F, string>> = {};
    byField[nameField] = error.problem.detail;
    return { byField, unplaced: [] };
  }
  return null;
}
