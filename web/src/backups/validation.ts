// Field checks of the backup form, run as the user types: names, Go durations, resource names,
// and the administrator's maxima and allow-lists. Each returns an error text or null.
import { parseGoDuration } from '../lib/duration';
import { isSubdomain } from '../lib/fields';
import { fmt, t } from '../strings';

const v = t.backups.validation;


/** A Kubernetes object name (lowercase RFC 1123 subdomain, at most 253 characters). */
export function validateObjectName(name: string): string | null {
  if (!name) return v.required;
  if (name.length > 253) return v.nameTooLong;
  if (!isSubdomain(name)) return v.nameInvalid;
  return null;
}

/** A duration field: a Go duration, and not longer than `maximum` (itself a Go duration) when given. */
export function validateDuration(text: string, maximum?: unknown): string | null {
  if (!text.trim()) return null;
  const seconds = parseGoDuration(text);
  if (seconds === null || seconds < 0) return fmt(v.durationInvalid, { value: text });
  if (typeof maximum === 'string') {
    const limit = parseGoDuration(maximum);
    if (limit !== null && seconds > limit) return fmt(v.durationTooLong, { value: text.trim(), maximum });
  }
  return null;
}

/** Splits a comma- or space-separated list, dropping empty entries. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((item) => item.trim())
    .filter(Boolean);
}

/** Resource names (`deployments`, `deployments.apps`, `*`), each optionally from an allow-list. */
export function validateResources(text: string, allowed?: unknown[]): string | null {
  for (const item of splitList(text)) {
    if (item !== '*' && !isSubdomain(item)) return fmt(v.resourceInvalid, { value: item });
    if (allowed && allowed.length && !allowed.includes(item)) {
      return fmt(v.notAllowed, { value: item, allowed: allowedText(allowed) });
    }
  }
  return null;
}

/** An allow-list as text (null, "unset", left out). */
function allowedText(allowed: unknown[]): string {
  return allowed
    .filter((value) => value !== null)
    .map((value) => (typeof value === 'string' ? value : JSON.stringify(value)))
    .join(', ');
}

/** A value that must be on an allow-list (an empty value passes only when the list holds null). */
export function validateAllowed(value: string, allowed?: unknown[]): string | null {
  if (!allowed || !allowed.length) return null;
  if (!value) return allowed.includes(null) ? null : v.required;
  if (allowed.includes(value)) return null;
  return fmt(v.notAllowed, { value, allowed: allowedText(allowed) });
}
