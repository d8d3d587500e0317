// "Why did this fail": groups the messages of Velero's results by namespace, resource kind and
// common cause, after the failure reason and validation errors, for the top of a failed backup
// or restore.
import { descriptionConditions, type ConditionFacts, type Description } from '../api/types';
import { fmt } from '../strings';

/** One severity of Velero's results file (`pkg/util/results.Result`). */
export interface VeleroResultSet {
  velero?: string[] | null;
  cluster?: string[] | null;
  namespaces?: Record<string, string[] | null> | null;
}

/** Velero's results artifact: `{errors: {...}, warnings: {...}}`. */
export interface VeleroResults {
  errors?: VeleroResultSet | null;
  warnings?: VeleroResultSet | null;
}

/** The parts of one results message. */
export interface ParsedResultMessage {
  /** What Velero was doing ("Error backing up item"), when the message says. */
  context?: string;
  resource?: string;
  name?: string;
  namespace?: string;
  /** The underlying error, normalized so that the same problem on other objects reads the same. */
  cause: string;
}

export type FailureScope = 'velero' | 'cluster' | 'namespace';

export interface FailureGroup {
  severity: 'error' | 'warning';
  scope: FailureScope;
  namespace?: string;
  resource?: string;
  context?: string;
  cause: string;
  count: number;
  /** Distinct object names the group concerns, in order of appearance. */
  objects: string[];
  /** The original messages (at most three), for the details. */
  examples: string[];
}

export interface FailureSummary {
  /** Failed, FailedValidation or a refused request (as opposed to partially failed). */
  failed: boolean;
  partiallyFailed: boolean;
  failureReason?: string;
  validationErrors: string[];
  /** NAC's refusal (condition Accepted=False). */
  refusal?: string;
  errorGroups: FailureGroup[];
  warningGroups: FailureGroup[];
  /** Messages in the results, or Velero's counters when there are no results. */
  errorCount: number;
  warningCount: number;
  hasResults: boolean;
}

const FAILED_PHASES = new Set(['Failed', 'FailedValidation']);
const PARTIAL_PHASES = new Set(['PartiallyFailed', 'WaitingForPluginOperationsPartiallyFailed', 'FinalizingPartiallyFailed']);

/** Whether a backup's description calls for the failure summary. */
export function needsFailureSummary(description: Pick<Description, 'veleroPhase' | 'requestPhase' | 'conditions'> | null | undefined): boolean {
  if (!description) return false;
  const phase = description.veleroPhase ?? '';
  return FAILED_PHASES.has(phase) || PARTIAL_PHASES.has(phase) || !!refusalOf(descriptionConditions(description));
}

function refusalOf(conditions: ConditionFacts[] | undefined): string | undefined {
  const accepted = conditions?.find((condition) => condition.type === 'Accepted');
  if (!accepted || accepted.status !== 'False') return undefined;
  return accepted.message || accepted.reason || accepted.type;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Replaces what differs between objects (their name, quoted names, ids) so causes group. */
export function normalizeCause(text: string, name?: string): string {
  let cause = text.trim();
  // gRPC errors of plugins: the useful part is after the last "desc = ".
  const desc = cause.lastIndexOf('desc = ');
  if (desc >= 0 && desc + 7 < cause.length) cause = cause.slice(desc + 7);
  if (name) cause = cause.replace(new RegExp(`(?<![A-Za-z0-9-])${escapeRegExp(name)}(?![A-Za-z0-9-])`, 'g'), '…');
  cause = cause
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '…')
    .replace(/\s+/g, ' ')
    .replace(/[.\s]+$/, '');
  return cause;
}

/**
 * Reads one message of Velero's results. Understands Velero ≥ 1.11's
 * `MSG resource: /R name: /N error: /E`, the plugin form
 * `error executing custom action (groupResource=R, namespace=NS, name=N): E`, and restore's
 * `could not restore, Kind "name" already exists…`; anything else is its own cause.
 */
