// A small YAML writer for "copy as YAML" (plain JSON values only; strings quoted when YAML would
// read them as something else). Unit-tested in yaml.test.ts.

const PLAIN = /^[A-Za-z0-9_/][A-Za-z0-9_./-]*$/;
const NUMBER_LIKE = /^[0-9][0-9_.eE+-]*$|^0[xo]/;
const RESERVED = /^(true|false|yes|no|on|off|null|~|y|n)$/i;

function scalar(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text !== '' && PLAIN.test(text) && !NUMBER_LIKE.test(text) && !RESERVED.test(text)) return text;
  return JSON.stringify(text);
}

function isEmptyContainer(value: unknown): boolean {
  return (Array.isArray(value) && value.length === 0) || (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);
}

function lines(value: unknown, indent: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (typeof item === 'object' && item !== null && !isEmptyContainer(item)) {
        const inner = lines(item, indent + '  ');
        return [`${indent}- ${inner[0].trimStart()}`, ...inner.slice(1)];
      }
      return [`${indent}- ${isEmptyContainer(item) ? (Array.isArray(item) ? '[]' : '{}') : scalar(item)}`];
    });
  }
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => {
      const name = scalar(key);
      if (isEmptyContainer(item)) return [`${indent}${name}: ${Array.isArray(item) ? '[]' : '{}'}`];
      if (typeof item === 'object' && item !== null) return [`${indent}${name}:`, ...lines(item, indent + '  ')];
      return [`${indent}${name}: ${scalar(item)}`];
    });
  }
  return [`${indent}${scalar(value)}`];
}

/** The YAML text of a JSON value. */
export function toYaml(value: unknown): string {
  if (isEmptyContainer(value)) return Array.isArray(value) ? '[]\n' : '{}\n';
  return lines(value, '').join('\n') + '\n';
}
