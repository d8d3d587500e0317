// Controls that may be unavailable: a tooltip saying why (when they are), and a button that is a
// router link.
import { useCallback, type ReactElement } from 'react';
import { Link } from 'react-router';
import { Button, Tooltip, type ButtonProps } from '@patternfly/react-core';

/** Wraps a control in a tooltip saying why it is unavailable, when it is. */
export function WhyNot({ reason, children }: { reason: string | null | false | undefined; children: ReactElement }) {
  return reason ? <Tooltip content={reason}>{children}</Tooltip> : children;
}

/** A button that is a router link (keeps "open in new tab"); aria-disabled links do not navigate. */
export function ButtonLink({ to, ...props }: Omit<ButtonProps, 'component'> & { to: string }) {
  const component = useCallback((linkProps: object) => <Link {...linkProps} to={to} />, [to]);
  return <Button {...props} component={component} />;
}
