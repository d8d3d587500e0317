// Browser end-to-end tests of the console against a real `nac demo` in Debian's Chromium:
// sign-in (good and bad tokens), alice previews a backup of team-a (dry run: nothing created),
// backs it up and watches it complete live, reads its logs, browses its contents (filtering by
// kind), previews the restore and restores it, and deletes it; bob sees nothing of team-a. Screenshots of the main pages
// go to test-output/screenshots (also at phone width).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane } from './control-plane.mjs';
import { launchBrowser, screenshot, startDemo } from './harness.mjs';

// NAC_E2E_SERVER=real: the demo runs on a real control plane ($KUBEBUILDER_ASSETS) instead of
// its own emulator; the tenants are then service accounts (team-a/alice, team-b/bob).
const REAL = process.env.NAC_E2E_SERVER === 'real';

const BACKUP = 'e2e-web-1';
const RESTORE = 'e2e-web-1-restore';
const LIVE = 90_000;

let controlPlane;
let demo;
let chromium;

before(async () => {
  if (REAL) {
    controlPlane = await startControlPlane();
    console.log(`real control plane: ${controlPlane.server} (${controlPlane.version})`);
  }
  demo = await startDemo({ kubeconfig: controlPlane?.adminKubeconfig });
  chromium = await launchBrowser();
});

after(async () => {
  await chromium?.close();
  await demo?.stop();
  await controlPlane?.stop();
});

/** A fresh browser context (no cookies) on a page of the demo's gateway. */
async function newPage(viewport = { width: 1280, height: 900 }) {
  const context = await chromium.browser.newContext({ viewport, baseURL: demo.baseUrl });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 40[1349]|status of 422/.test(message.text())) problems.push(`console error: ${message.text()}`);
  });
  return { context, page, problems };
}

