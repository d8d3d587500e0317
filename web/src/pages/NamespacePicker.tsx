// The namespace picker (`/`): only the namespaces where I may use backups, each a card that
// opens its dashboard in one click, with what I may do there (view, back up, restore,
// schedule, storage locations, download) and how fresh its newest backup is; a filter box
// when there are many; a clear empty state when there are none. Never redirects, even with
// one namespace.
import { useState } from 'react';
import { Content, EmptyState, EmptyStateBody, Gallery, PageSection, SearchInput, Spinner, Title } from '@patternfly/react-core';
import CubesIcon from '@patternfly/react-icons/dist/esm/icons/cubes-icon';
import { ErrorAlert } from '../components/ErrorAlert';
import { useNamespaces } from '../namespaces';
import { fmt, t } from '../strings';
import { NamespaceCard } from '../overview/NamespaceCard';
import { FILTER_FROM, filterNamespaces } from '../overview/namespaces';

export default function NamespacePicker() {
  const { data, error, loading, reload } = useNamespaces();
  const [query, setQuery] = useState('');
  const words = t.overview.picker;
  const all = data ?? [];
  const shown = filterNamespaces(all, query);
  return (
    <PageSection data-testid="namespace-picker">
      <Title headingLevel="h1">{words.title}</Title>
      <Content component="p">{words.intro}</Content>
      {error ? (
        <ErrorAlert error={error} onRetry={reload} />
      ) : loading && !data ? (
        <Spinner aria-label={t.app.loading} />
      ) : all.length === 0 ? (
        <EmptyState titleText={words.emptyTitle} headingLevel="h2" icon={CubesIcon} data-testid="namespaces-empty">
          <EmptyStateBody>{words.empty}</EmptyStateBody>
        </EmptyState>
      ) : (
        <>
          {all.length >= FILTER_FROM && (
            <div style={{ maxWidth: '24rem', margin: '1rem 0' }}>
              <SearchInput
                aria-label={words.filter}
                placeholder={words.filterPlaceholder}
                value={query}
                onChange={(_event, value) => setQuery(value)}
                onClear={() => setQuery('')}
                data-testid="namespace-filter"
              />
            </div>
          )}
          <Content component="small" data-testid="namespace-count" aria-live="polite">
            {shown.length === 1 ? words.countOne : fmt(words.count, { count: shown.length })}
          </Content>
          {shown.length === 0 ? (
            <p data-testid="namespaces-no-match">{fmt(words.noMatch, { query: query.trim() })}</p>
          ) : (
            <Gallery hasGutter minWidths={{ default: '100%', sm: '18rem' }} style={{ marginTop: '1rem' }}>
              {shown.map((access) => (
                <NamespaceCard key={access.name} access={access} />
              ))}
            </Gallery>
          )}
        </>
      )}
    </PageSection>
  );
}
