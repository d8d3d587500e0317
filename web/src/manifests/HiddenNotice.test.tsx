// The notice of items a user may not list: counts and reasons as the gateway words them, nothing when none.
import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/react';
import { HiddenNotice } from './HiddenNotice';

describe('HiddenNotice', () => {
  it('lists each hidden resource with the reason', () => {
    render(
      <HiddenNotice
        hidden={[
          { group: '', resource: 'secrets', kind: 'Secret', namespace: 'team-a', count: 3, message: '3 Secret items hidden: you may not list secrets in team-a' },
          { group: '', resource: 'persistentvolumes', kind: 'PersistentVolume', count: 1, message: '1 PersistentVolume item hidden: you may not list persistentvolumes cluster-wide' },
        ]}
      />,
    );
    const lines = screen.getAllByTestId('hidden-item').map((line) => line.textContent);
    expect(lines).toEqual([
      '3 Secret items hidden: you may not list secrets in team-a',
      '1 PersistentVolume item hidden: you may not list persistentvolumes cluster-wide',
    ]);
  });

  it('says nothing when nothing is hidden', () => {
    const { container } = render(<HiddenNotice hidden={[]} />);
    expect(container.textContent).toBe('');
    expect(screen.queryByTestId('hidden-items')).toBeNull();
  });
});
