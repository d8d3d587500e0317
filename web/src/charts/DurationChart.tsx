// Durations over time: one dot per finished operation (green succeeded, red failed) with the
// range's median and 95th percentile as dashed lines.
import { t } from '../strings';
import { totalsOf, type DurationPoint, type TimeBucket } from '../history/buckets';
import { durationSummary, durationTick, periodLabel, pointTitle, preciseDuration, shortDay } from '../history/chartText';
import { ChartSvg, CHART_HEIGHT, HiddenDataTable, Legend, XLabels, YAxis, chartColors, useChartWidth } from './ChartParts';
import { durationTicks, labelIndices, labelsThatFit, linearScale, plotFrame } from './scale';

export function DurationChart({ points, buckets, from, to }: { points: DurationPoint[]; buckets: TimeBucket[]; from: number; to: number }) {
  const [ref, width] = useChartWidth();
  const frame = plotFrame(width, CHART_HEIGHT);
  const totals = totalsOf(buckets);
  const maxSeconds = Math.max(1, ...points.map((point) => point.durationMs / 1000));
  const ticks = durationTicks(maxSeconds, 4);
  const y = linearScale([0, ticks[ticks.length - 1]], [frame.bottom, frame.top]);
  const x = linearScale([from, to], [frame.left + 4, frame.right - 4]);
  const dayStarts = buckets.map((bucket) => Math.max(bucket.start, from));
  const shown = labelIndices(dayStarts.length, labelsThatFit(frame.right - frame.left));
  const words = t.history.charts;
  const percentileLine = (ms: number | null, label: string) =>
    ms === null ? null : (
      <g>
        <line x1={frame.left} x2={frame.right} y1={y(ms / 1000)} y2={y(ms / 1000)} stroke={chartColors.line} strokeWidth={1.5} strokeDasharray="6 3" />
        <text
          x={frame.left + 4}
          y={y(ms / 1000) - 4}
          textAnchor="start"
          fill={chartColors.line}
          stroke={chartColors.halo}
          strokeWidth={3}
          paintOrder="stroke"
          data-testid="duration-percentile"
        >
          {`${label} ${preciseDuration(ms / 1000)}`}
        </text>
      </g>
    );
  return (
    <figure ref={ref} style={{ margin: 0 }} data-testid="duration-chart">
      <ChartSvg width={width} height={CHART_HEIGHT} label={durationSummary(points, buckets, from, to)} testId="duration-svg">
        <YAxis frame={frame} ticks={ticks} y={y} label={durationTick} />
        {points.map((point) => (
          <circle
            key={point.id}
            cx={x(point.at)}
            cy={y(point.durationMs / 1000)}
            r={3.5}
            fill={point.outcome === 'failed' ? chartColors.danger : chartColors.success}
            fillOpacity={0.8}
            data-testid="duration-point"
          >
            <title>{pointTitle(point)}</title>
          </circle>
        ))}
        {percentileLine(totals.p95DurationMs, words.p95)}
        {percentileLine(totals.p50DurationMs, words.p50)}
        <XLabels frame={frame} labels={shown.map((index) => ({ x: x(dayStarts[index]), text: shortDay(buckets[index].start) }))} />
      </ChartSvg>
      <Legend
        entries={[
          { color: chartColors.success, label: words.legendSucceeded, shape: 'dot' },
          { color: chartColors.danger, label: words.legendFailed, shape: 'dot' },
          { color: chartColors.line, label: `${words.p50} / ${words.p95}`, shape: 'dash' },
        ]}
      />
      <HiddenDataTable
        testId="duration-table"
        caption={words.durationTitle}
        headers={[words.period, words.operations, words.p50, words.p95]}
        rows={buckets.map((bucket) => [
          periodLabel(bucket),
          bucket.durationsMs.length,
          bucket.p50DurationMs === null ? t.common.none : preciseDuration(bucket.p50DurationMs / 1000),
          bucket.p95DurationMs === null ? t.common.none : preciseDuration(bucket.p95DurationMs / 1000),
        ])}
      />
    </figure>
  );
}

