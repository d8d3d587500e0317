// Success rate per day (or week) as bars: the green part is the share that succeeded, the red
// part on top the share that failed; periods where nothing finished show a grey tick.
import { fmt, t } from '../strings';
import type { TimeBucket } from '../history/buckets';
import { barTitle, percent, periodLabel, periodWord, shortDay, successSummary } from '../history/chartText';
import { ChartSvg, CHART_HEIGHT, HiddenDataTable, Legend, XLabels, YAxis, chartColors, useChartWidth } from './ChartParts';
import { bandLayout, labelIndices, labelsThatFit, linearScale, plotFrame } from './scale';

const PERCENT_TICKS = [0, 25, 50, 75, 100];

export function SuccessRateChart({ buckets, days, from, to }: { buckets: TimeBucket[]; days: number; from: number; to: number }) {
  const [ref, width] = useChartWidth();
  const frame = plotFrame(width, CHART_HEIGHT);
  const y = linearScale([0, 100], [frame.bottom, frame.top]);
  const bands = bandLayout(buckets.length, frame.left, frame.right, buckets.length > 40 ? 0.1 : 0.25, 56);
  const shown = labelIndices(buckets.length, labelsThatFit(frame.right - frame.left));
  const summary = successSummary(buckets, days, from, to);
  const words = t.history.charts;
  return (
    <figure ref={ref} style={{ margin: 0 }} data-testid="success-rate-chart">
      <ChartSvg width={width} height={CHART_HEIGHT} label={summary} testId="success-rate-svg">
        <YAxis frame={frame} ticks={PERCENT_TICKS} y={y} label={(value) => fmt(words.percent, { value })} />
        {buckets.map((bucket, index) => {
          const band = bands[index];
          const finished = bucket.succeeded + bucket.failed;
          if (finished === 0) {
            return (
              <g key={bucket.start} data-testid="success-bar-empty">
                <title>{barTitle(bucket)}</title>
                <rect x={band.x} y={frame.bottom - 2} width={band.width} height={2} fill={chartColors.neutral} />
              </g>
            );
          }
          const rateTop = y((bucket.successRate ?? 0) * 100);
          return (
            <g key={bucket.start} data-testid="success-bar">
              <title>{barTitle(bucket)}</title>
              <rect x={band.x} y={y(100)} width={band.width} height={rateTop - y(100)} fill={chartColors.danger} />
              <rect x={band.x} y={rateTop} width={band.width} height={frame.bottom - rateTop} fill={chartColors.success} />
            </g>
          );
        })}
        <XLabels frame={frame} labels={shown.map((index) => ({ x: bands[index].center, text: shortDay(buckets[index].start) }))} />
      </ChartSvg>
      <Legend
        entries={[
          { color: chartColors.success, label: words.legendSucceeded },
          { color: chartColors.danger, label: words.legendFailed },
        ]}
      />
      <HiddenDataTable
        testId="success-rate-table"
        caption={fmt(words.successTitle, { period: periodWord(days) })}
        headers={[words.period, words.succeeded, words.failed, words.unfinished, words.rate]}
        rows={buckets.map((bucket) => [
          periodLabel(bucket),
          bucket.succeeded,
          bucket.failed,
          bucket.unfinished,
          bucket.successRate === null ? words.noFinished : percent(bucket.successRate),
        ])}
      />
    </figure>
  );
}
