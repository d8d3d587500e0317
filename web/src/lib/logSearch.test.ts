// Tests of log searching: match ranges, pieces for highlighting, stepping, line counts, levels and
// filtering, on real backup and restore logs.
import { describe, expect, it } from 'vitest';
import { logPartiallyFailed } from '../testing/objectAnswers';
import { findMatches, lineCount, lineLevel, searchLog, splitAtMatches, stepMatch } from './logSearch';

const LOG = [
  'time="2026-11-23T05:59:01Z" level=info msg="Starting backup" backup=openshift-adp/team-a-probe-1',
  'time="2026-11-23T05:59:01Z" level=info msg="Backed up item" name=web-config namespace=team-a resource=configmaps',
  'time="2026-11-23T05:59:01Z" level=error msg="Error backing up item" name=web-data error="timed out"',
  'time="2026-11-23T05:59:01Z" level=info msg="Backup completed" backup=openshift-adp/team-a-probe-1',
  '',
].join('\n');

const mixed = [
  'time="2026-11-23T06:07:09Z" level=info msg="starting restore"',
  'time="2026-11-23T06:07:09Z" level=warning msg="could not restore, ConfigMap \\"web-config\\" already exists"',
  'time="2026-11-23T06:07:10Z" level=error msg="error restoring deployments.apps/team-a/web"',
  'plain text without a level',
  '',
].join('\n');

describe('findMatches', () => {
  it('finds every occurrence, ignoring case', () => {
    expect(findMatches(LOG, 'BACKUP').ranges).toHaveLength(4); // "Starting backup", 2× "backup=", "Backup completed"
    const { ranges } = findMatches(LOG, 'level=error');
    expect(ranges).toHaveLength(1);
    expect(LOG.slice(ranges[0][0], ranges[0][1])).toBe('level=error');
  });
  it('finds nothing for an empty query and caps the count', () => {
    expect(findMatches(LOG, '')).toEqual({ ranges: [], truncated: false });
    const capped = findMatches('aaaa', 'a', 2);
    expect(capped).toEqual({ ranges: [[0, 1], [1, 2]], truncated: true });
  });
  it('does not overlap matches', () => {
    expect(findMatches('aaaa', 'aa').ranges).toEqual([
      [0, 2],
      [2, 4],
    ]);
  });
});

describe('splitAtMatches', () => {
  it('cuts the text into plain and matched pieces that join back to it', () => {
    const text = 'web-data failed; web-data retried';
    const pieces = splitAtMatches(text, findMatches(text, 'web-data').ranges);
    expect(pieces).toEqual([
      { text: 'web-data', match: 0 },
      { text: ' failed; ', match: null },
      { text: 'web-data', match: 1 },
      { text: ' retried', match: null },
    ]);
    expect(pieces.map((p) => p.text).join('')).toBe(text);
    expect(splitAtMatches('', [])).toEqual([{ text: '', match: null }]);
  });
  it('splits a restore log line into plain and highlighted pieces', () => {
    expect(splitAtMatches('restore web then web', findMatches('restore web then web', 'web').ranges)).toEqual([
      { text: 'restore ', match: null },
      { text: 'web', match: 0 },
      { text: ' then ', match: null },
      { text: 'web', match: 1 },
    ]);
  });
});

describe('stepMatch and lineCount', () => {
  it('wraps around in both directions', () => {
    expect(stepMatch(-1, 3, 1)).toBe(0);
    expect(stepMatch(-1, 3, -1)).toBe(2);
    expect(stepMatch(2, 3, 1)).toBe(0);
    expect(stepMatch(0, 3, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });
  it('counts lines', () => {
    expect(lineCount(LOG)).toBe(4);
    expect(lineCount('one')).toBe(1);
    expect(lineCount('')).toBe(0);
  });
});

describe('lineLevel', () => {
  it('reads logrus levels', () => {
    expect(lineLevel('time="x" level=error msg="boom"')).toBe('error');
    expect(lineLevel('time="x" level=warning msg="hm"')).toBe('warning');
    expect(lineLevel('level="warn" msg="hm"')).toBe('warning');
    expect(lineLevel('level=info msg=ok')).toBe('info');
    expect(lineLevel('level=debug msg=ok')).toBe('debug');
    expect(lineLevel('no level here')).toBe('other');
  });
});

describe('searchLog', () => {
  it('keeps every line without filters, numbering from 1', () => {
    const { lines, total } = searchLog(logPartiallyFailed, '', 'all');
    expect(total).toBe(11);
    expect(lines).toHaveLength(11);
    expect(lines[0].number).toBe(1);
    expect(lines[0].text).toMatch(/msg="starting restore"/);
  });

  it('finds text case-insensitively with its ranges', () => {
    const { lines } = searchLog(logPartiallyFailed, 'CONFIGMAPS', 'all');
    expect(lines).toHaveLength(1);
    expect(lines[0].text).toMatch(/resource=configmaps name=web-config/);
    const [start, end] = lines[0].matches[0];
    expect(lines[0].text.slice(start, end)).toBe('configmaps');
  });

  it('filters by level', () => {
    expect(searchLog(mixed, '', 'error').lines.map((l) => l.number)).toEqual([3]);
    expect(searchLog(mixed, '', 'warning').lines.map((l) => l.number)).toEqual([2, 3]);
    expect(searchLog(mixed, 'restor', 'warning').lines.map((l) => l.number)).toEqual([2, 3]);
    expect(searchLog(mixed, '', 'all').total).toBe(4);
  });
});
