// The parts of the live list pages (restores, storage locations, schedules): the create link, the
// error / loading / empty states around the table, ages and times with their exact value on
// hover, and a row's delete button.
import type { ReactElement, ReactNode } from 'react';
import { Button, EmptyState, EmptyStateActions, EmptyStateBody, EmptyStateFooter, Spinner, Tooltip } from '@patternfly/react-core';
import TrashIcon from '@patternfly/react-icons/dist/esm/icons/trash-icon';
import { formatAge, formatTimestamp } from '../format';
import type { Loaded } from '../hooks';
import { ErrorAlert } from './ErrorAlert';
import { ButtonLink, WhyNot } from './WhyNot';

/** The primary "create" link, aria-disabled with the reason when the user may not create. */
export function CreateLink({ to, allowed, deniedReason, label, testId }: { to: string; allowed: boolean; deniedReason: string; label: string; testId: string }) {
  return (
    <WhyNot reason={!allowed && deniedReason}>
      <ButtonLink variant="primary" to={to} isAriaDisabled={!allowed} data-testid={testId}>
        {label}
      </ButtonLink>
    </WhyNot>
  );
}

export interface EmptyList {
  title: string;
  body: string;
  testId: string;
  /** What to do about it (the create link). */
  action: ReactElement;
}

/**
 * A list's body: the error when nothing could be loaded, a spinner until the first answer, the
 * empty state, else a reload error (if any) above `children`.
 */
export function ListBody({ list, isEmpty, loadingLabel, empty, children }: { list: Loaded<unknown>; isEmpty: boolean; loadingLabel: string; empty: EmptyList; children: ReactNode }) {
  if (list.error && !list.data) return <ErrorAlert error={list.error} onRetry={list.reload} />;
  if (!list.data) return <Spinner aria-label={loadingLabel} />;
  if (isEmpty) {
    return (
      <EmptyState titleText={empty.title} headingLevel="h2" data-testid={empty.testId}>
        <EmptyStateBody>{empty.body}</EmptyStateBody>
        <EmptyStateFooter>
          <EmptyStateActions>{empty.action}</EmptyStateActions>
        </EmptyStateFooter>
      </EmptyState>
    );
  }
  return (
    <>
      {list.error ? <ErrorAlert error={list.error} onRetry={list.reload} /> : null}
      {children}
    </>
  );
}

/** How long ago `at` was ("5m"), with the exact time in a tooltip. */
export function Age({ at, now }: { at: string | null | undefined; now: number }) {
  return <Timestamped at={at}>{formatAge(at, now)}</Timestamped>;
}

/** `children` (an age, "in 4m"…), focusable, with the exact time of `at` in a tooltip. */
export function Timestamped({ at, children }: { at: string | null | undefined; children: ReactNode }) {
  return (
    <Tooltip content={formatTimestamp(at)}>
      <span tabIndex={0}>{children}</span>
    </Tooltip>
  );
}

/** A row's trash-can button; aria-disabled with the reason when the user may not delete. */
export function RowDeleteButton({ label, allowed, deniedReason, onClick, testId }: { label: string; allowed: boolean; deniedReason: string; onClick: () => void; testId: string }) {
  return (
    <Tooltip content={allowed ? label : deniedReason}>
      <Button variant="plain" aria-label={label} icon={<TrashIcon />} onClick={onClick} isAriaDisabled={!allowed} data-testid={testId} />
    </Tooltip>
  );
}
