// Browser end-to-end harness: starts a real `nac demo` on free ports in a throwaway data
// directory, reads the demo users' tokens from its banner, and drives Debian's Chromium
// headless through playwright-core (never a downloaded browser).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const outputDir = resolve(process.env.NAC_E2E_OUTPUT ?? join(import.meta.dirname, '..', 'test-output'));
export const screenshotDir = join(outputDir, 'screenshots');

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** Where the `nac` binary is: $NAC_BIN, else the debug build in the shared target dir. */
export function nacBinary() {
  if (process.env.NAC_BIN) return process.env.NAC_BIN;
  const target = process.env.CARGO_TARGET_DIR ?? join(process.env.HOME ?? '/root', '.cache', 'nac', 'target');
  return join(target, 'debug', 'nac');
}

/**
 * Starts `nac demo` and resolves once its gateway answers /readyz, with the base URL and the
 * tokens printed in the banner. `stop()` ends it (SIGINT, like Ctrl-C). With `kubeconfig` (an
 * admin's, e.g. from control-plane.mjs) the demo is installed into that cluster instead of its
 * own emulator.
 */
export async function startDemo({ kubeconfig } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'nac-e2e-'));
  const gatewayPort = await freePort();
  const apiserverPort = await freePort();
  const child = spawn(
    nacBinary(),
    [
      'demo',
      '--data-dir', dataDir,
      '--gateway-listen', `127.0.0.1:${gatewayPort}`,
      '--apiserver-listen', `127.0.0.1:${apiserverPort}`,
      ...(kubeconfig ? ['--kubeconfig', kubeconfig] : []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' } },
  );
  let banner = '';
  let logs = '';
  child.stdout.on('data', (chunk) => (banner += chunk));
  child.stderr.on('data', (chunk) => (logs += chunk));
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  const baseUrl = `http://127.0.0.1:${gatewayPort}`;
  const deadline = Date.now() + 120_000;
  const tokens = {};
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nac demo exited early (${child.exitCode}):\n${banner}\n${logs.slice(-4000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nac demo did not become ready in 120 s:\n${banner}\n${logs.slice(-4000)}`);
    }
    for (const user of ['alice', 'bob', 'ci-bot']) {
      // The token lines: `  USER  TOKEN` (an emulator token, or a service account's JWT).
      const match = new RegExp(`^\\s+${user}\\s+(\\S+)\\s*$`, 'm').exec(banner);
      if (match) tokens[user] = match[1];
    }
    if (tokens.alice && tokens.bob) {
      try {
        const ready = await fetch(`${baseUrl}/readyz`);
        if (ready.ok) break;
      } catch {
        // not listening yet
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  // The demo takes two sample backups of team-a in the background after its banner. Wait until
  // the second one's manifest is stored, so the tests' own backups queue and finish after them
  // (on a loaded machine the samples could otherwise finish last and be "the last backup").
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nac demo exited early (${child.exitCode}):\n${banner}\n${logs.slice(-4000)}`);
    if (Date.now() > deadline + 60_000) {
      child.kill('SIGKILL');
      throw new Error(`the demo's sample backups were not done in time:\n${logs.slice(-4000)}`);
    }
    try {
      const sample = await fetch(`${baseUrl}/api/v1/namespaces/team-a/backups/sample-2/manifest`, {
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      if (sample.ok) break;
    } catch {
      // not answering: the exit check above tells a crash from a slow start
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    baseUrl,
    tokens,
    dataDir,
    logs: () => logs,
    async stop() {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Debian's Chromium, headless, with the flags that keep it off the (closed) network. */
export async function launchBrowser() {
  // launch() gives every run a fresh, empty profile of its own.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/** Saves a full-page screenshot as screenshots/<name>.png. */
export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true });
}
