// The restore wizard's preview (`POST …/restores?dryRun=true` with the wizard's request): what
// the restore would do with each object, in the order it processes them — Create, Update, Skip,
// Fail or Undetermined, and why — the totals, and running operations it would wait on.
import { useMemo, useState } from 'react';
import {
  Button,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  FormSelect,
  FormSelectOption,
  Label,
  Spinner,
  Stack,
  Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { api } from '../api/client';
import type { RestorePreview } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { useLoad } from '../hooks';
import { fmt, t } from '../strings';
import { kindTitle } from './contents';
import { OverlapList } from './OverlapList';
import { actionColor, entriesWith, previewTotals, RESTORE_ACTIONS } from './preview';
import { HiddenNotice } from './HiddenNotice';

/** Entries listed at most (the totals cover all of them). */
export const PREVIEW_ENTRIES_SHOWN = 500;

export function RestorePreviewPanel({ namespace, request }: { namespace: string; request: { name: string; spec: { restoreSpec: { backupName: string } } } }) {
  const p = t.manifests.preview;
  const body = JSON.stringify(request);
  const loaded = useLoad(
    async (signal): Promise<RestorePreview> => {
      const answer = await api.post('/api/v1/namespaces/{namespace}/restores', { path: { namespace }, query: { dryRun: true }, body: request, signal });
      // A dry run answers 200 with the preview (201 and 202 are a created restore).
      if (!('entries' in answer)) throw new Error('the gateway created a restore instead of previewing it');
      return answer;
    },
    `${namespace}/${body}`,
  );
  const [action, setAction] = useState('');
  const rows = useMemo(() => entriesWith(loaded.data?.entries ?? [], action), [loaded.data, action]);
  const preview = loaded.data;

  return (
    <Stack hasGutter data-testid="restore-preview">
      <Title headingLevel="h2" size="lg">
        {p.title}
      </Title>
      <Content component="p">{fmt(p.intro, { backup: request.spec.restoreSpec.backupName, namespace })}</Content>
      {loaded.error ? <ErrorAlert error={loaded.error} onRetry={loaded.reload} /> : null}
      {loaded.loading && <Spinner size="lg" aria-label={p.loading} data-testid="preview-loading" />}
      {preview && !loaded.loading && (
        <>
          <HiddenNotice hidden={preview.hidden} />
          <DescriptionList isHorizontal isCompact isAutoColumnWidths columnModifier={{ default: '2Col', lg: '3Col' }} aria-label={p.counts} data-testid="preview-counts">
            {previewTotals(preview.counts).map((total) => (
              <DescriptionListGroup key={total.key} data-testid="preview-count" data-key={total.key}>
                <DescriptionListTerm>{total.label}</DescriptionListTerm>
                <DescriptionListDescription>{total.value}</DescriptionListDescription>
              </DescriptionListGroup>
            ))}
          </DescriptionList>
          <OverlapList overlaps={preview.overlaps} />
          {preview.entries.length === 0 ? (
            <Content component="p" data-testid="preview-empty">
              {p.empty}
            </Content>
          ) : (
            <>
              <FormSelect value={action} onChange={(_event, value) => setAction(value)} aria-label={p.filter} data-testid="preview-filter" style={{ maxWidth: '20rem' }}>
                <FormSelectOption value="" label={`${p.filterAll} (${preview.entries.length})`} />
                {RESTORE_ACTIONS.map((value) => {
                  const count = preview.entries.filter((entry) => entry.action === value).length;
                  return count > 0 ? <FormSelectOption key={value} value={value} label={`${value} (${count})`} /> : null;
                })}
              </FormSelect>
              {rows.length === 0 ? (
                <Content component="p" data-testid="preview-none">
                  {p.none}
                </Content>
              ) : (
                <Table aria-label={p.tableLabel} variant="compact" gridBreakPoint="grid-md" data-testid="preview-table">
                  <Thead>
                    <Tr>
                      <Th>{p.order}</Th>
                      <Th>{p.action}</Th>
                      <Th width={25}>{p.object}</Th>
                      <Th width={15}>{p.reason}</Th>
                      <Th width={40}>{p.message}</Th>
                    </Tr>
                  </Thead>
                  <Tbody>
                    {rows.slice(0, PREVIEW_ENTRIES_SHOWN).map(({ entry, position }) => (
                      <Tr key={position} data-testid="preview-entry" data-action={entry.action} data-name={entry.name}>
                        <Td dataLabel={p.order}>{position}</Td>
                        <Td dataLabel={p.action}>
                          <Label isCompact color={actionColor(entry.action)}>
                            {entry.action}
                          </Label>
                        </Td>
                        <Td dataLabel={p.object} modifier="breakWord">
                          {kindTitle(entry)} <code>{(entry.targetNamespace ?? entry.namespace) ? `${entry.targetNamespace ?? entry.namespace}/${entry.name}` : entry.name}</code>
                        </Td>
                        <Td dataLabel={p.reason}>{entry.reason}</Td>
                        <Td dataLabel={p.message} modifier="breakWord">
                          {entry.message}
                          {entry.warning ? <small> ({p.warning})</small> : null}
                        </Td>
                      </Tr>
                    ))}
                  </Tbody>
                </Table>
              )}
              {rows.length > PREVIEW_ENTRIES_SHOWN && <Content component="small">{fmt(p.shownFirst, { count: PREVIEW_ENTRIES_SHOWN })}</Content>}
            </>
          )}
          <div>
            <Button variant="secondary" onClick={loaded.reload} data-testid="preview-refresh">
              {p.refresh}
            </Button>
          </div>
        </>
      )}
    </Stack>
  );
}
