// A coloured label for a request or Velero phase.
import { Label } from '@patternfly/react-core';

type Color = 'green' | 'red' | 'orange' | 'blue' | 'grey' | 'purple' | 'teal';

/** The colour a phase is shown in (pure). */
export function phaseColor(phase: string | null | undefined): Color {
  switch (phase) {
    case 'Completed':
    case 'Processed':
    case 'Available':
    case 'Approved':
    case 'Enabled':
      return 'green';
    case 'Failed':
    case 'FailedValidation':
    case 'BackingOff':
    case 'Unavailable':
    case 'Rejected':
      return 'red';
    case 'PartiallyFailed':
    case 'Deleting':
    case 'WaitingForPluginOperationsPartiallyFailed':
    case 'FinalizingPartiallyFailed':
      return 'orange';
    case 'InProgress':
    case 'Finalizing':
    case 'WaitingForPluginOperations':
      return 'blue';
    case 'Queued':
    case 'ReadyToStart':
    case 'New':
    case 'Created':
    case 'Pending':
      return 'teal';
    default:
      return 'grey';
  }
}

export function PhaseLabel({ phase }: { phase: string | null | undefined }) {
  return (
    <Label color={phaseColor(phase)} isCompact data-testid="phase">
      {phase ?? '—'}
    </Label>
  );
}
