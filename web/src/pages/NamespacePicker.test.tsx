// Tests of the namespace picker: capabilities, one-click link, empty state, filter, errors.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import NamespacePicker from './NamespacePicker';
import type { NamespaceAccess } from '../api/types';
import { aliceNamespaces, ciBotNamespaces } from '../testing/accessAnswers';
import { fakeGateway, problem } from '../testing/gateway';
import { coverage, uncovered } from '../testing/historyAnswers';
import { renderPage } from '../testing/render';

const renderPicker = () => renderPage('/', { '/': <NamespacePicker /> });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-23T09:00:10.000Z'));
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('NamespacePicker', () => {
  it('shows my single namespace (no redirect) with everything I may do and its last backup', async () => {
    fakeGateway({ 'GET /api/v1/namespaces': { body: aliceNamespaces }, 'GET /api/v1/namespaces/team-a/coverage': { body: coverage } });
    renderPicker();
    const card = await screen.findByTestId('namespace-card');
    expect(card.getAttribute('data-namespace')).toBe('team-a');
    expect(screen.getByTestId('namespace-count').textContent).toBe('1 namespace');
    for (const key of ['view', 'backup', 'restore', 'schedule', 'locations', 'download']) {
      expect(within(card).getByTestId(`capability-${key}`).getAttribute('data-allowed')).toBe('true');
    }
    const protection = await within(card).findByTestId('namespace-protection');
    expect(protection.textContent).toBe('Last backup 3h ago');
    expect(protection.getAttribute('data-level')).toBe('success');
    expect(screen.queryByTestId('namespace-filter')).toBeNull();
    expect(within(card).queryByTestId('namespace-read-only')).toBeNull();
  });

  it('opens the namespace in one click on a real link', async () => {
    fakeGateway({ 'GET /api/v1/namespaces': { body: aliceNamespaces }, 'GET /api/v1/namespaces/team-a/coverage': { body: uncovered } });
    renderPicker();
    const link = await screen.findByTestId('namespace-link');
    expect(link.tagName).toBe('A');
    expect(link.getAttribute('href')).toBe('/ns/team-a');
    expect(link.getAttribute('aria-labelledby')).toBe('namespace-title-team-a');
    await userEvent.click(link);
    expect((await screen.findByTestId('location')).textContent).toBe('/ns/team-a');
  });

  it('marks what a CI bot may not do, and an unprotected namespace', async () => {
    fakeGateway({ 'GET /api/v1/namespaces': { body: ciBotNamespaces }, 'GET /api/v1/namespaces/team-a/coverage': { body: uncovered } });
    renderPicker();
    const card = await screen.findByTestId('namespace-card');
    expect(within(card).getByTestId('capability-backup').getAttribute('data-allowed')).toBe('true');
    const restore = within(card).getByTestId('capability-restore');
    expect(restore.getAttribute('data-allowed')).toBe('false');
    expect(restore.textContent).toContain('Restore: not allowed');
    expect(within(card).getByTestId('capability-download').getAttribute('data-allowed')).toBe('false');
    const protection = await within(card).findByTestId('namespace-protection');
    expect(protection.textContent).toBe('No backup yet');
    expect(protection.getAttribute('data-level')).toBe('danger');
  });

  it('explains what to do when I have no namespace', async () => {
    fakeGateway({ 'GET /api/v1/namespaces': { body: { items: [] } } });
    renderPicker();
    const empty = await screen.findByTestId('namespaces-empty');
    expect(empty.textContent).toContain('You have no namespaces where you may use backups. Ask an administrator');
  });

  it('filters many namespaces by name', async () => {
    const many: NamespaceAccess[] = ['team-a', 'team-b', 'payments', 'payments-dev', 'search', 'web', 'batch', 'ml'].map((name) => ({
      name,
      permissions: { backups: ['create'] },
      canDownload: false,
    }));
    fakeGateway({ 'GET /api/v1/namespaces': { body: { items: many } } });
    renderPicker();
    const filter = await screen.findByLabelText('Filter namespaces');
    // Creating backups is more than reading: none of them is read only.
    expect(screen.queryAllByTestId('namespace-read-only')).toHaveLength(0);
    expect(screen.getAllByTestId('namespace-card')).toHaveLength(8);
    await userEvent.type(filter, 'PAY');
    await waitFor(() => expect(screen.getAllByTestId('namespace-card').map((card) => card.getAttribute('data-namespace'))).toEqual(['payments', 'payments-dev']));
    expect(screen.getByTestId('namespace-count').textContent).toBe('2 namespaces');
    await userEvent.clear(filter);
    await userEvent.type(filter, 'nothing');
    expect((await screen.findByTestId('namespaces-no-match')).textContent).toBe('No namespace matches “nothing”.');
  });

  it('marks a namespace where I may only look', async () => {
    fakeGateway({
      'GET /api/v1/namespaces': { body: { items: [{ name: 'audit', permissions: { backups: ['get', 'list', 'watch'] }, canDownload: true }] } },
      'GET /api/v1/namespaces/audit/coverage': { body: { ...coverage, namespace: 'audit' } },
    });
    renderPicker();
    expect((await screen.findByTestId('namespace-read-only')).textContent).toBe('Read only');
  });

  it('offers a retry when the list fails', async () => {
    fakeGateway({ 'GET /api/v1/namespaces': { status: 503, body: problem(503, 'Unavailable', 'unavailable', 'the cluster API is not answering') } });
    renderPicker();
    const alert = await screen.findByTestId('error-alert');
    expect(alert.textContent).toContain('The service is temporarily unavailable');
    expect(within(alert).getByRole('button', { name: 'Retry' })).toBeTruthy();
  });
});
