// History of a namespace (`/ns/:namespace/history`): every operation, filterable (kind, phase,
// text, time range — kept in the URL), keyset-paged with "load more", each row expanding to its
// timeline; charts of the success rate per day and of durations, and the range's statistics.
// Live: refreshes on the namespace's change events.
import { useCallback, useMemo } from 'react';
import { useParams, useSearchParams } from 'react-router';
import {
  Button,
  Card,
  CardBody,
  CardTitle,
  Content,
  EmptyState,
  EmptyStateBody,
  Flex,
  FlexItem,
  PageSection,
  Spinner,
} from '@patternfly/react-core';
import SearchIcon from '@patternfly/react-icons/dist/esm/icons/search-icon';
import { ErrorAlert } from '../components/ErrorAlert';
import { LiveHeading } from '../components/PageHeading';
import { useLoad, useNow } from '../hooks';
import { fmt, t } from '../strings';
import { HistoryCharts } from '../history/HistoryCharts';
import { HistoryFiltersBar } from '../history/HistoryFiltersBar';
import { HistoryTable } from '../history/HistoryTable';
import { DEFAULT_FILTERS, filtersFromSearch, filtersToSearch, isFiltered, windowOf, type HistoryFilters } from '../history/filters';
import { loadChartData, useHistoryPages } from '../history/useHistory';
import { useDebounced, useReloadOnChanges } from '../queue/live';

export default function History() {
  const { namespace = '' } = useParams();
  const [search, setSearch] = useSearchParams();
  const filters = useMemo(() => filtersFromSearch(search), [search]);
  const setFilters = useCallback((next: HistoryFilters) => setSearch(filtersToSearch(next), { replace: true }), [setSearch]);
  const now = useNow(15_000);
  const problem = windowOf(filters, now).problem;
  const words = t.history;

  const pages = useHistoryPages(namespace, filters);
  const chartKey = `${namespace}|${filters.kind}|${filters.range}|${filters.from}|${filters.to}`;
  const charts = useLoad((signal) => loadChartData(namespace, filters, Date.now(), signal), chartKey);

  // One event stream: the table refreshes quickly, the heavier charts less often.
  const refreshCharts = useDebounced(charts.reload, 3000);
  const stream = useReloadOnChanges(
    namespace,
    () => true,
    () => {
      pages.refresh();
      refreshCharts();
    },
    500,
  );

  return (
    <>
      <PageSection data-testid="history-page">
        <LiveHeading title={words.title} stream={stream} intro={fmt(words.intro, { namespace })} />
        <HistoryFiltersBar filters={filters} onChange={setFilters} problem={problem} />
      </PageSection>
      {!problem && (
        <PageSection>
          <HistoryCharts data={charts.data} error={charts.error} loading={charts.loading} onRetry={charts.reload} kind={filters.kind} />
        </PageSection>
      )}
      <PageSection>
        <Card>
          <CardTitle component="h2">{words.table.title}</CardTitle>
          <CardBody>
            {pages.error ? (
              <ErrorAlert error={pages.error} onRetry={pages.reload} />
            ) : pages.loading && pages.items.length === 0 ? (
              <Spinner aria-label={t.app.loading} />
            ) : pages.items.length === 0 ? (
              <EmptyState titleText={words.table.emptyTitle} headingLevel="h2" icon={SearchIcon} data-testid="history-empty">
                <EmptyStateBody>{isFiltered(filters) ? words.table.emptyFiltered : fmt(words.table.empty, { namespace })}</EmptyStateBody>
                {isFiltered(filters) && (
                  <Button variant="link" onClick={() => setFilters(DEFAULT_FILTERS)}>
                    {words.filters.clear}
                  </Button>
                )}
              </EmptyState>
            ) : (
              <>
                <HistoryTable namespace={namespace} operations={pages.items} now={now} />
                <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }} style={{ marginTop: '1rem' }}>
                  <FlexItem>
                    <Content component="small" data-testid="history-count" aria-live="polite">
                      {fmt(pages.hasMore ? words.table.shown : words.table.allShown, { count: pages.items.length })}
                    </Content>
                  </FlexItem>
                  {pages.hasMore && (
                    <FlexItem>
                      <Button variant="secondary" onClick={pages.loadMore} isLoading={pages.loadingMore} isDisabled={pages.loadingMore} data-testid="history-load-more">
                        {pages.loadingMore ? words.table.loadingMore : words.table.loadMore}
                      </Button>
                    </FlexItem>
                  )}
                </Flex>
                {!!pages.moreError && <ErrorAlert error={pages.moreError} onRetry={pages.loadMore} />}
              </>
            )}
          </CardBody>
        </Card>
      </PageSection>
    </>
  );
}
