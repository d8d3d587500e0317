// Items done of total as a progress bar (an empty bar until Velero knows the total).
import { Progress, ProgressMeasureLocation, ProgressSize, ProgressVariant } from '@patternfly/react-core';
import { percentDone } from '../format';
import { fmt, t } from '../strings';

export function ItemsProgress({ done, total, phase, label }: { done?: number | null; total?: number | null; phase?: string | null; label: string }) {
  const percent = percentDone(done, total);
  if (percent === null) return <span>{t.common.none}</span>;
  const variant = phase === 'Failed' ? ProgressVariant.danger : phase === 'Completed' ? ProgressVariant.success : phase === 'PartiallyFailed' ? ProgressVariant.warning : undefined;
  return (
    <Progress
      value={percent}
      size={ProgressSize.sm}
      measureLocation={ProgressMeasureLocation.outside}
      label={fmt(t.common.items, { done: done ?? 0, total: total ?? 0 })}
      valueText={fmt(t.common.items, { done: done ?? 0, total: total ?? 0 })}
      aria-label={label}
      variant={variant}
    />
  );
}
