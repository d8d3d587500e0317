// Shared pieces of the hand-written SVG charts: a container that measures its width (so the
// viewBox matches the space and text stays readable on a phone), axes, a legend, and the
// visually-hidden data table that screen readers get instead of the picture.
import { useEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import type { Frame } from './scale';

/** Colours from PatternFly's tokens (so charts follow the light and dark themes). */
export const chartColors = {
  success: 'var(--pf-t--global--color--status--success--default, #3d7317)',
  danger: 'var(--pf-t--global--color--status--danger--default, #b1380b)',
  neutral: 'var(--pf-t--global--border--color--default, #c7c7c7)',
  grid: 'var(--pf-t--global--border--color--default, #e0e0e0)',
  text: 'var(--pf-t--global--text--color--subtle, #4d4d4d)',
  line: 'var(--pf-t--global--color--status--info--default, #5e40be)',
  /** Behind text drawn over data, so it stays readable. */
  halo: 'var(--pf-t--global--background--color--primary--default, #ffffff)',
};

export const CHART_HEIGHT = 220;
const FALLBACK_WIDTH = 600;

/** Width of an element, following resizes (600 where it cannot be measured, e.g. in tests). */
export function useChartWidth(): [RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement | null>(null);
  const [width, setWidth] = useState(FALLBACK_WIDTH);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => {
      const measured = Math.round(element.getBoundingClientRect().width);
      if (measured > 0) setWidth(Math.max(280, measured));
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

/** An SVG that scales with its container (viewBox), described as one image for assistive tech. */
export function ChartSvg({ width, height, label, testId, children }: { width: number; height: number; label: string; testId: string; children: ReactNode }) {
  return (
    <svg
      role="img"
      aria-label={label}
      data-testid={testId}
      viewBox={`0 0 ${width} ${height}`}
      width="100%"
      preserveAspectRatio="xMidYMid meet"
      style={{ display: 'block', maxWidth: '100%', height: 'auto', overflow: 'visible', fontSize: 12 }}
    >
      <g aria-hidden="true">{children}</g>
    </svg>
  );
}

/** Horizontal grid lines with their labels on the left. */
export function YAxis({ frame, ticks, y, label }: { frame: Frame; ticks: number[]; y: (value: number) => number; label: (value: number) => string }) {
  return (
    <g>
      {ticks.map((tick) => (
        <g key={tick}>
          <line x1={frame.left} x2={frame.right} y1={y(tick)} y2={y(tick)} stroke={chartColors.grid} strokeWidth={1} strokeDasharray={tick === 0 ? undefined : '2 3'} />
          <text x={frame.left - 6} y={y(tick)} dy="0.32em" textAnchor="end" fill={chartColors.text}>
            {label(tick)}
          </text>
        </g>
      ))}
    </g>
  );
}

/** Labels under the plot at the given x positions. */
export function XLabels({ frame, labels }: { frame: Frame; labels: { x: number; text: string }[] }) {
  return (
    <g>
      {labels.map((label) => (
        <text key={`${label.x}-${label.text}`} x={label.x} y={frame.bottom + 18} textAnchor="middle" fill={chartColors.text}>
          {label.text}
        </text>
      ))}
    </g>
  );
}

/** A small legend under a chart (text, so it is readable and translatable). */
export function Legend({ entries }: { entries: { color: string; label: string; shape?: 'square' | 'dot' | 'dash' }[] }) {
  return (
    <ul aria-hidden="true" style={{ display: 'flex', flexWrap: 'wrap', gap: '0.25rem 1rem', listStyle: 'none', padding: 0, margin: '0.25rem 0 0', fontSize: '0.85rem' }}>
      {entries.map((entry) => (
        <li key={entry.label} style={{ display: 'inline-flex', alignItems: 'center', gap: '0.35rem' }}>
          <svg width="14" height="10" viewBox="0 0 14 10" aria-hidden="true">
            {entry.shape === 'dot' ? (
              <circle cx="7" cy="5" r="4" fill={entry.color} />
            ) : entry.shape === 'dash' ? (
              <line x1="0" x2="14" y1="5" y2="5" stroke={entry.color} strokeWidth="2" strokeDasharray="4 2" />
            ) : (
              <rect x="2" y="0" width="10" height="10" fill={entry.color} />
            )}
          </svg>
          {entry.label}
        </li>
      ))}
    </ul>
  );
}

/** The chart's numbers as a table only screen readers see. */
export function HiddenDataTable({ caption, headers, rows, testId }: { caption: string; headers: string[]; rows: (string | number)[][]; testId: string }) {
  return (
    <table className="pf-v6-screen-reader" data-testid={testId}>
      <caption>{caption}</caption>
      <thead>
        <tr>
          {headers.map((header) => (
            <th key={header} scope="col">
              {header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, index) => (
          <tr key={index}>
            {row.map((cell, column) => (column === 0 ? <th key={column} scope="row">{cell}</th> : <td key={column}>{cell}</td>))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
