import { describe, expect, it } from 'vitest';
import { toYaml } from './yaml';

describe('toYaml', () => {
  it('writes a NonAdminBackup', () => {
    const text = toYaml({
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminBackup',
      metadata: { name: 'nightly', namespace: 'team-a', labels: {} },
      spec: { backupSpec: { includedResources: ['configmaps', 'secrets'], ttl: '720h0m0s', snapshotVolumes: false } },
    });
    expect(text).toBe(
      [
        'apiVersion: oadp.openshift.io/v1alpha1',
        'kind: NonAdminBackup',
        'metadata:',
        '  name: nightly',
        '  namespace: team-a',
        '  labels: {}',
        'spec:',
        '  backupSpec:',
        '    includedResources:',
        '      - configmaps',
        '      - secrets',
        '    ttl: 720h0m0s',
        '    snapshotVolumes: false',
        '',
      ].join('\n'),
    );
  });
  it('quotes strings YAML would misread', () => {
    expect(toYaml({ a: 'yes', b: '123', c: '', d: 'a: b', e: '*', f: '1e5', g: '0x1F', h: '10m' })).toBe(
      'a: "yes"\nb: "123"\nc: ""\nd: "a: b"\ne: "*"\nf: "1e5"\ng: "0x1F"\nh: 10m\n',
    );
  });
  it('writes lists of objects and empty containers', () => {
    expect(toYaml({ hooks: [{ name: 'h', on: ['x'] }], x: [] })).toBe('hooks:\n  - name: h\n    "on":\n      - x\nx: []\n');
    expect(toYaml({})).toBe('{}\n');
  });
});
