// A page's heading: the h1 with the live badge beside it and the intro under it; on the live list
// pages (restores, storage locations, schedules) with the create button on the right.
import type { ReactNode } from 'react';
import { Content, Flex, FlexItem, Title } from '@patternfly/react-core';
import type { StreamState } from '../hooks';
import { LiveBadge } from './LiveBadge';

/** Dashboard, history and queue: the title, "Live" / "Reconnecting…" beside it, the intro. */
export function LiveHeading({ title, stream, intro }: { title: string; stream: StreamState; intro: ReactNode }) {
  return (
    <>
      <Flex alignItems={{ default: 'alignItemsCenter' }} gap={{ default: 'gapSm' }}>
        <FlexItem>
          <Title headingLevel="h1">{title}</Title>
        </FlexItem>
        <FlexItem>
          <LiveBadge state={stream} wording="quiet" />
        </FlexItem>
      </Flex>
      <Content component="p">{intro}</Content>
    </>
  );
}

/** A live list page: title and live state, the intro, and `action` (the create button) on the right. */
export function ListHeading({ title, stream, intro, action }: { title: string; stream: StreamState; intro: ReactNode; action: ReactNode }) {
  return (
    <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }} flexWrap={{ default: 'wrap' }}>
      <FlexItem>
        <Title headingLevel="h1">
          {title} <LiveBadge state={stream} wording="short" />
        </Title>
        <Content component="p">{intro}</Content>
      </FlexItem>
      <FlexItem>{action}</FlexItem>
    </Flex>
  );
}
