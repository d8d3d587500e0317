// Comparing a completed backup with another of its namespace (`GET …/diff?against=`): the user
// picks the other backup; the earlier of the two is the baseline, so "added" means "new since".
// Added and removed items are listed, changed ones with what changed.
import { useState } from 'react';
import { Content, FormGroup, FormSelect, FormSelectOption, List, ListItem, Spinner, Stack, Title } from '@patternfly/react-core';
import { api } from '../api/client';
import type { ManifestItem, NonAdminBackup } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { useLoad } from '../hooks';
import { listAll } from '../lib/listAll';
import { fmt, t } from '../strings';
import { identityText, itemKey, kindTitle } from './contents';
import { backupFinishedAt, comparableBackups, describeChange, diffDirection } from './diff';
import { manifestNotice, useManifestRead } from './ManifestRead';
import { HiddenNotice } from './HiddenNotice';

function ItemList({ items, testId }: { items: ManifestItem[]; testId: string }) {
  if (items.length === 0) return <Content component="p">{t.manifests.compare.nothing}</Content>;
  return (
    <List isPlain data-testid={testId}>
      {items.map((item) => (
        <ListItem key={itemKey(item)} data-testid="compare-item" data-name={item.name}>
          {kindTitle(item)} <code>{item.namespace ? `${item.namespace}/${item.name}` : item.name}</code>
        </ListItem>
      ))}
    </List>
  );
}

export function CompareView({ namespace, backup }: { namespace: string; backup: NonAdminBackup }) {
  const c = t.manifests.compare;
  const name = backup.metadata.name;
  const others = useLoad((signal) => listAll(namespace, 'backups', signal).then((all) => comparableBackups(all.items, name)), `${namespace}/${name}/compare`);
  const [other, setOther] = useState('');
  const chosen = others.data?.find((candidate) => candidate.metadata.name === other);
  const direction = chosen ? diffDirection({ name, at: backupFinishedAt(backup) }, { name: other, at: backupFinishedAt(chosen) }) : null;
  const read = useManifestRead(
    async (signal) => {
      if (!direction) throw new Error('no backup to compare with');
      return api.get('/api/v1/namespaces/{namespace}/backups/{name}/diff', { path: { namespace, name: direction.name }, query: { against: direction.against }, signal });
    },
    `${namespace}/${direction?.name ?? ''}/diff?${direction?.against ?? ''}`,
    !!direction,
  );

  if (others.error) return <ErrorAlert error={others.error} onRetry={others.reload} />;
  if (!others.data) return <Spinner size="lg" aria-label={t.app.loading} />;
  if (others.data.length === 0) {
    return (
      <div data-testid="compare-view">
        <Content component="p" data-testid="compare-none">
          {c.noOthers}
        </Content>
      </div>
    );
  }
  const notice = direction ? manifestNotice(read, false) : null;
  const diff = read.data;
  return (
    <Stack hasGutter data-testid="compare-view">
      <Content component="p">{fmt(c.intro, { namespace })}</Content>
      <FormGroup label={c.with} fieldId="compare-with" style={{ maxWidth: '30rem' }}>
        <FormSelect id="compare-with" value={other} onChange={(_event, value) => setOther(value)} data-testid="compare-with">
          <FormSelectOption value="" label={c.choose} isPlaceholder />
          {others.data.map((candidate) => (
            <FormSelectOption key={candidate.metadata.name} value={candidate.metadata.name} label={candidate.metadata.name} />
          ))}
        </FormSelect>
      </FormGroup>
      {notice}
      {!notice && diff && direction && (
        <>
          {read.error ? <ErrorAlert error={read.error} onRetry={read.reload} /> : null}
          <Title headingLevel="h3" data-testid="compare-direction">
            {fmt(c.direction, { from: diff.from.name, to: diff.to.name })}
          </Title>
          <HiddenNotice hidden={diff.hidden} />
          <Content component="p" data-testid="compare-summary">
            {fmt(c.summary, { added: diff.added.length, removed: diff.removed.length, changed: diff.changed.length, unchanged: diff.unchanged })}
          </Content>
          {diff.added.length + diff.removed.length + diff.changed.length === 0 ? (
            <Content component="p" data-testid="compare-identical">
              {c.identical}
            </Content>
          ) : (
            <>
              <section>
                <Title headingLevel="h4">{fmt(c.added, { count: diff.added.length })}</Title>
                <Content component="small">{fmt(c.addedHelp, { to: diff.to.name })}</Content>
                <ItemList items={diff.added} testId="compare-added" />
              </section>
              <section>
                <Title headingLevel="h4">{fmt(c.removed, { count: diff.removed.length })}</Title>
                <Content component="small">{fmt(c.removedHelp, { from: diff.from.name })}</Content>
                <ItemList items={diff.removed} testId="compare-removed" />
              </section>
              <section>
                <Title headingLevel="h4">{fmt(c.changed, { count: diff.changed.length })}</Title>
                <Content component="small">{c.changedHelp}</Content>
                {diff.changed.length === 0 ? (
                  <Content component="p">{c.nothing}</Content>
                ) : (
                  <List isPlain data-testid="compare-changed">
                    {diff.changed.map((changed) => (
                      <ListItem key={identityText(changed.identity)} data-testid="compare-item" data-name={changed.identity.name}>
                        <code>{identityText(changed.identity)}</code>
                        <List>
                          {describeChange(changed).map((line) => (
                            <ListItem key={line} data-testid="compare-change">
                              {line}
                            </ListItem>
                          ))}
                        </List>
                      </ListItem>
                    ))}
                  </List>
                )}
              </section>
            </>
          )}
        </>
      )}
    </Stack>
  );
}
