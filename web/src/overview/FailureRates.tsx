// The dashboard's failure rates: per kind, over the last 7 and the last 30 days.
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { NamespaceStatistics } from '../api/types';
import { kindLabel } from '../history/operations';
import { fmt, t } from '../strings';
import { kindRates, percentText, type KindRate } from './rates';

function RateCell({ rate }: { rate: KindRate | undefined }) {
  const words = t.overview.dashboard.rates;
  if (!rate || rate.failureRate === null) return <span>{words.noneFinished}</span>;
  const color =
    rate.failureRate === 0
      ? 'var(--pf-t--global--text--color--status--success--default)'
      : rate.failureRate >= 0.2
        ? 'var(--pf-t--global--text--color--status--danger--default)'
        : 'var(--pf-t--global--text--color--status--warning--default)';
  return (
    <span>
      <strong style={{ color }}>{fmt(words.rate, { percent: percentText(rate.failureRate) })}</strong>
      <br />
      <small>{fmt(words.failed, { failed: rate.failed, finished: rate.finished })}</small>
    </span>
  );
}

export function FailureRates({ last7, last30 }: { last7: NamespaceStatistics | undefined; last30: NamespaceStatistics | undefined }) {
  const words = t.overview.dashboard.rates;
  const week = kindRates(last7);
  const month = kindRates(last30);
  const kinds = month.map((rate) => rate.kind);
  if (kinds.length === 0) return <p data-testid="failure-rates-empty">{words.empty}</p>;
  return (
    <Table aria-label={words.title} variant="compact" data-testid="failure-rates">
      <Thead>
        <Tr>
          <Th>{words.kind}</Th>
          <Th>{words.last7}</Th>
          <Th>{words.last30}</Th>
        </Tr>
      </Thead>
      <Tbody>
        {kinds.map((kind) => (
          <Tr key={kind} data-testid="failure-rate-row" data-kind={kind}>
            <Td dataLabel={words.kind}>{kindLabel(kind)}</Td>
            <Td dataLabel={words.last7} data-testid="failure-rate-7d">
              <RateCell rate={week.find((rate) => rate.kind === kind)} />
            </Td>
            <Td dataLabel={words.last30} data-testid="failure-rate-30d">
              <RateCell rate={month.find((rate) => rate.kind === kind)} />
            </Td>
          </Tr>
        ))}
      </Tbody>
    </Table>
  );
}
