// Tests of queue items in words: countdowns, positions, ordering and counts.
import { describe, expect, it } from 'vitest';
import type { QueueItem } from '../api/types';
import { clusterQueue, namespaceQueue } from '../testing/historyAnswers';
import { affectsQueue, countsText, describeEta, otherNamespaces, positionText, remainingSeconds, sortQueueItems } from './eta';

const [running, next, third] = namespaceQueue.items;
const fetchedAt = 1_000_000;

describe('remainingSeconds', () => {
  it('counts down from the answer and stops at zero', () => {
    expect(remainingSeconds(90, fetchedAt, fetchedAt + 30_000)).toBe(60);
    expect(remainingSeconds(90, fetchedAt, fetchedAt + 120_000)).toBe(0);
    expect(remainingSeconds(90, fetchedAt, fetchedAt - 5_000)).toBe(90);
  });
});

describe('describeEta', () => {
  const waiting: QueueItem = { ...next, position: 3, etaSeconds: 400, eta: { startInSeconds: 280, finishInSeconds: 400, samples: 4 } };
  it('gives start and finish of a waiting item with its basis', () => {
    expect(describeEta(waiting, fetchedAt, fetchedAt)).toEqual({ start: 'starts in ~4m', finish: 'done in ~6m', basis: 'from 4 recent runs', hasEstimate: true });
    expect(describeEta(waiting, fetchedAt, fetchedAt + 250_000)).toMatchObject({ start: 'starts in ~30s', finish: 'done in ~2m' });
  });
  it('says "any moment" and "longer than usual" once the estimate has passed', () => {
    expect(describeEta(waiting, fetchedAt, fetchedAt + 500_000)).toMatchObject({ start: 'any moment now', finish: 'taking longer than usual' });
    expect(describeEta(next, fetchedAt, fetchedAt)).toMatchObject({ start: 'any moment now', finish: 'done in ~1s' });
  });
  it('gives only the finish of a running item', () => {
    expect(describeEta({ ...running, eta: { startInSeconds: 0, finishInSeconds: 75, samples: 1 } }, fetchedAt, fetchedAt)).toEqual({
      start: null,
      finish: 'done in ~1m',
      basis: 'from 1 recent run',
      hasEstimate: true,
    });
  });
  it('explains a missing estimate', () => {
    expect(describeEta(third, fetchedAt, fetchedAt)).toEqual({ start: null, finish: null, basis: 'no estimate yet', hasEstimate: false });
  });
  it('uses etaSeconds alone when the server sent no detail', () => {
    expect(describeEta({ ...third, etaSeconds: 120 }, fetchedAt, fetchedAt)).toEqual({ start: null, finish: 'done in ~2m', basis: '', hasEstimate: true });
  });
});

describe('positionText and sortQueueItems', () => {
  it('speaks of positions in words', () => {
    expect(positionText(running)).toBe('being served');
    expect(positionText(next)).toBe('next');
    expect(positionText(third)).toBe('#2');
  });
  it('puts running items first, then waiting ones by position', () => {
    const shuffled = [third, next, running];
    expect(sortQueueItems(shuffled).map((item) => item.name)).toEqual(['probe-partially-fail', 'probe-fail', 'ui-hist-3']);
  });
});

describe('otherNamespaces and countsText', () => {
  it('groups my work outside the current namespace', () => {
    expect(otherNamespaces(clusterQueue, 'team-a')).toEqual([{ namespace: 'team-a-dev', items: [clusterQueue.mine[3]] }]);
    expect(otherNamespaces(clusterQueue, 'team-a-dev').map((group) => [group.namespace, group.items.length])).toEqual([['team-a', 3]]);
    expect(otherNamespaces(undefined, 'team-a')).toEqual([]);
  });
  it('summarises a cluster queue as counts only', () => {
    expect(countsText(clusterQueue.backups)).toEqual({ running: '1 running', pending: '2 waiting', mean: 'about 3s each' });
    expect(countsText(clusterQueue.restores).mean).toBe('no recent durations');
  });
  it('only refreshes for backups and restores', () => {
    expect(affectsQueue('backups')).toBe(true);
    expect(affectsQueue('restores')).toBe(true);
    expect(affectsQueue('schedules')).toBe(false);
  });
});
