// Velero's results of a backup (errors and warnings by scope: Velero, cluster, each namespace),
// with a download of the JSON; explains when they are not there yet or not allowed.
import { Alert, List, ListItem, Spinner, Title } from '@patternfly/react-core';
import { CopyAs } from '../components/CopyAs';
import { ErrorAlert } from '../components/ErrorAlert';
import { DownloadLink } from '../components/LogText';
import { fmt, t } from '../strings';
import { artifactNotReady, artifactPath } from '../lib/artifacts';
import { resultsAction } from './actions';
import type { VeleroResultSet, VeleroResults } from '../lib/failureSummary';

/** The messages of one severity by scope title, in a stable order (pure). */
export function resultSections(set: VeleroResultSet | null | undefined): { title: string; messages: string[] }[] {
  const r = t.backups.results;
  const sections: { title: string; messages: string[] }[] = [];
  if (set?.velero?.length) sections.push({ title: r.scopeVelero, messages: set.velero });
  if (set?.cluster?.length) sections.push({ title: r.scopeCluster, messages: set.cluster });
  for (const namespace of Object.keys(set?.namespaces ?? {}).sort()) {
    const messages = set?.namespaces?.[namespace] ?? [];
    if (messages.length) sections.push({ title: fmt(r.scopeNamespace, { namespace }), messages });
  }
  return sections;
}

const total = (sections: { messages: string[] }[]) => sections.reduce((sum, section) => sum + section.messages.length, 0);

export interface ResultsViewProps {
  namespace: string;
  name: string;
  results: VeleroResults | null | undefined;
  loading: boolean;
  error: unknown;
  canDownload: boolean | undefined;
  running: boolean;
  onRetry: () => void;
}

export function ResultsView({ namespace, name, results, loading, error, canDownload, running, onRetry }: ResultsViewProps) {
  const r = t.backups.results;
  if (canDownload === undefined) return <Spinner size="lg" aria-label={t.app.loading} />;
  if (!canDownload) return <Alert variant="warning" isInline title={t.backups.logs.noDownload} />;
  if (running || artifactNotReady(error)) return <Alert variant="info" isInline title={r.notYet} data-testid="results-not-yet" />;
  if (error) return <ErrorAlert error={error} onRetry={onRetry} />;
  if (loading && !results) return <Spinner size="lg" aria-label={t.app.loading} />;
  const errors = resultSections(results?.errors);
  const warnings = resultSections(results?.warnings);
  return (
    <div data-testid="results-view">
      {errors.length === 0 && warnings.length === 0 && <Alert variant="success" isInline isPlain title={r.none} />}
      {[
        { title: fmt(r.errors, { count: total(errors) }), sections: errors, testid: 'results-errors' },
        { title: fmt(r.warnings, { count: total(warnings) }), sections: warnings, testid: 'results-warnings' },
      ]
        .filter((severity) => severity.sections.length > 0)
        .map((severity) => (
          <section key={severity.testid} data-testid={severity.testid}>
            <Title headingLevel="h3">{severity.title}</Title>
            {severity.sections.map((section) => (
              <div key={section.title}>
                <Title headingLevel="h4">{section.title}</Title>
                <List>
                  {section.messages.map((message, index) => (
                    <ListItem key={index}>
                      <code>{message}</code>
                    </ListItem>
                  ))}
                </List>
              </div>
            ))}
          </section>
        ))}
      <DownloadLink href={artifactPath(namespace, 'backups', name, 'results')} fileName={`${name}-results.json`} label={r.download} testId="results-download" />
      <CopyAs title={r.download} action={resultsAction(namespace, name)} />
    </div>
  );
}
