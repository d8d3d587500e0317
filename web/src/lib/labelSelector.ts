// Kubernetes label selectors as people type them (`app=web,tier!=db,env in (prod,qa),!legacy`):
// parsing with precise errors, conversion to a LabelSelector object and back, and matching.
import { fmt, t } from '../strings';

const v = t.backups.validation;

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** The Kubernetes `metav1.LabelSelector` shape. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** One term of a selector. `=`/`==` are kept apart from `in` so `app=web` stays `matchLabels`. */
export interface SelectorTerm {
  key: string;
  operator: 'Equals' | 'NotEquals' | 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values: string[];
}

export type SelectorParse = { ok: true; terms: SelectorTerm[] } | { ok: false; error: string };

const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key is invalid, or null (`prefix/name`: prefix a DNS subdomain, name ≤ 63). */
export function labelKeyError(key: string): string | null {
  if (!key) return v.selectorKeyEmpty;
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (!prefix || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return fmt(v.selectorKeyPrefix, { key });
  }
  if (!name || name.length > 63 || !NAME.test(name)) {
    return fmt(v.selectorKeyName, { key });
  }
  return null;
}

/** Why a label value is invalid, or null (empty, or ≤ 63 like a key's name). */
export function labelValueError(value: string): string | null {
  if (value === '') return null;
  if (value.length > 63 || !NAME.test(value)) {
    return fmt(v.selectorValue, { value });
  }
  return null;
}

/** Splits at commas that are not inside parentheses. */
function splitTerms(text: string): string[] | null {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (depth < 0 || depth > 1) return null;
    if (char === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (depth !== 0) return null;
  terms.push(current);
  return terms;
}

function parseTerm(raw: string): SelectorTerm | string {
  const term = raw.trim();
  if (!term) return v.selectorEmptyTerm;
  const setMatch = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
  if (setMatch) {
    const values = setMatch[3].split(',').map((v) => v.trim());
    if (values.length === 1 && values[0] === '') return fmt(v.selectorEmptySet, { term });
    return { key: setMatch[1], operator: setMatch[2] === 'in' ? 'In' : 'NotIn', values };
  }
  if (/\s(in|notin)\s*\(/.test(term) || term.includes('(')) return fmt(v.selectorBadSet, { term });
  const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (equality) {
    const operator = equality[2] === '!=' ? 'NotEquals' : 'Equals';
    return { key: equality[1], operator, values: [equality[3].trim()] };
  }
  if (term.startsWith('!')) return { key: term.slice(1).trim(), operator: 'DoesNotExist', values: [] };
  if (/\s/.test(term)) return fmt(v.selectorBadTerm, { term });
  return { key: term, operator: 'Exists', values: [] };
}

/** Parses a selector; an empty text is the empty selector (matches everything). */
export function parseLabelSelector(text: string): SelectorParse {
  if (!text.trim()) return { ok: true, terms: [] };
  const pieces = splitTerms(text);
  if (!pieces) return { ok: false, error: v.selectorUnbalanced };
  const terms: SelectorTerm[] = [];
  for (const piece of pieces) {
    const term = parseTerm(piece);
    if (typeof term === 'string') return { ok: false, error: term };
    const keyError = labelKeyError(term.key);
    if (keyError) return { ok: false, error: keyError };
    for (const value of term.values) {
      const valueError = labelValueError(value);
      if (valueError) return { ok: false, error: valueError };
    }
    terms.push(term);
  }
  return { ok: true, terms };
}

/** The LabelSelector object of parsed terms (`=` → matchLabels, the rest → matchExpressions). */
export function toLabelSelector(terms: SelectorTerm[]): LabelSelector {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: LabelSelectorRequirement[] = [];
  for (const term of terms) {
    switch (term.operator) {
      case 'Equals':
        matchLabels[term.key] = term.values[0];
        break;
      case 'NotEquals':
        matchExpressions.push({ key: term.key, operator: 'NotIn', values: term.values });
        break;
      case 'In':
      case 'NotIn':
        matchExpressions.push({ key: term.key, operator: term.operator, values: term.values });
        break;
      default:
        matchExpressions.push({ key: term.key, operator: term.operator });
    }
  }
  const selector: LabelSelector = {};
  if (Object.keys(matchLabels).length) selector.matchLabels = matchLabels;
  if (matchExpressions.length) selector.matchExpressions = matchExpressions;
  return selector;
}

/** The text form of a LabelSelector object (for showing enforced selectors and CLI flags). */
export function formatLabelSelector(selector: LabelSelector | null | undefined): string {
  if (!selector) return '';
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const requirement of selector.matchExpressions ?? []) {
    const values = (requirement.values ?? []).join(',');
    if (requirement.operator === 'In') parts.push(`${requirement.key} in (${values})`);
    else if (requirement.operator === 'NotIn') parts.push(`${requirement.key} notin (${values})`);
    else if (requirement.operator === 'Exists') parts.push(requirement.key);
    else parts.push(`!${requirement.key}`);
  }
  return parts.join(',');
}

/** Whether every term holds for `labels`. */
export function matchesTerms(terms: SelectorTerm[], labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  return terms.every((term) => {
    const present = Object.prototype.hasOwnProperty.call(have, term.key);
    const value = have[term.key];
    switch (term.operator) {
      case 'Equals':
        return present && value === term.values[0];
      case 'NotEquals':
        return !present || value !== term.values[0];
      case 'In':
        return present && term.values.includes(value);
      case 'NotIn':
        return !present || !term.values.includes(value);
      case 'Exists':
        return present;
      case 'DoesNotExist':
        return !present;
    }
  });
}
