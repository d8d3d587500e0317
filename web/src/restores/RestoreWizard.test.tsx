// Behaviour of the restore wizard: validation as typed, the backup picker, the preview of what
// the restore would do (dryRun), 422 field errors shown on their step's fields, Idempotency-Key
// reuse, and going to the new restore.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import RestoreWizard from '../pages/RestoreWizard';
import { openPolicy, SIGNED_IN_AS_ALICE } from '../testing/accessAnswers';
import { backupList, backupUiHist1, restoreCompleted } from '../testing/objectAnswers';
import { fakeGateway, forbidden, invalid, type FakeHandler } from '../testing/gateway';
import { renderPage } from '../testing/render';
import { RESTORE_PREVIEW } from '../testing/manifestAnswers';

afterEach(() => vi.unstubAllGlobals());

const base: FakeHandler = ({ method, url, query }) => {
  if (method === 'POST' && query.get('dryRun') === 'true') return { body: RESTORE_PREVIEW };
  if (method === 'GET' && url === '/api/v1/namespaces/team-a/policy') return { body: openPolicy };
  if (method === 'GET' && url === '/api/v1/namespaces/team-a/backups/ui-hist-1') return { body: backupUiHist1 };
  if (method === 'GET' && url.startsWith('/api/v1/namespaces/team-a/backups?')) return { body: { apiVersion: 'v1', kind: 'NonAdminBackupList', metadata: {}, items: backupList } };
  return undefined;
};

function type(testId: string, value: string) {
  fireEvent.change(screen.getByTestId(testId), { target: { value } });
}

/** From "What to restore" through the preview to the review. */
async function toReview() {
  fireEvent.click(screen.getByTestId('wizard-next'));
  await screen.findByTestId('preview-table');
  fireEvent.click(screen.getByTestId('wizard-next'));
  await screen.findByTestId('restore-review');
}

const isCreate = (call: { method: string; query: URLSearchParams }) => call.method === 'POST' && call.query.get('dryRun') !== 'true';

async function openOptions() {
  renderPage('/ns/team-a/backups/ui-hist-1/restore', { '/ns/:namespace/backups/:name/restore': <RestoreWizard /> });
  await screen.findByTestId('backup-facts');
  fireEvent.click(screen.getByTestId('wizard-next'));
  await screen.findByTestId('restore-name');
}