async function signIn(page, token) {
  await page.goto('/');
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** GETs an API path from inside the page (the session cookie authenticates it, as the console's own calls). */
async function apiGet(page, path) {
  return page.evaluate(async (url) => {
    const response = await fetch(url, { credentials: 'same-origin' });
    const body = await response.text();
    let json = null;
    try {
      json = JSON.parse(body);
    } catch {
      // not JSON
    }
    return { status: response.status, disposition: response.headers.get('content-disposition'), json };
  }, path);
}

/** Waits until `locator`'s text matches `pattern`. */
async function waitForText(locator, pattern, timeout = LIVE) {
  const deadline = Date.now() + timeout;
  let last = '';
  while (Date.now() < deadline) {
    last = (await locator.textContent({ timeout: 2_000 }).catch(() => '')) ?? '';
    if (pattern.test(last)) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`waited ${timeout} ms for ${pattern}, last text: ${JSON.stringify(last)}`);
}

describe(`the console against nac demo on ${REAL ? 'a real kube-apiserver' : 'its emulator'}`, () => {
  test('a bad token is refused and no session cookie is set', async () => {
    const { context, page } = await newPage();
    await signIn(page, 'nac-emu-not-a-real-token');
    const error = page.getByTestId('signin-error');
    await error.waitFor();
    assert.match(await error.textContent(), /did not accept/);
    assert.deepEqual((await context.cookies()).filter((c) => c.name === 'nac_session'), []);
    await screenshot(page, '01-sign-in-refused');
    await context.close();
  });

  test('alice signs in, sees only her namespace, backs up, watches it complete live, reads its logs, restores and deletes it', async () => {
    const { context, page, problems } = await newPage();
    await signIn(page, demo.tokens.alice);

    // The session cookie: HttpOnly, Secure, SameSite=Strict; the token is not in it.
    await page.getByTestId('user-menu').waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'nac_session');
    assert.ok(cookie, 'session cookie set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.secure, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.ok(!cookie.value.includes(demo.tokens.alice));
    assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the session cookie');

    // Header: who I am, my groups, when my session ends.
    await page.getByTestId('user-menu').click();
    assert.match(await page.getByTestId('whoami').textContent(), /alice/);
    await page.getByTestId('groups').waitFor();
    assert.match(await page.getByTestId('session-ends').textContent(), /Session ends/);
    await page.keyboard.press('Escape');

    // Namespace picker: team-a, never team-b.
    await page.getByText('team-a', { exact: true }).first().waitFor();
    assert.equal(await page.getByText('team-b', { exact: true }).count(), 0);
    await screenshot(page, '02-namespaces');

    // Dashboard.
    await page.goto('/ns/team-a');
    await page.getByTestId('overview-page').waitFor();
    await page.getByTestId('protection-status').waitFor();
    await screenshot(page, '03-overview');

    // Create a backup through the form (policy shown first).
    await page.goto('/ns/team-a/backups/new');
    await page.getByTestId('policy-panel').waitFor();
    await page.getByTestId('field-name').fill('Not A Name');
    await page.getByTestId('error-name').waitFor();
    await page.getByTestId('field-name').fill(BACKUP);
    await page.getByTestId('field-includedResources').fill('configmaps,secrets,deployments');
    await screenshot(page, '04-create-backup');

    // Dry run first: what the backup would take, and nothing is created.
    await page.getByTestId('create-preview').click();
    await page.getByTestId('dry-run-result').waitFor();
    const previewed = await page.getByTestId('dry-run-item').evaluateAll((rows) => rows.map((row) => `${row.dataset.kind}/${row.dataset.name}`));
    assert.ok(previewed.includes('ConfigMap/web-config') && previewed.includes('Deployment/web'), `dry-run items: ${previewed}`);
    assert.ok(previewed.every((item) => /^(ConfigMap|Secret|Deployment)\//.test(item)), `only the included resources: ${previewed}`);
    assert.match(await page.getByTestId('dry-run-total').textContent(), new RegExp(`^${previewed.length} items in \\d+ kinds$`));
    await screenshot(page, '04b-create-backup-dry-run');
    assert.equal((await apiGet(page, `/api/v1/namespaces/team-a/backups/${BACKUP}`)).status, 404, 'the dry run created no backup');
    assert.equal(page.url().endsWith('/ns/team-a/backups/new'), true, 'still on the form');

    await page.getByTestId('create-submit').click();
    await page.waitForURL(`**/ns/team-a/backups/${BACKUP}`);
    await page.getByTestId('backup-detail').waitFor();

    // Live: the phase reaches Completed with no reload (a reload would drop this marker).
    await page.evaluate(() => {
      window.__noReload = true;
    });
    await waitForText(page.getByTestId('velero-phase'), /Completed/);
    assert.equal(await page.evaluate(() => window.__noReload), true, 'updated live, without a reload');
    await screenshot(page, '05-backup-detail');

    // Logs: shown and searchable.
    await page.getByTestId('tab-logs').click();
    await waitForText(page.getByTestId('log-text'), /backup|Backup/);
    await page.getByTestId('log-search').fill('Backed up');
    await waitForText(page.getByTestId('log-match-count'), /\d+/, 10_000);
    await screenshot(page, '06-backup-logs');

    // Contents: the manifest's items (NAC builds it just after completion), narrowed by kind.
    await page.getByTestId('tab-contents').click();
    await page.getByTestId('contents-item').first().waitFor({ timeout: LIVE });
    const allItems = await page.getByTestId('contents-item').evaluateAll((rows) => rows.map((row) => `${row.dataset.kind}/${row.dataset.name}`));
    assert.deepEqual(allItems.slice().sort(), previewed.slice().sort(), 'the backup holds what the dry run said');
    assert.equal(await page.getByTestId('manifest-download').getAttribute('href'), `/api/v1/namespaces/team-a/backups/${BACKUP}/manifest?download=true`);
    await page.getByTestId('contents-kind').selectOption('configmaps');
    const deadlineKind = Date.now() + 10_000;
    let narrowed;
    for (;;) {
      narrowed = await page.getByTestId('contents-item').evaluateAll((rows) => rows.map((row) => `${row.dataset.kind}/${row.dataset.name}`));
      if ((narrowed.length > 0 && narrowed.length < allItems.length) || Date.now() > deadlineKind) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(narrowed.length > 0 && narrowed.length < allItems.length, `filtering by kind narrows ${allItems} to ${narrowed}`);
    assert.ok(narrowed.every((item) => item.startsWith('ConfigMap/')), `only ConfigMaps: ${narrowed}`);
    assert.match(await page.getByTestId('contents-total').textContent(), new RegExp(`${narrowed.length} of ${allItems.length} items match`));
    await screenshot(page, '06b-backup-contents');
    const manifest = await apiGet(page, `/api/v1/namespaces/team-a/backups/${BACKUP}/manifest?download=true`);
    assert.equal(manifest.status, 200);
    assert.match(manifest.disposition ?? '', new RegExp(`attachment; filename="${BACKUP}-manifest\\.json"`));
    assert.equal(manifest.json.items.length, allItems.length);

    // The list shows it Completed too.
    await page.goto('/ns/team-a/backups');
    const row = page.locator(`[data-testid="backup-row"][data-backup="${BACKUP}"]`);
    await waitForText(row, /Completed/, 20_000);
    await screenshot(page, '07-backups');

    // The dashboard now counts it as the last successful backup (from the history store).
    await page.goto('/ns/team-a');
    await waitForText(page.getByTestId('last-backup'), new RegExp(BACKUP), 30_000);
    await screenshot(page, '07b-overview-protected');

    // Restore it through the wizard.
    await page.goto(`/ns/team-a/backups/${BACKUP}/restore`);
    await page.getByTestId('restore-wizard-page').waitFor();
    await page.getByTestId('backup-facts').waitFor();
    await page.getByTestId('wizard-next').click();
    await page.getByTestId('restore-name').fill(RESTORE);
    await page.getByTestId('restore-included').fill('configmaps');
    await screenshot(page, '08-restore-wizard');
    await page.getByTestId('wizard-next').click();
    // The preview: what the restore would do with each object, before anything is created.
    await page.getByTestId('preview-entry').first().waitFor({ timeout: 30_000 });
    const entries = await page.getByTestId('preview-entry').evaluateAll((rows) => rows.map((row) => `${row.dataset.action} ${row.dataset.name}`));
    assert.ok(entries.some((entry) => /^(Skip|Update|Create) web-config$/.test(entry)), `preview entries: ${entries}`);
    assert.ok(entries.every((entry) => /^(Create|Update|Skip|Fail|Undetermined) /.test(entry)), `actions: ${entries}`);
    await page.getByTestId('preview-counts').waitFor();
    await screenshot(page, '08a-restore-preview');
    assert.equal((await apiGet(page, `/api/v1/namespaces/team-a/restores/${RESTORE}`)).status, 404, 'the preview created no restore');
    await page.getByTestId('wizard-next').click();
    await page.getByTestId('restore-review').waitFor();
    await screenshot(page, '08b-restore-review');
    await page.getByTestId('wizard-next').click();
    await page.waitForURL(`**/ns/team-a/restores/${RESTORE}`);
    await waitForText(page.getByTestId('restore-phase'), /Completed/);
    await screenshot(page, '09-restore-detail');
    await page.goto('/ns/team-a/restores');
    await page.getByText(RESTORE).first().waitFor();
    await screenshot(page, '10-restores');

    // Delete the backup: the confirmation needs its name.
    await page.goto(`/ns/team-a/backups/${BACKUP}`);
    await page.getByTestId('delete-button').click();
    const confirm = page.getByTestId('delete-confirm-button');
    assert.equal(await confirm.isDisabled(), true, 'delete waits for the typed name');
    await page.getByTestId('delete-confirm-input').fill(BACKUP);
    await screenshot(page, '11-delete-confirmation');
    await confirm.click();
    await page.goto('/ns/team-a/backups');
    await page.getByTestId('backup-list').waitFor();
    const deadline = Date.now() + LIVE;
    while ((await page.locator(`[data-testid="backup-row"][data-backup="${BACKUP}"]`).count()) > 0) {
      assert.ok(Date.now() < deadline, 'the deleted backup leaves the list');
      await new Promise((r) => setTimeout(r, 250));
    }

    // The rest of the main pages.
    for (const [path, name] of [
      ['/ns/team-a/history', '12-history'],
      ['/ns/team-a/queue', '13-queue'],
      ['/ns/team-a/schedules', '14-schedules'],
      ['/ns/team-a/storage-locations', '15-storage-locations'],
    ]) {
      await page.goto(path);
      await page.waitForLoadState('networkidle', { timeout: 5_000 }).catch(() => {});
      await page.waitForTimeout(500);
      await screenshot(page, name);
    }

    // Sign out revokes the session: the old cookie no longer works.
    const old = (await context.cookies()).find((c) => c.name === 'nac_session');
    await page.getByTestId('user-menu').click();
    await page.getByTestId('sign-out').click();
    await page.getByLabel('Token').waitFor();
    const replay = await fetch(`${demo.baseUrl}/api/v1/session`, { headers: { Cookie: `nac_session=${old.value}` } });
    assert.equal(replay.status, 401);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('bob sees nothing of team-a', async () => {
    const { context, page } = await newPage();
    await signIn(page, demo.tokens.bob);
    await page.getByTestId('user-menu').waitFor();
    await page.getByText('team-b', { exact: true }).first().waitFor();
    assert.equal(await page.getByText('team-a', { exact: true }).count(), 0);
    // Straight to team-a's pages: an explanation, and none of team-a's object names.
    await page.goto('/ns/team-a/backups');
    await page.getByTestId('error-alert').first().waitFor();
    const text = await page.locator('body').innerText();
    assert.match(text, /not allowed|permission/i);
    assert.ok(!text.includes(RESTORE) && !text.includes('web-config'), 'no team-a names on the page');
    await screenshot(page, '16-bob-forbidden');
    await page.goto(`/ns/team-a/backups/${BACKUP}`);
    await page.getByTestId('error-alert').first().waitFor();
    await context.close();
  });

  test('the console works from the keyboard alone', async () => {
    const { context, page } = await newPage();
    await page.goto('/');
    // The token field has focus; Enter submits.
    await page.getByLabel('Token').waitFor();
    await page.keyboard.type(demo.tokens.alice);
    await page.keyboard.press('Enter');
    await page.getByTestId('user-menu').waitFor();
    // Tab to the team-a namespace link and open it with Enter.
    await page.getByTestId('namespace-link').first().waitFor();
    let reached = false;
    for (let presses = 0; presses < 40 && !reached; presses += 1) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => {
        const active = document.activeElement;
        return (
          !!active &&
          active.tagName === 'A' &&
          active.getAttribute('data-testid') === 'namespace-link' &&
          active.closest('[data-namespace]')?.getAttribute('data-namespace') === 'team-a'
        );
      });
    }
    assert.ok(reached, 'the team-a link is reachable with Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL('**/ns/team-a');
    // Every focusable control on the dashboard has an accessible name.
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('a[href], button, input, select, textarea')]
        .filter((element) => !element.closest('[aria-hidden="true"]') && element.getClientRects().length > 0)
        .filter((element) => {
          const label = element.getAttribute('aria-label') ?? element.getAttribute('aria-labelledby') ?? element.getAttribute('title');
          const byFor = element.id && document.querySelector(`label[for="${element.id}"]`);
          return !label && !byFor && !(element.textContent ?? '').trim();
        })
        .map((element) => element.outerHTML.slice(0, 120)),
    );
    assert.deepEqual(unnamed, [], 'controls without an accessible name');
    await context.close();
  });

  test('the main pages read at phone width', async () => {
    const { context, page } = await newPage({ width: 390, height: 844 });
    await signIn(page, demo.tokens.alice);
    await page.getByTestId('user-menu').waitFor();
    for (const [path, name] of [
      ['/', '20-phone-namespaces'],
      ['/ns/team-a', '21-phone-overview'],
      ['/ns/team-a/backups', '22-phone-backups'],
      ['/ns/team-a/backups/new', '23-phone-create-backup'],
    ]) {
      await page.goto(path);
      await page.waitForTimeout(800);
      await screenshot(page, name);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      // What sticks out, innermost first, so a failure names the culprit.
      const outside = await page.evaluate(() =>
        [...document.querySelectorAll('body *')]
          .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1 && element.children.length === 0)
          .slice(0, 5)
          .map((element) => `${element.tagName.toLowerCase()}.${element.className} "${(element.textContent ?? '').slice(0, 40)}"`),
      );
      assert.ok(overflow <= 1, `${path} fits a phone screen (overflow ${overflow}px): ${outside.join('; ')}`);
    }
    await context.close();
  });
});
