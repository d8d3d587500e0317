// A small label saying whether a page follows live changes: "Live", connecting or reconnecting,
// or that live updates are off. Three wordings (each with its own data-testid) for the pages.
import { Label, type LabelProps } from '@patternfly/react-core';
import type { StreamState } from '../hooks';
import { t } from '../strings';

interface Wording {
  testId: string;
  /** What each state says; a state without a text renders a hidden placeholder. */
  texts: Partial<Record<StreamState, string>>;
  colors: Record<StreamState, LabelProps['color']>;
}

const COLORS: Wording['colors'] = { live: 'green', connecting: 'grey', reconnecting: 'grey', forbidden: 'orange' };

const WORDINGS = {
  /** Backups: every state spelled out. */
  detailed: {
    testId: 'stream-state',
    texts: { live: t.backups.list.streamLive, connecting: t.backups.list.streamConnecting, reconnecting: t.backups.list.streamReconnecting, forbidden: t.backups.list.streamForbidden },
    colors: COLORS,
  },
  /** Restores, storage locations and schedules: short words. */
  short: {
    testId: 'live-state',
    texts: { live: t.app.live, connecting: t.app.reconnecting, reconnecting: t.app.reconnecting, forbidden: t.restores.live.off },
    colors: COLORS,
  },
  /** Dashboard, history and queue: only "Live" and "Reconnecting…" show. */
  quiet: {
    testId: 'live-indicator',
    texts: { live: t.app.live, reconnecting: t.app.reconnecting },
    colors: { ...COLORS, reconnecting: 'orange' },
  },
} satisfies Record<string, Wording>;

export function LiveBadge({ state, wording }: { state: StreamState; wording: keyof typeof WORDINGS }) {
  const { testId, texts, colors }: Wording = WORDINGS[wording];
  const text = texts[state];
  if (text === undefined) return <span data-testid={testId} data-state={state} hidden />;
  return (
    <Label color={colors[state]} isCompact data-testid={testId} data-state={state}>
      {text}
    </Label>
  );
}
