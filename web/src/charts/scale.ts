// Chart geometry for the hand-written SVG charts: linear scales, "nice" axis ticks, duration
// ticks, band (bar) layout and which x labels fit (pure; unit-tested in scale.test.ts).

/** Maps `domain` linearly onto `range`; a zero-width domain maps to the middle of the range. */
export function linearScale(domain: [number, number], range: [number, number]): (value: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const span = d1 - d0;
  if (span === 0 || !Number.isFinite(span)) return () => (r0 + r1) / 2;
  return (value) => r0 + ((value - d0) / span) * (r1 - r0);
}

/** Drops floating-point noise (0.30000000000000004 → 0.3). */
function tidy(value: number): number {
  return Number(value.toPrecision(12));
}

/** A 1, 2 or 5 × 10ⁿ step giving about `count` intervals over `span`. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !(count > 0)) return 1;
  const raw = span / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const fraction = raw / power;
  const nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  return tidy(nice * power);
}

/** Ticks at a nice step from below `min` to at or above `max` (about `count` intervals). */
export function niceTicks(min: number, max: number, count: number): number[] {
  const high = max > min ? max : min + 1;
  const step = niceStep(high - min, count);
  const start = Math.floor(min / step) * step;
  const end = Math.ceil(high / step) * step;
  const ticks: number[] = [];
  for (let index = 0; start + index * step <= end + step / 2; index++) ticks.push(tidy(start + index * step));
  return ticks;
}

/** Steps that read well as durations: seconds, minutes, hours, days. */
const DURATION_STEPS_SECONDS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
];

/** Ticks in seconds from 0 covering `maxSeconds` with at most `count` intervals, at whole-unit steps. */
export function durationTicks(maxSeconds: number, count: number): number[] {
  const max = maxSeconds > 0 ? maxSeconds : 1;
  const intervals = Math.max(1, Math.floor(count));
  const step =
    DURATION_STEPS_SECONDS.find((candidate) => candidate * intervals >= max) ??
    Math.ceil(max / intervals / 604800) * 604800;
  const ticks: number[] = [];
  for (let value = 0; value < max + step; value += step) {
    ticks.push(value);
    if (value >= max) break;
  }
  return ticks;
}

export interface Band {
  /** Left edge of the bar. */
  x: number;
  width: number;
  /** Centre of the band (where its label goes). */
  center: number;
}

/** `count` equal bands over [x0, x1], bars taking `1 - padding` of each band, at most `maxWidth`. */
export function bandLayout(count: number, x0: number, x1: number, padding = 0.2, maxWidth = Infinity): Band[] {
  if (count <= 0) return [];
  const step = (x1 - x0) / count;
  const width = Math.max(1, Math.min(maxWidth, step * (1 - padding)));
  return Array.from({ length: count }, (_, index) => {
    const center = x0 + step * index + step / 2;
    return { x: center - width / 2, width, center };
  });
}

/** Indices of the labels to show so at most `maxLabels` appear, evenly spaced, always the last. */
export function labelIndices(count: number, maxLabels: number): number[] {
  if (count <= 0) return [];
  const every = Math.max(1, Math.ceil(count / Math.max(1, maxLabels)));
  const indices: number[] = [];
  for (let index = count - 1; index >= 0; index -= every) indices.unshift(index);
  return indices;
}

export interface Frame {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** The plot area inside a `width` × `height` chart after the axis margins. */
export function plotFrame(width: number, height: number, margin = { top: 12, right: 12, bottom: 28, left: 44 }): Frame {
  return {
    width,
    height,
    left: margin.left,
    right: Math.max(margin.left + 1, width - margin.right),
    top: margin.top,
    bottom: Math.max(margin.top + 1, height - margin.bottom),
  };
}

/** How many x labels fit in a plot `width` wide when each needs about `labelWidth`. */
export function labelsThatFit(width: number, labelWidth = 56): number {
  return Math.max(2, Math.floor(width / labelWidth));
}
