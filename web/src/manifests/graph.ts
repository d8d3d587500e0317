// The owner graph of a backup as an indented tree (pure, unit-tested): owners at the top, what
// they own below them. An object with two owners is shown under each (the second time marked, its
// subtree not repeated); a cycle is cut where it closes.
import type { OwnerGraph } from '../api/types';

/** Lines shown at most: a graph of 100k items stays readable and the page stays fast. */
export const MAX_TREE_ROWS = 2000;

/** An item key `<resource>[.<group>]/<namespace|cluster>/<version>/<name>`, split. */
export interface ParsedKey {
  groupResource: string;
  namespace: string | null;
  version: string;
  name: string;
}

/** Splits an item key; the name keeps any further slashes. */
export function parseItemKey(key: string): ParsedKey {
  const [groupResource = '', namespace = '', version = '', ...rest] = key.split('/');
  return { groupResource, namespace: namespace === 'cluster' ? null : namespace, version, name: rest.join('/') };
}

/** "web (deployments.apps)". */
export function keyTitle(key: string): string {
  const parsed = parseItemKey(key);
  return `${parsed.name} (${parsed.groupResource})`;
}

export interface TreeRow {
  key: string;
  depth: number;
  /** How many objects it owns. */
  children: number;
  /** Already shown under another owner: its subtree is not repeated. */
  repeated: boolean;
  /** It owns an object of its own ancestry: the cycle is cut here. */
  cycle: boolean;
}

export interface OwnerTree {
  rows: TreeRow[];
  /** Items with no owner in the backup and owning nothing. */
  standalone: number;
  /** Whether rows stop at {@link MAX_TREE_ROWS}. */
  truncated: boolean;
}

/** The graph as indented rows: roots (owning, not owned) sorted by key, then anything left in cycles. */
export function ownerTree(graph: OwnerGraph, maxRows = MAX_TREE_ROWS): OwnerTree {
  const children = new Map<string, string[]>();
  const owned = new Set<string>();
  for (const { owner, dependent } of graph.edges) {
    children.set(owner, [...(children.get(owner) ?? []), dependent]);
    owned.add(dependent);
  }
  for (const list of children.values()) list.sort();
  const rows: TreeRow[] = [];
  const shown = new Set<string>();
  let truncated = false;

  // Iterative depth-first walk (a deep ownership chain must not overflow the stack); `onPath`
  // holds the current line of owners, left again through the `leave` markers.
  const onPath = new Set<string>();
  const walk = (root: string) => {
    const stack: { key: string; depth: number; leave?: boolean }[] = [{ key: root, depth: 0 }];
    while (stack.length > 0) {
      const { key, depth, leave } = stack.pop()!;
      if (leave) {
        onPath.delete(key);
        continue;
      }
      if (rows.length >= maxRows) {
        truncated = true;
        onPath.clear();
        return;
      }
      const cycle = onPath.has(key);
      const repeated = !cycle && shown.has(key);
      const own = children.get(key) ?? [];
      rows.push({ key, depth, children: own.length, repeated, cycle });
      if (cycle || repeated) continue;
      shown.add(key);
      onPath.add(key);
      stack.push({ key, depth, leave: true });
      for (let index = own.length - 1; index >= 0; index -= 1) stack.push({ key: own[index], depth: depth + 1 });
    }
  };

  const roots = [...children.keys()].filter((key) => !owned.has(key)).sort();
  for (const root of roots) walk(root);
  // Owners only reachable through a cycle have no root: start from the first not shown yet.
  for (const key of [...children.keys()].sort()) {
    if (!shown.has(key) && !truncated) walk(key);
  }
  const linked = new Set([...children.keys(), ...owned]);
  const standalone = graph.nodes.filter((node) => !linked.has(node)).length;
  return { rows, standalone, truncated };
}
