// The administrator's rules for one kind of spec (restore, backup template, storage location) as
// the forms use them: what is enforced, defaulted, capped or allow-listed for a field, and why a
// value breaks a rule. Mirrors src/policy/rules.rs (unset = absent, null or ""; durations are
// compared by length). Shared by the restore wizard, the schedule and storage-location forms.
import type { RulesView } from '../api/types';
import { parseGoDuration } from './duration';
import { fmt, t } from '../strings';

/** The rules on one field path (relative to the spec), each present only when the admin set it. */
export interface FieldRule {
  enforced?: unknown;
  default?: unknown;
  maximum?: unknown;
  allowed?: unknown[];
}

/** Whether a value counts as unset for the policy (absent, null or the empty string). */
export function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/** The rules on `path`, e.g. `existingResourcePolicy` or `objectStorage.bucket`. */
export function ruleFor(rules: RulesView | undefined, path: string): FieldRule {
  const rule: FieldRule = {};
  if (!rules) return rule;
  if (Object.prototype.hasOwnProperty.call(rules.enforced ?? {}, path)) rule.enforced = rules.enforced[path];
  if (Object.prototype.hasOwnProperty.call(rules.defaults ?? {}, path)) rule.default = rules.defaults[path];
  if (Object.prototype.hasOwnProperty.call(rules.maximum ?? {}, path)) rule.maximum = rules.maximum[path];
  const allowed = (rules.allowed ?? {})[path];
  if (Array.isArray(allowed)) rule.allowed = allowed;
  return rule;
}

