// Tests of label selectors: parsing with precise errors, conversion both ways, key checks and matching.
import { describe, expect, it } from 'vitest';
import { formatLabelSelector, labelKeyError, matchesTerms, parseLabelSelector, toLabelSelector } from './labelSelector';

describe('parseLabelSelector', () => {
  it('reads every operator and keeps = as matchLabels', () => {
    const parsed = parseLabelSelector('app=web, tier!=db,env in (prod, qa),region notin (eu),backup,!legacy,team==a');
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(toLabelSelector(parsed.terms)).toEqual({
      matchLabels: { app: 'web', team: 'a' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['db'] },
        { key: 'env', operator: 'In', values: ['prod', 'qa'] },
        { key: 'region', operator: 'NotIn', values: ['eu'] },
        { key: 'backup', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    });
  });

  it('accepts prefixed keys and empty values; an empty text is the empty selector', () => {
    const parsed = parseLabelSelector('app.kubernetes.io/name=web,flag=');
    expect(parsed.ok && toLabelSelector(parsed.terms)).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'web', flag: '' } });
    expect(parseLabelSelector('  ')).toEqual({ ok: true, terms: [] });
  });

  it.each([
    ['app=web,', 'an empty term'],
    ['env in (a,b', 'unbalanced parentheses'],
    ['env in ()', 'list at least one value'],
    ['a b=c', 'expected key=value'],
    ['app=we b', 'label value "we b"'],
    ['-app=web', 'label key "-app"'],
    ['Example.COM/app=web', 'the part before "/"'],
    ['env=(x)', 'write sets as'],
  ])('refuses %j (%s)', (text, fragment) => {
    const parsed = parseLabelSelector(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(fragment);
  });

  it('checks key length', () => {
    expect(labelKeyError('a'.repeat(63))).toBeNull();
    expect(labelKeyError('a'.repeat(64))).toContain('1–63');
  });
});

describe('matchesTerms and formatLabelSelector', () => {
  const terms = (text: string) => {
    const parsed = parseLabelSelector(text);
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.terms;
  };
  it('matches like the API server', () => {
    const labels = { app: 'web', env: 'prod' };
    expect(matchesTerms(terms('app=web'), labels)).toBe(true);
    expect(matchesTerms(terms('app!=web'), labels)).toBe(false);
    expect(matchesTerms(terms('tier!=db'), labels)).toBe(true);
    expect(matchesTerms(terms('env in (prod,qa),app'), labels)).toBe(true);
    expect(matchesTerms(terms('env notin (prod)'), labels)).toBe(false);
    expect(matchesTerms(terms('!legacy'), labels)).toBe(true);
    expect(matchesTerms(terms('app'), undefined)).toBe(false);
    expect(matchesTerms([], undefined)).toBe(true);
  });
  it('writes a selector object back as text', () => {
    expect(
      formatLabelSelector({
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'qa'] },
          { key: 'tier', operator: 'NotIn', values: ['db'] },
          { key: 'backup', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('app=web,env in (prod,qa),tier notin (db),backup,!legacy');
    expect(formatLabelSelector(undefined)).toBe('');
  });
});
