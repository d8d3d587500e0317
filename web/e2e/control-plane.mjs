// A real Kubernetes control plane for the browser tests (NAC_E2E_SERVER=real): etcd,
// kube-apiserver and kube-controller-manager from $KUBEBUILDER_ASSETS (envtest's layout, which
// scripts/test.sh fills from ../shared/k8s), on free loopback ports with a static-token admin.
// `nac demo --kubeconfig` then installs NAC into it. A watchdog shell kills the processes and
// removes the state directory when this Node process ends, however it ends.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves when `probe()` is true, or fails after `ms` with `what` and the logs' tails. */
async function waitFor(what, ms, probe, dir) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(200);
  }
  const tail = (name) => {
    const file = join(dir, `${name}.log`);
    return existsSync(file) ? `--- ${name}.log\n${readFileSync(file, 'utf8').slice(-2000)}` : '';
  };
  throw new Error(`timed out after ${ms} ms waiting for ${what}\n${['etcd', 'apiserver', 'kcm'].map(tail).join('\n')}`);
}

/** GET `path` on the API server as `token`, trusting `ca`: the status code, or 0 when down. */
function apiGet(server, ca, token, path) {
  return new Promise((resolveStatus) => {
    const req = request(`${server}${path}`, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 }, (res) => {
      res.resume();
      resolveStatus(res.statusCode ?? 0);
    });
    req.on('error', () => resolveStatus(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** A kubeconfig for `token` on `server` (CA `ca`). */
function kubeconfig(server, ca, token) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'admin@e2e', context: { cluster: 'e2e', user: 'admin' } }],
    'current-context': 'admin@e2e',
  });
}

/**
 * Starts the control plane; resolves with its URL and the admin's kubeconfig once /readyz
 * answers 200. `stop()` kills it and removes its state.
 */
export async function startControlPlane() {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (!assets) throw new Error('NAC_E2E_SERVER=real needs KUBEBUILDER_ASSETS (etcd, kube-apiserver, kube-controller-manager)');
  const dir = mkdtempSync(join(tmpdir(), 'nac-e2e-control-plane-'));
  mkdirSync(join(dir, 'certs'));
  const children = [];
  const watchdog = spawn('sh', ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 $(cat "${dir}"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "${dir}"`], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  const run = (name, binary, args) => {
    const log = openSync(join(dir, `${name}.log`), 'a');
    const child = spawn(join(assets, binary), args, { stdio: ['ignore', log, log] });
    writeFileSync(join(dir, `${name}.pid`), String(child.pid));
    children.push(child);
  };

  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  writeFileSync(join(dir, 'sa.key'), privateKey);
  writeFileSync(join(dir, 'sa.pub'), publicKey);
  const adminToken = randomBytes(24).toString('hex');
  writeFileSync(join(dir, 'tokens.csv'), `${adminToken},admin,uid-admin,"system:masters"\n`);

  const [etcdPort, peerPort, apiPort, kcmPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  run('etcd', 'etcd', [
    '--data-dir', join(dir, 'etcd'),
    '--listen-client-urls', etcdUrl,
    '--advertise-client-urls', etcdUrl,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync',
    '--log-level', 'warn',
  ]);
  run('apiserver', 'kube-apiserver', [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, 'certs')}`,
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--api-audiences=https://kubernetes.default.svc',
  ]);
  const stop = async () => {
    for (const child of children.reverse()) child.kill('SIGKILL');
    await sleep(200);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const certificate = join(dir, 'certs', 'apiserver.crt');
    await waitFor("kube-apiserver's certificate", 60_000, () => existsSync(certificate), dir);
    const ca = readFileSync(certificate, 'utf8');
    const server = `https://127.0.0.1:${apiPort}`;
    const adminKubeconfig = join(dir, 'kubeconfig-admin');
    writeFileSync(adminKubeconfig, kubeconfig(server, ca, adminToken), { mode: 0o600 });
    await waitFor('kube-apiserver /readyz', 120_000, async () => (await apiGet(server, ca, adminToken, '/readyz')) === 200, dir);
    // ClusterRole aggregation (NAC's tenant roles into `admin`), namespace deletion and
    // garbage collection are kube-controller-manager's.
    if (existsSync(join(assets, 'kube-controller-manager'))) {
      run('kcm', 'kube-controller-manager', [
        `--kubeconfig=${adminKubeconfig}`,
        '--leader-elect=false',
        '--controllers=*',
        `--service-account-private-key-file=${join(dir, 'sa.key')}`,
        `--root-ca-file=${certificate}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
      ]);
    }
    const version = spawnSync(join(assets, 'kube-apiserver'), ['--version'], { encoding: 'utf8' }).stdout.trim();
    return { server, adminKubeconfig, version, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