function sameValue(a: unknown, b: unknown, duration: boolean): boolean {
  if (duration && typeof a === 'string' && typeof b === 'string') {
    const left = parseGoDuration(a);
    const right = parseGoDuration(b);
    if (left !== null && right !== null) return left === right;
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Fields whose values are Go durations (src/policy/rules.rs DURATION_FIELDS). */
const DURATION_FIELDS = ['ttl', 'csiSnapshotTimeout', 'itemOperationTimeout', 'backupSyncPeriod', 'validationFrequency', 'timeout', 'execTimeout', 'waitTimeout'];

export function isDurationPath(path: string): boolean {
  return DURATION_FIELDS.includes(path.split('.').pop() ?? '');
}

/** The short text of a rule value ("update", "720h0m0s", "app=web", "[a, b]"). */
export function formatRuleValue(value: unknown): string {
  if (value === null || value === undefined) return t.restores.policy.unsetValue;
  if (typeof value === 'string') return value === '' ? t.restores.policy.unsetValue : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map(formatRuleValue).join(', ');
  return JSON.stringify(value);
}

/**
 * Why `value` at `path` breaks the rules, or null. An unset value is fine unless an allow-list
 * without `null` exists (the server then refuses it); an enforced field may only hold its value.
 */
export function ruleViolation(rules: RulesView | undefined, path: string, value: unknown): string | null {
  const rule = ruleFor(rules, path);
  const duration = isDurationPath(path);
  const unset = isUnset(value) || (Array.isArray(value) && value.length === 0);
  if (rule.enforced !== undefined && !unset && !sameValue(value, rule.enforced, duration)) {
    return fmt(t.restores.policy.violatesEnforced, { value: formatRuleValue(rule.enforced) });
  }
  if (rule.allowed) {
    if (unset) {
      if (!rule.allowed.includes(null) && rule.enforced === undefined && rule.default === undefined) {
        return fmt(t.restores.policy.violatesAllowedUnset, { values: formatRuleValue(rule.allowed.filter((v) => v !== null)) });
      }
    } else {
      const values: unknown[] = Array.isArray(value) ? value : [value];
      const refused = values.find((item) => !rule.allowed!.some((allowed) => sameValue(item, allowed, duration)));
      if (refused !== undefined) {
        return fmt(t.restores.policy.violatesAllowed, { value: formatRuleValue(refused), values: formatRuleValue(rule.allowed.filter((v) => v !== null)) });
      }
    }
  }
  if (rule.maximum !== undefined && !unset) {
    if (duration && typeof value === 'string' && typeof rule.maximum === 'string') {
      const seconds = parseGoDuration(value);
      const maximum = parseGoDuration(rule.maximum);
      if (seconds !== null && maximum !== null && seconds > maximum) return fmt(t.restores.policy.violatesMaximum, { value: rule.maximum });
    } else if (typeof value === 'number' && typeof rule.maximum === 'number' && value > rule.maximum) {
      return fmt(t.restores.policy.violatesMaximum, { value: String(rule.maximum) });
    }
  }
  return null;
}

/** The choices a select may offer: those the allow-list names (all when there is none). */
export function allowedChoices<T>(rules: RulesView | undefined, path: string, choices: T[]): T[] {
  const rule = ruleFor(rules, path);
  if (rule.enforced !== undefined) return choices.filter((choice) => sameValue(choice, rule.enforced, false));
  if (!rule.allowed) return choices;
  return choices.filter((choice) => rule.allowed!.some((allowed) => sameValue(choice, allowed, false)));
}

/** The value a field takes when the tenant leaves it unset: enforced, else default, else `fallback`. */
export function implicitValue<T>(rules: RulesView | undefined, path: string, fallback: T): T {
  const rule = ruleFor(rules, path);
  if (rule.enforced !== undefined && !isUnset(rule.enforced)) return rule.enforced as T;
  if (rule.default !== undefined && !isUnset(rule.default)) return rule.default as T;
  return fallback;
}

export type RuleKind = 'enforced' | 'default' | 'maximum' | 'allowed';

export interface RuleLine {
  path: string;
  kind: RuleKind;
  value: string;
}

/** Every rule as one line for the "what the administrator sets" panel, sorted by field. */
export function ruleLines(rules: RulesView | undefined): RuleLine[] {
  if (!rules) return [];
  const lines: RuleLine[] = [];
  for (const [path, value] of Object.entries(rules.enforced ?? {})) lines.push({ path, kind: 'enforced', value: formatRuleValue(value) });
  for (const [path, value] of Object.entries(rules.defaults ?? {})) lines.push({ path, kind: 'default', value: formatRuleValue(value) });
  for (const [path, value] of Object.entries(rules.maximum ?? {})) lines.push({ path, kind: 'maximum', value: formatRuleValue(value) });
  for (const [path, value] of Object.entries(rules.allowed ?? {})) {
    lines.push({ path, kind: 'allowed', value: formatRuleValue((value as unknown[]).map((v) => (v === null ? t.restores.policy.unsetValue : v))) });
  }
  const order: RuleKind[] = ['enforced', 'default', 'maximum', 'allowed'];
  return lines.sort((a, b) => a.path.localeCompare(b.path) || order.indexOf(a.kind) - order.indexOf(b.kind));
}

/** A helper text for one field: "Set by the administrator to X" / "Default: X" / "At most X" / "One of: …". */
export function ruleHint(rules: RulesView | undefined, path: string): string | null {
  const rule = ruleFor(rules, path);
  if (rule.enforced !== undefined) return fmt(t.restores.policy.hintEnforced, { value: formatRuleValue(rule.enforced) });
  const parts: string[] = [];
  if (rule.default !== undefined) parts.push(fmt(t.restores.policy.hintDefault, { value: formatRuleValue(rule.default) }));
  if (rule.maximum !== undefined) parts.push(fmt(t.restores.policy.hintMaximum, { value: formatRuleValue(rule.maximum) }));
  if (rule.allowed) parts.push(fmt(t.restores.policy.hintAllowed, { values: formatRuleValue(rule.allowed.map((v) => (v === null ? t.restores.policy.unsetValue : v))) }));
  return parts.length ? parts.join(' · ') : null;
}
