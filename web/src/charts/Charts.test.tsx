// Tests of the SVG charts: bar and dot geometry, the aria-label summaries and the hidden data tables.
import { describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/react';
import type { Operation } from '../api/types';
import { bucketByDay, durationPoints } from '../history/buckets';
import { DurationChart } from './DurationChart';
import { SuccessRateChart } from './SuccessRateChart';

const at = (d: number, h = 12) => new Date(2026, 10, d, h);
function op(id: string, created: Date, phase: string, durationMs: number | null): Operation {
  return { id, namespace: 'team-a', kind: 'backup', name: `b-${id}`, uid: id, createdAt: created.toISOString(), phase, phaseRank: 200, durationMs };
}
const from = at(20, 0).getTime();
const to = at(23, 0).getTime();
const operations = [
  op('1', at(20, 9), 'Completed', 30_000),
  op('2', at(20, 10), 'Failed', 60_000),
  op('3', at(21, 9), 'Completed', 90_000),
  op('4', at(22, 9), 'InProgress', null),
];
const buckets = bucketByDay(operations, from, to);

// jsdom cannot measure, so charts are 600 × 220 with the plot from y=12 to y=192 (180 high).
describe('SuccessRateChart', () => {
  it('is one described image with a bar per day that had finished work', () => {
    render(<SuccessRateChart buckets={buckets} days={1} from={from} to={to} />);
    const svg = screen.getByTestId('success-rate-svg');
    expect(svg.getAttribute('role')).toBe('img');
    expect(svg.getAttribute('viewBox')).toBe('0 0 600 220');
    expect(svg.getAttribute('aria-label')).toContain('2 succeeded, 1 failed, 67% overall');
    expect(screen.getAllByTestId('success-bar')).toHaveLength(2);
    expect(screen.getAllByTestId('success-bar-empty')).toHaveLength(1);
  });
  it('splits a bar at the success rate', () => {
    render(<SuccessRateChart buckets={buckets} days={1} from={from} to={to} />);
    const [half, full] = screen.getAllByTestId('success-bar');
    const [failedPart, succeededPart] = half.querySelectorAll('rect');
    expect(Number(failedPart.getAttribute('height'))).toBe(90);
    expect(Number(succeededPart.getAttribute('height'))).toBe(90);
    expect(Number(succeededPart.getAttribute('y'))).toBe(102);
    const [noFailure, allSucceeded] = full.querySelectorAll('rect');
    expect(Number(noFailure.getAttribute('height'))).toBe(0);
    expect(Number(allSucceeded.getAttribute('height'))).toBe(180);
    expect(half.querySelector('title')?.textContent).toMatch(/1 succeeded, 1 failed \(50%\)$/);
  });
  it('gives screen readers the numbers as a table', () => {
    render(<SuccessRateChart buckets={buckets} days={1} from={from} to={to} />);
    const table = screen.getByTestId('success-rate-table');
    expect(table.className).toBe('pf-v6-screen-reader');
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.map((row) => Array.from(row.children).slice(1).map((cell) => cell.textContent))).toEqual([
      ['1', '1', '0', '50%'],
      ['1', '0', '0', '100%'],
      ['0', '0', '1', 'nothing finished'],
    ]);
  });
});

describe('DurationChart', () => {
  it('plots a dot per finished operation on a duration axis, with median and 95th percentile', () => {
    const points = durationPoints(operations, from, to);
    render(<DurationChart points={points} buckets={buckets} from={from} to={to} />);
    const svg = screen.getByTestId('duration-svg');
    expect(svg.getAttribute('aria-label')).toContain('Durations of 3 finished operations');
    expect(svg.getAttribute('aria-label')).toContain('median 1m, 95th percentile 1m 30s');
    const dots = screen.getAllByTestId('duration-point');
    expect(dots).toHaveLength(3);
    // Axis 0..90 s over 180 units: 30 s sits at 192 − 60, 90 s at the top.
    expect(dots.map((dot) => Number(dot.getAttribute('cy')))).toEqual([132, 72, 12]);
    expect(dots[1].querySelector('title')?.textContent).toBe('b-2: 1m (failed)');
    const labels = Array.from(svg.querySelectorAll('text')).map((text) => text.textContent);
    expect(labels).toEqual(expect.arrayContaining(['0s', '30s', '1m', '1m 30s', 'Median 1m', '95th pct. 1m 30s']));
    const rows = within(screen.getByTestId('duration-table')).getAllByRole('row').slice(1);
    expect(rows.map((row) => Array.from(row.children).slice(1).map((cell) => cell.textContent))).toEqual([
      ['2', '30s', '1m'],
      ['1', '1m 30s', '1m 30s'],
      ['0', '—', '—'],
    ]);
  });
});
