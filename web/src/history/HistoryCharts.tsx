// The history page's charts and statistics for the selected range: success rate per day,
// durations, and the stats API's numbers per kind.
import { Card, CardBody, CardTitle, Content, Grid, GridItem, Skeleton } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { NamespaceStatistics } from '../api/types';
import { DurationChart } from '../charts/DurationChart';
import { SuccessRateChart } from '../charts/SuccessRateChart';
import { ErrorAlert } from '../components/ErrorAlert';
import { rateOf } from '../overview/rates';
import { fmt, t } from '../strings';
import { bucketByPeriod, bucketDaysFor, durationPoints } from './buckets';
import { percent, periodWord, preciseDuration } from './chartText';
import { CHARTED_KINDS } from './filters';
import { kindLabel } from './operations';
import type { ChartData } from './useHistory';

/** The stats of the range, one row per kind. */
export function StatsTable({ stats }: { stats: NamespaceStatistics }) {
  const words = t.history.stats;
  if (stats.kinds.length === 0) return <p data-testid="history-stats-empty">{words.empty}</p>;
  const duration = (ms: number | null | undefined) => (typeof ms === 'number' ? preciseDuration(ms / 1000) : t.common.none);
  return (
    <Table aria-label={words.title} variant="compact" gridBreakPoint="grid-md" data-testid="history-stats">
      <Thead>
        <Tr>
          <Th modifier="wrap">{words.kind}</Th>
          <Th modifier="wrap">{words.total}</Th>
          <Th modifier="wrap">{words.succeeded}</Th>
          <Th modifier="wrap">{words.failed}</Th>
          <Th modifier="wrap">{words.successRate}</Th>
          <Th modifier="wrap">{words.p50}</Th>
          <Th modifier="wrap">{words.p95}</Th>
        </Tr>
      </Thead>
      <Tbody>
        {stats.kinds.map((kind) => {
          const rate = rateOf(kind);
          return (
            <Tr key={kind.kind} data-testid="history-stats-row" data-kind={kind.kind}>
              <Td dataLabel={words.kind}>{kindLabel(kind.kind)}</Td>
              <Td dataLabel={words.total}>{kind.total}</Td>
              <Td dataLabel={words.succeeded}>{rate.finished - rate.failed}</Td>
              <Td dataLabel={words.failed}>{rate.failed}</Td>
              <Td dataLabel={words.successRate}>{rate.failureRate === null ? t.common.none : percent(1 - rate.failureRate)}</Td>
              <Td dataLabel={words.p50}>{duration(kind.p50DurationMs)}</Td>
              <Td dataLabel={words.p95}>{duration(kind.p95DurationMs)}</Td>
            </Tr>
          );
        })}
      </Tbody>
    </Table>
  );
}

export function HistoryCharts({ data, error, loading, onRetry, kind }: { data: ChartData | null | undefined; error: unknown; loading: boolean; onRetry: () => void; kind: string }) {
  const words = t.history.charts;
  if (error) return <ErrorAlert error={error} onRetry={onRetry} />;
  if (!data) return loading ? <Skeleton height="240px" screenreaderText={t.app.loading} /> : null;
  const { from, to } = data.window;
  const days = bucketDaysFor(from, to);
  const buckets = bucketByPeriod(data.operations, from, to, days);
  const points = durationPoints(data.operations, from, to);
  const kinds = (kind ? [kind] : CHARTED_KINDS).map((name) => kindLabel(name).toLowerCase()).join(', ');
  const anyFinished = buckets.some((bucket) => bucket.succeeded + bucket.failed > 0);
  return (
    <Grid hasGutter data-testid="history-charts">
      <GridItem md={6}>
        <Card isFullHeight>
          <CardTitle component="h2">{fmt(words.successTitle, { period: periodWord(days) })}</CardTitle>
          <CardBody>{anyFinished ? <SuccessRateChart buckets={buckets} days={days} from={from} to={to} /> : <p data-testid="chart-empty">{words.empty}</p>}</CardBody>
        </Card>
      </GridItem>
      <GridItem md={6}>
        <Card isFullHeight>
          <CardTitle component="h2">{words.durationTitle}</CardTitle>
          <CardBody>{points.length > 0 ? <DurationChart points={points} buckets={buckets} from={from} to={to} /> : <p>{words.empty}</p>}</CardBody>
        </Card>
      </GridItem>
      <GridItem md={12}>
        <Content component="small" data-testid="chart-basis">
          {data.capped ? fmt(words.capped, { count: data.operations.length }) : fmt(words.basis, { count: data.operations.length, kinds })}
        </Content>
      </GridItem>
      {data.stats && (
        <GridItem md={12}>
          <Card>
            <CardTitle component="h2">{t.history.stats.title}</CardTitle>
            <CardBody>
              <StatsTable stats={data.stats} />
            </CardBody>
          </Card>
        </GridItem>
      )}
    </Grid>
  );
}
