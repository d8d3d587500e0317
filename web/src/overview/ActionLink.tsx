// A quick action: a link styled as a button when allowed; when not, a disabled button whose
// tooltip says which permission is missing (still focusable, so keyboard users hear why).
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { Button, Tooltip } from '@patternfly/react-core';

export function ActionLink({
  to,
  allowed,
  reason,
  variant = 'secondary',
  icon,
  testId,
  children,
}: {
  to: string;
  allowed: boolean;
  reason: string;
  variant?: 'primary' | 'secondary' | 'link';
  icon?: ReactNode;
  testId: string;
  children: ReactNode;
}) {
  if (allowed) {
    return (
      <Button component={Link} variant={variant} icon={icon} data-testid={testId} {...({ to } as object)}>
        {children}
      </Button>
    );
  }
  return (
    <Tooltip content={reason}>
      <Button variant={variant} icon={icon} isAriaDisabled data-testid={testId} aria-description={reason}>
        {children}
      </Button>
    </Tooltip>
  );
}
