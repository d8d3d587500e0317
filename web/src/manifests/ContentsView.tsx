// The contents browser of a completed backup (`GET …/contents`): counts by kind (each one a
// filter), filters by kind, name text and label selector (sent to the server), pages of items
// with "load more" (`continue`), and the manifest.json download.
import { useEffect, useState } from 'react';
import {
  Button,
  Content,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  HelperText,
  HelperTextItem,
  Label,
  LabelGroup,
  TextInput,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { api } from '../api/client';
import type { ContentsQuery, ManifestItem } from '../api/types';
import { DownloadLink } from '../components/LogText';
import { ErrorAlert } from '../components/ErrorAlert';
import { parseLabelSelector } from '../lib/labelSelector';
import { fmt, t } from '../strings';
import { contentsQuery, isFiltered, itemKey, kindFilterValue, kindTitle, labelsText, manifestDownloadPath, NO_FILTER, type ContentsFilter } from './contents';
import { manifestNotice, useManifestRead } from './ManifestRead';
import { HiddenNotice } from './HiddenNotice';

/** One page of a backup's contents. */
function readContents(namespace: string, name: string, query: ContentsQuery, signal?: AbortSignal) {
  return api.get('/api/v1/namespaces/{namespace}/backups/{name}/contents', { path: { namespace, name }, query, signal });
}

/** Typing settles this long before the server is asked. */
const TYPING_MS = 300;

/** `running`: the backup may still change; `completed`: it finished with data (a manifest is expected). */
export function ContentsView({ namespace, name, running, completed }: { namespace: string; name: string; running: boolean; completed: boolean }) {
  const c = t.manifests.contents;
  const [filter, setFilter] = useState<ContentsFilter>(NO_FILTER);
  const [search, setSearch] = useState('');
  const [selector, setSelector] = useState('');
  const selectorCheck = parseLabelSelector(selector);

  // Text filters apply once typing settles (a valid selector only).
  useEffect(() => {
    const timer = setTimeout(() => setFilter((current) => (current.q === search ? current : { ...current, q: search })), TYPING_MS);
    return () => clearTimeout(timer);
  }, [search]);
  const selectorOk = selectorCheck.ok;
  useEffect(() => {
    if (!selectorOk) return;
    const timer = setTimeout(() => setFilter((current) => (current.labelSelector === selector ? current : { ...current, labelSelector: selector })), TYPING_MS);
    return () => clearTimeout(timer);
  }, [selector, selectorOk]);

  const key = `${namespace}/${name}/contents?${JSON.stringify(filter)}`;
  const read = useManifestRead((signal) => readContents(namespace, name, contentsQuery(filter), signal), key, !running, completed);

  // Further pages, appended; they belong to one first page (a new filter starts over).
  const [more, setMore] = useState<{ key: string; items: ManifestItem[]; next: string | null }>();
  const [moreError, setMoreError] = useState<unknown>();
  const [loadingMore, setLoadingMore] = useState(false);
  // Set while rendering (React's pattern for state that follows a value).
  const [firstPage, setFirstPage] = useState({ key, data: read.data });
  if (firstPage.key !== key || firstPage.data !== read.data) {
    setFirstPage({ key, data: read.data });
    setMore(undefined);
    setMoreError(undefined);
  }

  const notice = manifestNotice(read, running);
  if (notice) return <div data-testid="contents-view">{notice}</div>;
  const page = read.data!;
  const extra = more?.key === key ? more : undefined;
  const items = [...page.items, ...(extra?.items ?? [])];
  const next = extra ? extra.next : (page.continue ?? null);

  const loadMore = async () => {
    if (!next) return;
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const answer = await readContents(namespace, name, contentsQuery(filter, next));
      setMore({ key, items: [...(extra?.items ?? []), ...answer.items], next: answer.continue ?? null });
    } catch (error) {
      setMoreError(error);
    } finally {
      setLoadingMore(false);
    }
  };

  const clear = () => {
    setSearch('');
    setSelector('');
    setFilter(NO_FILTER);
  };

  return (
    <div data-testid="contents-view">
      <Content component="p">{c.intro}</Content>
      <Content component="p" data-testid="contents-total">
        {fmt(c.total, { total: page.total, kinds: page.counts.length })}
        {isFiltered(filter) ? ` · ${fmt(c.matched, { matched: page.matched, total: page.total })}` : ''}
      </Content>
      <HiddenNotice hidden={page.hidden} />
      <LabelGroup categoryName={c.countsLabel} numLabels={12} isCompact data-testid="contents-counts">
        {page.counts.map((count) => {
          const value = kindFilterValue(count);
          const selected = filter.kind === value;
          return (
            <Label
              key={value}
              isCompact
              color={selected ? 'blue' : 'grey'}
              variant={selected ? 'filled' : 'outline'}
              onClick={() => setFilter((current) => ({ ...current, kind: selected ? '' : value }))}
              data-testid="contents-count"
              data-kind={count.kind}
            >
              {fmt(c.countLabel, { kind: kindTitle(count), count: count.count })}
            </Label>
          );
        })}
      </LabelGroup>
      <Toolbar>
        <ToolbarContent>
          <ToolbarGroup variant="filter-group">
            <ToolbarItem>
              <FormSelect value={filter.kind} onChange={(_event, value) => setFilter((current) => ({ ...current, kind: value }))} aria-label={c.kindFilter} data-testid="contents-kind">
                <FormSelectOption value="" label={c.kindAll} />
                {page.counts.map((count) => (
                  <FormSelectOption key={kindFilterValue(count)} value={kindFilterValue(count)} label={`${kindTitle(count)} (${count.count})`} />
                ))}
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem>
              <TextInput type="search" value={search} onChange={(_event, value) => setSearch(value)} aria-label={c.search} placeholder={c.searchPlaceholder} data-testid="contents-search" />
            </ToolbarItem>
            <ToolbarItem>
              <TextInput
                type="search"
                value={selector}
                onChange={(_event, value) => setSelector(value)}
                aria-label={c.selector}
                placeholder={c.selectorPlaceholder}
                validated={selectorCheck.ok ? 'default' : 'error'}
                data-testid="contents-selector"
              />
              {!selectorCheck.ok && (
                <FormHelperText>
                  <HelperText>
                    <HelperTextItem variant="error" data-testid="contents-selector-error">
                      {fmt(t.backups.validation.selectorInvalid, { error: selectorCheck.error })}
                    </HelperTextItem>
                  </HelperText>
                </FormHelperText>
              )}
            </ToolbarItem>
            {(isFiltered(filter) || search || selector) && (
              <ToolbarItem>
                <Button variant="link" onClick={clear} data-testid="contents-clear">
                  {c.clear}
                </Button>
              </ToolbarItem>
            )}
          </ToolbarGroup>
        </ToolbarContent>
      </Toolbar>
      {read.error ? <ErrorAlert error={read.error} onRetry={read.reload} /> : null}
      {items.length === 0 ? (
        <Content component="p" data-testid="contents-empty">
          {c.none}
        </Content>
      ) : (
        <Table aria-label={fmt(c.tableLabel, { name })} variant="compact" gridBreakPoint="grid-md" data-testid="contents-table">
          <Thead>
            <Tr>
              <Th>{c.kind}</Th>
              <Th>{c.name}</Th>
              <Th>{c.namespace}</Th>
              <Th>{c.labels}</Th>
              <Th>{c.owners}</Th>
            </Tr>
          </Thead>
          <Tbody>
            {items.map((item) => (
              <Tr key={itemKey(item)} data-testid="contents-item" data-kind={item.kind} data-name={item.name}>
                <Td dataLabel={c.kind}>
                  {kindTitle(item)} <small>{item.version}</small>
                </Td>
                <Td dataLabel={c.name}>{item.name}</Td>
                <Td dataLabel={c.namespace}>{item.namespace ?? <small>{c.clusterScoped}</small>}</Td>
                <Td dataLabel={c.labels}>{labelsText(item.labels) ? <code>{labelsText(item.labels)}</code> : t.common.none}</Td>
                <Td dataLabel={c.owners}>{item.owners?.length ? item.owners.length : t.common.none}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      )}
      {items.length > 0 && (
        <Content component="small" data-testid="contents-shown">
          {fmt(c.shown, { shown: items.length, matched: page.matched })}
        </Content>
      )}
      <ErrorAlert error={moreError} onRetry={() => void loadMore()} />
      {next && (
        <div>
          <Button variant="secondary" onClick={() => void loadMore()} isLoading={loadingMore} isDisabled={loadingMore} data-testid="contents-more">
            {c.loadMore}
          </Button>
        </div>
      )}
      <DownloadLink href={manifestDownloadPath(namespace, name)} fileName={`${name}-manifest.json`} label={c.download} testId="manifest-download" />
    </div>
  );
}
