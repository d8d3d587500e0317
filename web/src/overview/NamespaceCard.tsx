// One namespace on the picker: a card that opens the namespace in one click (a real link),
// what I may do there, and how fresh its newest successful backup is.
import type { MouseEvent } from 'react';
import { useNavigate } from 'react-router';
import { Card, CardBody, CardHeader, CardTitle, Label, LabelGroup } from '@patternfly/react-core';
import BanIcon from '@patternfly/react-icons/dist/esm/icons/ban-icon';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import { api } from '../api/client';
import type { NamespaceAccess } from '../api/types';
import { formatDuration } from '../format';
import { useLoad, useNow } from '../hooks';
import { fmt, t } from '../strings';
import { capabilities, isReadOnly } from './namespaces';
import { protectionStatus } from './protection';

/** A left click without modifiers (others open a new tab and are left to the browser). */
function isPlainClick(event: MouseEvent): boolean {
  return event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey;
}

const levelIcon = {
  success: <CheckCircleIcon color="var(--pf-t--global--icon--color--status--success--default)" />,
  warning: <ExclamationTriangleIcon color="var(--pf-t--global--icon--color--status--warning--default)" />,
  danger: <ExclamationCircleIcon color="var(--pf-t--global--icon--color--status--danger--default)" />,
};

/** "Last backup 3h ago" with a coloured icon, once the coverage has loaded. */
function ProtectionLine({ namespace }: { namespace: string }) {
  const { data } = useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/coverage', { path: { namespace }, signal }), `${namespace}/coverage`);
  const now = useNow(60_000);
  if (!data) return null;
  const status = protectionStatus(data, now);
  const words = t.overview.picker;
  return (
    <p data-testid="namespace-protection" data-level={status.level} style={{ display: 'flex', gap: '0.4rem', alignItems: 'center', marginTop: '0.75rem' }}>
      {levelIcon[status.level]}
      <span>{status.ageSeconds === null ? words.noBackup : fmt(words.lastBackup, { age: formatDuration(status.ageSeconds) })}</span>
    </p>
  );
}

export function NamespaceCard({ access }: { access: NamespaceAccess }) {
  const navigate = useNavigate();
  const words = t.overview.picker;
  const to = `/ns/${encodeURIComponent(access.name)}`;
  const titleId = `namespace-title-${access.name}`;
  const all = capabilities(access);
  const canView = all.find((capability) => capability.key === 'view')?.allowed;
  return (
    <Card isClickable isCompact data-testid="namespace-card" data-namespace={access.name}>
      <CardHeader
        selectableActions={{
          to,
          selectableActionAriaLabelledby: titleId,
          selectableActionProps: {
            'data-testid': 'namespace-link',
            onClick: (event: MouseEvent) => {
              if (!isPlainClick(event)) return;
              event.preventDefault();
              void navigate(to);
            },
          },
        }}
      >
        <CardTitle id={titleId} component="h2">
          {access.name}
          {isReadOnly(access) && (
            <Label isCompact color="grey" style={{ marginLeft: '0.5rem' }} data-testid="namespace-read-only">
              {words.readOnly}
            </Label>
          )}
        </CardTitle>
      </CardHeader>
      <CardBody>
        <LabelGroup numLabels={all.length} aria-label={fmt(words.mayLabel, { namespace: access.name })} isCompact>
          {all.map((capability) =>
            capability.allowed ? (
              <Label key={capability.key} color="green" isCompact icon={<CheckCircleIcon />} data-testid={`capability-${capability.key}`} data-allowed="true">
                {words.capabilities[capability.key]}
              </Label>
            ) : (
              <Label key={capability.key} color="grey" variant="outline" isCompact icon={<BanIcon />} data-testid={`capability-${capability.key}`} data-allowed="false">
                <span aria-hidden="true" style={{ textDecoration: 'line-through' }}>
                  {words.capabilities[capability.key]}
                </span>
                <span className="pf-v6-screen-reader">{fmt(words.notAllowed, { capability: words.capabilities[capability.key] })}</span>
              </Label>
            ),
          )}
        </LabelGroup>
        {canView && <ProtectionLine namespace={access.name} />}
      </CardBody>
    </Card>
  );
}
