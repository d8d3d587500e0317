// The confirmation before deleting a backup, restore, storage location or schedule: says what the
// deletion does and does not touch, offers "copy as curl / nac CLI", sends the DELETE of the
// copyable action, and shows a refusal (e.g. a missing permission) in place. A permanent deletion
// (a backup's data) is shown in red and waits until the object's name has been typed. Lists keep
// the row waiting for its confirmation with useDeleteDialog.
import { useState } from 'react';
import {
  Alert,
  Button,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  TextInput,
} from '@patternfly/react-core';
import { api } from '../api/client';
import type { DeleteOutcome, TenantResource } from '../api/types';
import { fmt, t } from '../strings';
import { CopyAs, type DeleteAction } from './CopyAs';
import { ErrorAlert } from './ErrorAlert';

export interface DeleteTexts {
  /** The question, with `{name}`. */
  title: string;
  body: string;
  confirm: string;
  /** Title of the "copy as" of the deletion. */
  copyTitle?: string;
  /** Permanent deletions: "Type {name} to confirm", the input's label, the mismatch, the busy button. */
  typeName?: string;
  typeNameLabel?: string;
  mismatch?: string;
  deleting?: string;
}

export interface ConfirmDeleteModalProps {
  name: string;
  texts: DeleteTexts;
  /** Instead of `texts.copyTitle`. */
  copyTitle?: string;
  /** The deletion (sent, and offered as curl / nac CLI). */
  action: DeleteAction;
  isOpen?: boolean;
  /** Asks for the typed name and shows the warning in red. */
  permanent?: boolean;
  onDeleted?: (outcome: DeleteOutcome) => void;
  onClose: () => void;
}

const DELETE_PATHS = {
  backups: '/api/v1/namespaces/{namespace}/backups/{name}',
  restores: '/api/v1/namespaces/{namespace}/restores/{name}',
  'storage-locations': '/api/v1/namespaces/{namespace}/storage-locations/{name}',
  schedules: '/api/v1/namespaces/{namespace}/schedules/{name}',
} as const;

const TEST_IDS = {
  permanent: { modal: 'delete-modal', input: 'delete-confirm-input', confirm: 'delete-confirm-button' },
  plain: { modal: 'confirm-delete', input: undefined, confirm: 'confirm-delete-button' },
};

export function ConfirmDeleteModal({ name, texts, copyTitle, action, isOpen = true, permanent = false, onDeleted, onClose }: ConfirmDeleteModalProps) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const matches = !permanent || typed.trim() === name;
  const testIds = permanent ? TEST_IDS.permanent : TEST_IDS.plain;
  const close = () => {
    if (busy) return;
    setTyped('');
    setError(null);
    onClose();
  };
  const confirm = async () => {
    if (!matches || busy) return;
    setBusy(true);
    setError(null);
    try {
      const { resource, namespace, name: target } = action.target;
      const path: (typeof DELETE_PATHS)[TenantResource] = DELETE_PATHS[resource];
      const outcome = await api.del(path, { path: { namespace, name: target } });
      setBusy(false);
      setTyped('');
      onDeleted?.(outcome);
      onClose();
    } catch (err) {
      setBusy(false);
      setError(err);
    }
  };
  return (
    <Modal isOpen={isOpen} onClose={close} variant="small" aria-labelledby="confirm-delete-title" aria-describedby="confirm-delete-body" data-testid={testIds.modal}>
      <ModalHeader title={fmt(texts.title, { name })} titleIconVariant={permanent ? 'danger' : 'warning'} labelId="confirm-delete-title" />
      <ModalBody id="confirm-delete-body">
        {permanent ? <Alert variant="danger" isInline isPlain title={texts.body} /> : <p>{texts.body}</p>}
        {permanent && (
          <Form
            onSubmit={(event) => {
              event.preventDefault();
              void confirm();
            }}
          >
            <FormGroup label={fmt(texts.typeName ?? '', { name })} fieldId="delete-confirm-input">
              <TextInput
                id="delete-confirm-input"
                value={typed}
                onChange={(_event, value) => setTyped(value)}
                aria-label={texts.typeNameLabel}
                autoComplete="off"
                spellCheck={false}
                validated={typed && !matches ? 'error' : 'default'}
                data-testid={testIds.input}
              />
              {typed && !matches && (
                <FormHelperText>
                  <HelperText>
                    <HelperTextItem variant="error">{texts.mismatch}</HelperTextItem>
                  </HelperText>
                </FormHelperText>
              )}
            </FormGroup>
          </Form>
        )}
        <ErrorAlert error={error} />
        <CopyAs title={copyTitle ?? texts.copyTitle ?? ''} action={action} />
      </ModalBody>
      <ModalFooter>
        <Button variant="danger" onClick={() => void confirm()} isLoading={busy} isDisabled={!matches || busy} data-testid={testIds.confirm}>
          {busy && texts.deleting ? texts.deleting : texts.confirm}
        </Button>
        <Button variant="link" onClick={close} isDisabled={busy}>
          {t.common.cancel}
        </Button>
      </ModalFooter>
    </Modal>
  );
}

/** A list's pending deletion: `ask(name)` opens the confirmation for that row; render `dialog`. */
export function useDeleteDialog(texts: DeleteTexts, actionOf: (name: string) => DeleteAction, onDeleted: (outcome: DeleteOutcome) => void) {
  const [name, setName] = useState<string | null>(null);
  const dialog = name ? <ConfirmDeleteModal name={name} texts={texts} action={actionOf(name)} onDeleted={onDeleted} onClose={() => setName(null)} /> : null;
  return { ask: setName, dialog };
}
