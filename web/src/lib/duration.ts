// Go durations (`720h0m0s`, `1.5h`, `90m`) as the policy, TTLs and timeouts write them.

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  'µs': 1e-6,
  'μs': 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/** Seconds of a Go duration (`720h0m0s`, `1.5h`, `90m`), or null when it is not one. */
export function parseGoDuration(text: string): number | null {
  const value = text.trim();
  if (value === '0') return 0;
  const whole = /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
  if (!whole.test(value)) return null;
  const sign = value.startsWith('-') ? -1 : 1;
  let total = 0;
  for (const part of value.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * UNIT_SECONDS[part[2]];
  }
  return sign * total;
}
