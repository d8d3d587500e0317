// What a backup would take (the answer of `POST …/backups?dryRun=true`): counts by kind, the
// items, the lists the user could not read, and running operations it would wait on.
import { useEffect, useRef, useState } from 'react';
import { Alert, Content, ExpandableSection, List, ListItem, Title } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { BackupDryRun } from '../api/types';
import { fmt, t } from '../strings';
import { itemKey, kindFilterValue, kindTitle, labelsText } from './contents';
import { OverlapList } from './OverlapList';
import { HiddenNotice } from './HiddenNotice';

/** Items listed at most (the counts cover all of them). */
export const DRY_RUN_ITEMS_SHOWN = 500;

export function DryRunResult({ result, namespace, stale }: { result: BackupDryRun; namespace: string; stale: boolean }) {
  const d = t.manifests.dryRun;
  const [showItems, setShowItems] = useState(true);
  const shown = result.items.slice(0, DRY_RUN_ITEMS_SHOWN);
  // A new answer is scrolled to: it appears below the form.
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    ref.current?.scrollIntoView?.({ block: 'start', behavior: 'smooth' });
  }, [result]);
  return (
    <section ref={ref} data-testid="dry-run-result" aria-label={d.title}>
      <Title headingLevel="h2" size="lg">
        {d.title}
      </Title>
      <Content component="p">{fmt(d.intro, { namespace })}</Content>
      {stale && <Alert variant="warning" isInline isPlain title={d.stale} data-testid="dry-run-stale" />}
      <Content component="p" data-testid="dry-run-total">
        <strong>{fmt(d.total, { total: result.totalItems, kinds: result.counts.length })}</strong>
      </Content>
      {result.totalItems === 0 && <Alert variant="info" isInline isPlain title={d.empty} data-testid="dry-run-empty" />}
      {result.unreadable.length > 0 && (
        <Alert variant="warning" isInline title={fmt(d.unreadableTitle, { count: result.unreadable.length })} data-testid="dry-run-unreadable">
          <p>{d.unreadableBody}</p>
          <List>
            {result.unreadable.map((list) => (
              <ListItem key={`${kindFilterValue(list)}/${list.namespace ?? ''}`}>
                {fmt(d.unreadableItem, { resource: kindFilterValue(list), reason: list.reason, message: list.message })}
              </ListItem>
            ))}
          </List>
        </Alert>
      )}
      <HiddenNotice hidden={result.hidden} />
      <OverlapList overlaps={result.overlaps} />
      {result.counts.length > 0 && (
        <Table aria-label={d.countsLabel} variant="compact" gridBreakPoint="" data-testid="dry-run-counts">
          <Thead>
            <Tr>
              <Th>{t.manifests.contents.kind}</Th>
              <Th>{d.count}</Th>
            </Tr>
          </Thead>
          <Tbody>
            {result.counts.map((count) => (
              <Tr key={kindFilterValue(count)} data-testid="dry-run-count" data-kind={count.kind}>
                <Td dataLabel={t.manifests.contents.kind}>{kindTitle(count)}</Td>
                <Td dataLabel={d.count}>{count.count}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      )}
      {result.items.length > 0 && (
        <ExpandableSection
          toggleText={showItems ? d.itemsHide : fmt(d.itemsToggle, { count: result.items.length })}
          isExpanded={showItems}
          onToggle={(_event, expanded) => setShowItems(expanded)}
          data-testid="dry-run-items-toggle"
        >
          <Table aria-label={d.itemsLabel} variant="compact" gridBreakPoint="grid-md" data-testid="dry-run-items">
            <Thead>
              <Tr>
                <Th>{t.manifests.contents.kind}</Th>
                <Th>{t.manifests.contents.name}</Th>
                <Th>{t.manifests.contents.labels}</Th>
              </Tr>
            </Thead>
            <Tbody>
              {shown.map((item) => (
                <Tr key={itemKey(item)} data-testid="dry-run-item" data-kind={item.kind} data-name={item.name}>
                  <Td dataLabel={t.manifests.contents.kind}>{kindTitle(item)}</Td>
                  <Td dataLabel={t.manifests.contents.name}>{item.name}</Td>
                  <Td dataLabel={t.manifests.contents.labels}>{labelsText(item.labels) ? <code>{labelsText(item.labels)}</code> : t.common.none}</Td>
                </Tr>
              ))}
            </Tbody>
          </Table>
          {shown.length < result.items.length && <Content component="small">{fmt(d.shownFirst, { count: shown.length })}</Content>}
        </ExpandableSection>
      )}
    </section>
  );
}