describe('RestoreWizard', () => {
  it('shows the backup and proposes a restore name', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, base);
    await openOptions();
    expect(screen.getByTestId<HTMLInputElement>('restore-name').value).toMatch(/^ui-hist-1-restore-\d{14}$/);
    expect(screen.getByTestId('mapping-note').textContent).toContain('Restores always go back into namespace team-a');
  });

  it('validates as the user types and blocks Next until fixed', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, base);
    await openOptions();
    type('restore-name', 'Bad_Name');
    expect((await screen.findByTestId('restore-name-error')).textContent).toContain("Use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.");
    type('restore-included', 'deployments, Pods');
    expect(screen.getByTestId('restore-included-error').textContent).toContain('"Pods" is not a resource name');
    expect(screen.getByTestId<HTMLButtonElement>('wizard-next').disabled).toBe(true);
    type('restore-name', 'undo-1');
    type('restore-included', 'deployments');
    await waitFor(() => expect(screen.queryByTestId('restore-name-error')).toBeNull());
    expect(screen.getByTestId<HTMLButtonElement>('wizard-next').disabled).toBe(false);
  });

  it('lists only restorable backups in the picker and needs a choice', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, base);
    renderPage('/ns/team-a/restores/new', { '/ns/:namespace/restores/new': <RestoreWizard /> });
    const picker = await screen.findByTestId('backup-picker');
    expect(within(picker).getAllByTestId('backup-option').map((row) => row.getAttribute('data-name'))).toEqual(['ui-hist-2', 'ui-hist-1']);
    expect(screen.getByTestId<HTMLButtonElement>('wizard-next').disabled).toBe(true);
    fireEvent.click(within(picker).getByLabelText('ui-hist-1'));
    expect(await screen.findByTestId('backup-facts')).toBeTruthy();
    expect(screen.getByTestId<HTMLButtonElement>('wizard-next').disabled).toBe(false);
  });

  it('shows the server 422 on the field of its step, and retries with a new key only for a new body', async () => {
    let posts = 0;
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, (call) => {
      if (isCreate(call)) {
        posts += 1;
        if (posts === 1) {
          return invalid('metadata.name must be a lowercase RFC 1123 subdomain', [{ field: 'metadata.name', message: 'metadata.name is already used by a restore being deleted', reason: 'invalid' }]);
        }
        return { status: 201, body: { ...restoreCompleted, metadata: { ...restoreCompleted.metadata, name: 'undo-2' } } };
      }
      return base(call);
    });
    await openOptions();
    type('restore-name', 'undo-1');
    type('restore-excluded', 'secrets');
    await toReview();
    fireEvent.click(screen.getByTestId('wizard-next'));
    // Back on "What to restore", with the server's message under the name.
    expect((await screen.findByTestId('restore-name-error')).textContent).toContain('metadata.name is already used by a restore being deleted');
    const firstPost = calls.find(isCreate)!;
    expect(firstPost.url).toBe('/api/v1/namespaces/team-a/restores');
    expect(firstPost.body).toEqual({ name: 'undo-1', spec: { restoreSpec: { backupName: 'ui-hist-1', excludedResources: ['secrets'] } } });
    const firstKey = firstPost.headers['Idempotency-Key'];
    expect(firstKey).toBeTruthy();
    // Changing the field clears the server's message; a new body gets a new key.
    type('restore-name', 'undo-2');
    expect(screen.queryByTestId('restore-name-error')).toBeNull();
    await toReview();
    fireEvent.click(screen.getByTestId('wizard-next'));
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/ns/team-a/restores/undo-2'));
    const secondPost = calls.filter(isCreate)[1];
    expect(secondPost.headers['Idempotency-Key']).not.toBe(firstKey);
  }, 20000);

  it('explains a refusal that is not about a field', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, (call) =>
      isCreate(call)
        ? forbidden('create', 'nonadminrestores', 'team-a')
        : base(call),
    );
    await openOptions();
    await toReview();
    fireEvent.click(screen.getByTestId('wizard-next'));
    const error = await screen.findByTestId('restore-submit-error');
    expect(error.textContent).toContain('Missing permission: create nonadminrestores in namespace team-a');
  });

  it('offers only the existing-resource policies the administrator allows', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, (call) =>
      call.url === '/api/v1/namespaces/team-a/policy'
        ? { body: { ...openPolicy, restore: { enforced: { restorePVs: false }, defaults: {}, maximum: {}, allowed: { existingResourcePolicy: ['none'] } } } }
        : base(call),
    );
    await openOptions();
    expect(screen.getByTestId<HTMLInputElement>('existing-policy-update').disabled).toBe(true);
    expect(screen.getByTestId<HTMLInputElement>('existing-policy-none').checked).toBe(true);
    const pvs = screen.getByTestId<HTMLInputElement>('restore-pvs');
    expect(pvs.checked).toBe(false);
    expect(pvs.disabled).toBe(true);
    expect(screen.getByText('Set by the administrator: false')).toBeTruthy();
  });

  it('previews what the restore would do, in restore order, before creating anything', async () => {
    const { calls } = fakeGateway(SIGNED_IN_AS_ALICE, base);
    await openOptions();
    type('restore-name', 'undo-1');
    type('restore-included', 'configmaps');
    fireEvent.click(screen.getByTestId('wizard-next'));
    const preview = await screen.findByTestId('restore-preview');
    await screen.findByTestId('preview-table');
    const posts = calls.filter((call) => call.method === 'POST');
    expect(posts.map((call) => call.url)).toEqual(['/api/v1/namespaces/team-a/restores?dryRun=true']);
    // The same request the create sends.
    expect(posts[0].body).toEqual({ name: 'undo-1', spec: { restoreSpec: { backupName: 'ui-hist-1', includedResources: ['configmaps'] } } });
    expect(
      within(preview)
        .getAllByTestId('preview-entry')
        .map((row) => `${row.getAttribute('data-action')} ${row.getAttribute('data-name')}`),
    ).toEqual(['Skip team-a', 'Skip web-config', 'Create web-extra', 'Undetermined web-hidden']);
    const hidden = within(preview).getAllByTestId('preview-entry')[3];
    expect(hidden.textContent).toContain('LiveStateUnknown');
    expect(hidden.textContent).toContain('recorded as a warning');
    expect(within(preview).getAllByTestId('preview-count').map((count) => count.textContent)).toEqual([
      'Processed3',
      'Create1',
      'Update0',
      'Skip1',
      'Undetermined1',
      'Warnings1',
    ]);
    expect(within(preview).getByTestId('overlap').textContent).toContain('Would wait on backup nightly: 1 overlapping item');
    // Filtering keeps each entry's place in the order.
    fireEvent.change(within(preview).getByTestId('preview-filter'), { target: { value: 'Create' } });
    const created = within(preview).getAllByTestId('preview-entry');
    expect(created.map((row) => row.getAttribute('data-name'))).toEqual(['web-extra']);
    expect(created[0].textContent).toMatch(/^3Create/);
    // Nothing was created; the review comes next.
    fireEvent.click(screen.getByTestId('wizard-next'));
    await screen.findByTestId('restore-review');
    expect(calls.filter(isCreate)).toHaveLength(0);
  });

  it('shows a refused preview and still lets the user go back and fix the request', async () => {
    fakeGateway(SIGNED_IN_AS_ALICE, (call) =>
      call.method === 'POST' ? invalid('the NonAdminRestore is refused by policy', [{ field: 'spec.restoreSpec.includedResources', message: 'includedResources may not name nonadminbackups', reason: 'restricted' }]) : base(call),
    );
    await openOptions();
    fireEvent.click(screen.getByTestId('wizard-next'));
    const error = await within(await screen.findByTestId('restore-preview')).findByTestId('error-alert');
    expect(error.textContent).toContain('includedResources may not name nonadminbackups');
    fireEvent.click(screen.getByTestId('wizard-back'));
    expect(await screen.findByTestId('restore-name')).toBeTruthy();
  });
});
