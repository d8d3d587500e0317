// Failure rates per kind from the stats API, and the stats windows the dashboard asks for
// (pure; unit-tested in rates.test.ts).
import type { KindStatistics, NamespaceStatistics } from '../api/types';
import { FAILURE_PHASES, SUCCESS_PHASES } from '../history/buckets';

/** Kinds whose failure rate the dashboard shows. */
export const RATED_KINDS = ['backup', 'schedule_run', 'restore'] as const;

export interface KindRate {
  kind: string;
  total: number;
  /** Finished (succeeded or failed) operations. */
  finished: number;
  failed: number;
  /** failed / finished, or null when none finished. */
  failureRate: number | null;
}

/**
 * Finished and failed counts of one kind's `byPhase` (counted here rather than taken from
 * `successRate`, which treats a served download's `Processed` as not completed).
 */
export function rateOf(stats: KindStatistics): KindRate {
  const count = (phases: readonly string[]) => phases.reduce((sum, phase) => sum + (stats.byPhase[phase] ?? 0), 0);
  const succeeded = count(SUCCESS_PHASES);
  const failed = count(FAILURE_PHASES);
  const finished = succeeded + failed;
  return { kind: stats.kind, total: stats.total, finished, failed, failureRate: finished > 0 ? failed / finished : null };
}

/** One rate per rated kind present in the stats, in RATED_KINDS order. */
export function kindRates(stats: NamespaceStatistics | undefined): KindRate[] {
  if (!stats) return [];
  return RATED_KINDS.flatMap((kind) => {
    const entry = stats.kinds.find((candidate) => candidate.kind === kind);
    return entry ? [rateOf(entry)] : [];
  });
}

/** A failure rate as a whole percent ("33"), rounding up from zero so one failure never shows 0%. */
export function percentText(rate: number): string {
  const percent = rate * 100;
  if (percent > 0 && percent < 1) return '<1';
  return String(Math.round(percent));
}

/** The stats query of the last `days` days at `now`. */
export function lastDays(days: number, now: number): { from: string; to: string } {
  return { from: new Date(now - days * 86_400_000).toISOString(), to: new Date(now).toISOString() };
}
