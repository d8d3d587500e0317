// Tests of the chart geometry: scales, nice and duration ticks, bands and label thinning.
import { describe, expect, it } from 'vitest';
import { bandLayout, durationTicks, labelIndices, labelsThatFit, linearScale, niceStep, niceTicks, plotFrame } from './scale';

describe('linearScale', () => {
  it('maps the domain onto the range, including inverted ranges (SVG y grows downwards)', () => {
    const y = linearScale([0, 100], [200, 0]);
    expect(y(0)).toBe(200);
    expect(y(100)).toBe(0);
    expect(y(25)).toBe(150);
    const x = linearScale([10, 20], [0, 500]);
    expect(x(15)).toBe(250);
    expect(x(30)).toBe(1000);
  });
  it('puts everything in the middle when the domain has no width', () => {
    expect(linearScale([5, 5], [0, 100])(5)).toBe(50);
  });
});

describe('niceStep and niceTicks', () => {
  it('picks 1, 2 or 5 times a power of ten', () => {
    expect(niceStep(100, 4)).toBe(50);
    expect(niceStep(100, 5)).toBe(20);
    expect(niceStep(1, 4)).toBe(0.5);
    expect(niceStep(0.3, 3)).toBe(0.1);
    expect(niceStep(7300, 5)).toBe(2000);
    expect(niceStep(0, 5)).toBe(1);
  });
  it('covers the data from a round start to a round end', () => {
    expect(niceTicks(0, 100, 4)).toEqual([0, 50, 100]);
    expect(niceTicks(0, 95, 5)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0, 1, 4)).toEqual([0, 0.5, 1]);
    expect(niceTicks(0, 0.3, 3)).toEqual([0, 0.1, 0.2, 0.3]);
  });
  it('still draws an axis when all values are equal', () => {
    expect(niceTicks(0, 0, 4)).toEqual([0, 0.5, 1]);
  });
});

describe('durationTicks', () => {
  it('steps in whole seconds, minutes or hours', () => {
    expect(durationTicks(95, 4)).toEqual([0, 30, 60, 90, 120]);
    expect(durationTicks(8, 4)).toEqual([0, 2, 4, 6, 8]);
    expect(durationTicks(3 * 3600, 4)).toEqual([0, 3600, 7200, 10800]);
    expect(durationTicks(50 * 60, 4)).toEqual([0, 900, 1800, 2700, 3600]);
  });
  it('shows one second for an empty chart', () => {
    expect(durationTicks(0, 4)).toEqual([0, 1]);
  });
});

describe('bandLayout', () => {
  it('splits the width into equal bands with padded bars', () => {
    const bands = bandLayout(4, 0, 400, 0.2);
    expect(bands.map((band) => band.center)).toEqual([50, 150, 250, 350]);
    expect(bands[0].width).toBe(80);
    expect(bands[0].x).toBe(10);
    expect(bands[3].x + bands[3].width).toBe(390);
  });
  it('keeps few bars from growing too wide, centred in their band', () => {
    const [first, second] = bandLayout(2, 0, 400, 0.2, 48);
    expect(first).toEqual({ x: 76, width: 48, center: 100 });
    expect(second.center).toBe(300);
  });
  it('keeps bars at least one unit wide and handles no data', () => {
    expect(bandLayout(1000, 0, 100)[0].width).toBe(1);
    expect(bandLayout(0, 0, 100)).toEqual([]);
  });
});

describe('labelIndices', () => {
  it('shows every label when they fit', () => {
    expect(labelIndices(5, 10)).toEqual([0, 1, 2, 3, 4]);
  });
  it('thins labels evenly and always keeps the newest', () => {
    expect(labelIndices(30, 7)).toEqual([4, 9, 14, 19, 24, 29]);
    expect(labelIndices(7, 3)).toEqual([0, 3, 6]);
    expect(labelIndices(0, 3)).toEqual([]);
  });
});

describe('plotFrame and labelsThatFit', () => {
  it('leaves room for the axes', () => {
    expect(plotFrame(600, 220)).toEqual({ width: 600, height: 220, left: 44, right: 588, top: 12, bottom: 192 });
  });
  it('fits fewer labels on a phone', () => {
    expect(labelsThatFit(300)).toBe(5);
    expect(labelsThatFit(900)).toBe(16);
    expect(labelsThatFit(40)).toBe(2);
  });
});