export function parseResultMessage(message: string): ParsedResultMessage {
  let text = message.trim().replace(/^message: \//, '');
  const markers = [' resource: /', ' name: /', ' error: /'] as const;
  if (markers.some((marker) => text.includes(marker))) {
    const found: Record<string, string> = {};
    const positions = markers
      .map((marker) => ({ marker, at: text.indexOf(marker) }))
      .filter((p) => p.at >= 0)
      .sort((a, b) => a.at - b.at);
    const context = text.slice(0, positions[0].at).trim();
    positions.forEach((position, index) => {
      const end = index + 1 < positions.length ? positions[index + 1].at : text.length;
      found[position.marker] = text.slice(position.at + position.marker.length, end).trim();
    });
    const resource = found[' resource: /'] || undefined;
    const name = found[' name: /'] || undefined;
    const error = found[' error: /'];
    const inner = error ? parseResultMessage(error) : undefined;
    return {
      // Without an error part the context is the cause itself.
      context: error ? context || undefined : undefined,
      resource: resource ?? inner?.resource,
      name: name ?? inner?.name,
      namespace: inner?.namespace,
      cause: error ? normalizeCause(inner?.cause ?? error, name ?? inner?.name) : normalizeCause(context, name),
    };
  }
  const action = /^(.*?)\(groupResource=([^,]+), namespace=([^,]*), name=([^)]+)\):\s*(.*)$/s.exec(text);
  if (action) {
    const [, context, resource, namespace, name, error] = action;
    return {
      context: context.trim() || undefined,
      resource: resource.trim(),
      namespace: namespace.trim() || undefined,
      name: name.trim(),
      cause: normalizeCause(error || context, name.trim()),
    };
  }
  const kindAndName = /^(.*?)\b([A-Z][A-Za-z0-9]+) "([^"]+)"(.*)$/s.exec(text);
  if (kindAndName) {
    const [, before, kind, name, after] = kindAndName;
    text = `${before}${kind} "…"${after}`;
    return { resource: kind, name, cause: normalizeCause(text, name) };
  }
  return { cause: normalizeCause(text) };
}

function groupMessages(severity: FailureGroup['severity'], set: VeleroResultSet | null | undefined): FailureGroup[] {
  const groups = new Map<string, FailureGroup>();
  const add = (scope: FailureScope, namespace: string | undefined, message: string) => {
    const parsed = parseResultMessage(message);
    const ns = namespace ?? parsed.namespace;
    const key = [scope, ns ?? '', parsed.resource ?? '', parsed.context ?? '', parsed.cause].join('\u0000');
    let group = groups.get(key);
    if (!group) {
      group = { severity, scope, namespace: ns, resource: parsed.resource, context: parsed.context, cause: parsed.cause, count: 0, objects: [], examples: [] };
      groups.set(key, group);
    }
    group.count += 1;
    if (parsed.name && !group.objects.includes(parsed.name)) group.objects.push(parsed.name);
    if (group.examples.length < 3) group.examples.push(message);
  };
  for (const message of set?.velero ?? []) add('velero', undefined, message);
  for (const message of set?.cluster ?? []) add('cluster', undefined, message);
  for (const [namespace, messages] of Object.entries(set?.namespaces ?? {})) {
    for (const message of messages ?? []) add('namespace', namespace, message);
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.cause.localeCompare(b.cause));
}

const countOf = (groups: FailureGroup[]) => groups.reduce((sum, group) => sum + group.count, 0);

/** The summary of a failed or partially failed backup (or restore) from its results and description. */
export function summarizeFailure(
  results: VeleroResults | null | undefined,
  description: Pick<Description, 'veleroPhase' | 'requestPhase' | 'conditions' | 'failureReason' | 'validationErrors' | 'errors' | 'warnings'> | null | undefined,
): FailureSummary {
  const phase = description?.veleroPhase ?? '';
  const refusal = refusalOf(description ? descriptionConditions(description) : undefined);
  const errorGroups = groupMessages('error', results?.errors);
  const warningGroups = groupMessages('warning', results?.warnings);
  const hasResults = !!results;
  return {
    failed: FAILED_PHASES.has(phase) || (!!refusal && !PARTIAL_PHASES.has(phase)),
    partiallyFailed: PARTIAL_PHASES.has(phase),
    failureReason: description?.failureReason || undefined,
    validationErrors: description?.validationErrors ?? [],
    refusal,
    errorGroups,
    warningGroups,
    errorCount: hasResults ? countOf(errorGroups) : (description?.errors ?? 0),
    warningCount: hasResults ? countOf(warningGroups) : (description?.warnings ?? 0),
    hasResults,
  };
}

/** How a page names the scopes of its groups (`scopeNamespace` holds `{namespace}`). */
export interface ScopeWords {
  scopeVelero: string;
  scopeCluster: string;
  scopeNamespace: string;
}

/** Where a group happened, in words: "Velero", "cluster-scoped resources", "namespace team-a". */
export function scopeText(group: Pick<FailureGroup, 'scope' | 'namespace'>, words: ScopeWords): string {
  if (group.scope === 'velero') return words.scopeVelero;
  if (group.scope === 'cluster') return words.scopeCluster;
  return fmt(words.scopeNamespace, { namespace: group.namespace ?? '' });
}
