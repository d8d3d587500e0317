import { describe, expect, it } from 'vitest';
import { keyTitle, ownerTree, parseItemKey } from './graph';
import { OWNED_GRAPH } from '../testing/manifestAnswers';

const rowsOf = (tree: ReturnType<typeof ownerTree>) => tree.rows.map((row) => `${'  '.repeat(row.depth)}${row.key}${row.repeated ? ' (again)' : ''}${row.cycle ? ' (cycle)' : ''}`);

describe('owner graph', () => {
  it('splits item keys, cluster-scoped and names with slashes included', () => {
    expect(parseItemKey('deployments.apps/team-a/v1/web')).toEqual({ groupResource: 'deployments.apps', namespace: 'team-a', version: 'v1', name: 'web' });
    expect(parseItemKey('namespaces/cluster/v1/team-a')).toEqual({ groupResource: 'namespaces', namespace: null, version: 'v1', name: 'team-a' });
    expect(parseItemKey('things.example.com/team-a/v1/a/b').name).toBe('a/b');
    expect(keyTitle('deployments.apps/team-a/v1/web')).toBe('web (deployments.apps)');
  });

  it('puts owners first and what they own indented below, and counts the items standing alone', () => {
    const tree = ownerTree(OWNED_GRAPH);
    expect(rowsOf(tree)).toEqual([
      'deployments.apps/team-a/v1/web',
      '  replicasets.apps/team-a/v1/web-7d4b9',
      '    pods/team-a/v1/web-7d4b9-a',
      '    pods/team-a/v1/web-7d4b9-b',
    ]);
    expect(tree.rows.map((row) => row.children)).toEqual([1, 2, 0, 0]);
    expect(tree.standalone).toBe(1);
    expect(tree.truncated).toBe(false);
  });

  it('shows an object with two owners under both, its subtree once', () => {
    const tree = ownerTree({
      nodes: ['a/ns/v1/one', 'a/ns/v1/two', 'b/ns/v1/shared', 'c/ns/v1/leaf'],
      edges: [
        { owner: 'a/ns/v1/one', dependent: 'b/ns/v1/shared' },
        { owner: 'a/ns/v1/two', dependent: 'b/ns/v1/shared' },
        { owner: 'b/ns/v1/shared', dependent: 'c/ns/v1/leaf' },
      ],
    });
    expect(rowsOf(tree)).toEqual(['a/ns/v1/one', '  b/ns/v1/shared', '    c/ns/v1/leaf', 'a/ns/v1/two', '  b/ns/v1/shared (again)']);
    expect(tree.standalone).toBe(0);
  });

  it('cuts a cycle where it closes, even when no object is a root', () => {
    const tree = ownerTree({
      nodes: ['x/ns/v1/a', 'x/ns/v1/b'],
      edges: [
        { owner: 'x/ns/v1/a', dependent: 'x/ns/v1/b' },
        { owner: 'x/ns/v1/b', dependent: 'x/ns/v1/a' },
      ],
    });
    expect(rowsOf(tree)).toEqual(['x/ns/v1/a', '  x/ns/v1/b', '    x/ns/v1/a (cycle)']);
  });

  it('stops at the row limit and says so', () => {
    const edges = Array.from({ length: 50 }, (_, index) => ({ owner: 'r/ns/v1/root', dependent: `p/ns/v1/pod-${String(index).padStart(2, '0')}` }));
    const tree = ownerTree({ nodes: [], edges }, 10);
    expect(tree.rows).toHaveLength(10);
    expect(tree.truncated).toBe(true);
    expect(tree.rows[1].key).toBe('p/ns/v1/pod-00');
  });

  it('walks a long ownership chain without recursion', () => {
    const edges = Array.from({ length: 5000 }, (_, index) => ({ owner: `k/ns/v1/${index}`, dependent: `k/ns/v1/${index + 1}` }));
    const tree = ownerTree({ nodes: [], edges }, 10000);
    expect(tree.rows).toHaveLength(5001);
    expect(tree.rows[5000].depth).toBe(5000);
  });
});
