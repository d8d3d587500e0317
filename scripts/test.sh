#!/usr/bin/env bash
# Runs NAC's whole test suite on a fresh Debian/Ubuntu machine with a Rust toolchain: formatting,
# lints, generated-artifact drift, unit and conformance tests (in-process emulator and real
# kubectl when present), the web console (API types drift, type check, lint, unit tests, build
# drift, browser end-to-end tests in Debian's Chromium against a real `nac demo`), and quick
# benchmark runs. Installs what it needs itself.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nac/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
mkdir -p "$CARGO_TARGET_DIR"

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "==> installing ${need_apt[*]} (apt)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "==> adding rustfmt and clippy (rustup)"
  rustup component add rustfmt clippy
fi

echo "==> cargo fmt --check"
cargo fmt --check

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --quiet -- -D warnings

# The real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) in
# envtest's KUBEBUILDER_ASSETS layout: every end-to-end suite runs on it as well as on the
# emulator. A caller's KUBEBUILDER_ASSETS (e.g. `setup-envtest use -p path`) wins; otherwise the
# bundle beside the checkout is unpacked (once, into ~/.cache/nac). Under CI=true a suite that
# finds no control plane fails instead of skipping its real-server cases.
bundle="$(cd .. && pwd)/shared/k8s/install.sh"
if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -f "$bundle" ]; then
  if ! command -v xz >/dev/null 2>&1; then
    echo "==> installing xz-utils (apt) to unpack the control plane"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq xz-utils
  fi
  KUBEBUILDER_ASSETS="$(bash "$bundle")"
  export KUBEBUILDER_ASSETS
fi
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  echo "==> real control plane: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS ($("$KUBEBUILDER_ASSETS/kube-apiserver" --version 2>/dev/null))"
  # Its kubectl goes first on PATH: the kubectl suite runs on a machine that has none, and
  # with the client version that matches the server.
  [ -x "$KUBEBUILDER_ASSETS/kubectl" ] && export PATH="$KUBEBUILDER_ASSETS:$PATH"
else
  echo "==> no real control plane (KUBEBUILDER_ASSETS unset, no ../shared/k8s): real-server cases skip"
fi
if command -v kubectl >/dev/null 2>&1; then
  echo "==> kubectl: $(command -v kubectl) ($(kubectl version --client 2>/dev/null | head -n1))"
else
  echo "==> kubectl not found: the kubectl suite will skip with a printed reason"
fi

# tests/velero_storage_s3.rs runs the simulator's object storage against s3s-fs, a real
# S3-compatible server from crates.io (0.15+ needs a newer rustc than ours). `cargo install`
# puts it in ~/.cargo/bin; it is built once and reused on later runs.
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v s3s-fs >/dev/null 2>&1; then
  echo "==> installing s3s-fs 0.14.1 (cargo install, a few minutes once)"
  # Its own temporary target dir: no release build of s3s in the project's shared one.
  env -u CARGO_TARGET_DIR cargo install --locked s3s-fs@0.14.1 --features binary
fi

# tests/history_store.rs and the history benchmark run a throwaway PostgreSQL cluster
# (tests/support/postgres.rs), which needs the server binaries (initdb, pg_ctl).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "==> installing postgresql (apt) for the history store tests"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq postgresql
  echo "==> installed $(ls -d /usr/lib/postgresql/*/bin | tail -n1)"
fi

# The web console (web/): dependencies pinned by package-lock.json from the npm registry; its API
# types (web/src/api/schema.d.ts) are generated from openapi/openapi.json and checked in, so
# regenerating them (openapi-typescript from node_modules, nothing downloaded) must give the same
# file; then type check, lint and unit tests. The built console is checked in (web/dist, embedded
# by the gateway), so a fresh build must equal it.
command -v node >/dev/null 2>&1 || { echo "error: Node.js 20.19+ and npm 11 are needed for web/ (apt-get install nodejs npm)"; exit 1; }
echo "==> web console: npm ci (node $(node --version), npm $(npm --version 2>/dev/null))"
(cd web && npm ci --no-audit --no-fund --loglevel=error)
echo "==> web console: the checked-in API types (web/src/api/schema.d.ts) are what openapi/openapi.json generates"
if ! (cd web && npm run --silent check:api); then
  echo "error: web/src/api/schema.d.ts is stale: run (cd web && npm run gen:api) and commit it"
  exit 1
fi
echo "==> web console: type check, lint (ESLint) and unit tests (vitest)"
(cd web && npx tsc -b && npm run --silent lint && npx vitest run)
echo "==> web console: the checked-in build (web/dist) is what the sources build"
web_build="$(mktemp -d)"
(cd web && NAC_WEB_OUT_DIR="$web_build/dist" npx vite build --logLevel warn)
if ! diff -r web/dist "$web_build/dist"; then
  echo "error: web/dist is stale: run (cd web && npm run build) and commit web/dist"
  exit 1
fi
rm -rf "$web_build"

# Browser tests drive Debian's Chromium (never a downloaded browser) with playwright-core.
if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (apt) for the console's browser tests"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium
fi

echo "==> cargo test"
test_log="$(mktemp)"
set +e
# --no-fail-fast: one failing suite must not hide what the others say.
cargo test --no-fail-fast --lib --bins --tests -- --test-threads=2 2>&1 | tee "$test_log"
test_status=${PIPESTATUS[0]}
set -e
# Cases that run on both servers are named `<case>::emulator` and `<case>::real`.
echo "==> test cases per server: emulator $(grep -cE '::emulator \.\.\. ok$' "$test_log") passed, real kube-apiserver $(grep -cE '::real \.\.\. ok$' "$test_log") passed"
rm -f "$test_log"
[ "$test_status" -eq 0 ] || exit "$test_status"

echo "==> web console: browser end-to-end tests against nac demo on its emulator (screenshots in web/test-output)"
cargo build --quiet --bin nac
(cd web && NAC_BIN="$CARGO_TARGET_DIR/debug/nac" npm run --silent e2e)
# The same scenarios with `nac demo --kubeconfig` installed into a real control plane.
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  echo "==> web console: browser end-to-end tests against nac demo on a real kube-apiserver (screenshots in web/test-output/real-server)"
  (cd web && NAC_E2E_SERVER=real NAC_E2E_OUTPUT=test-output/real-server NAC_BIN="$CARGO_TARGET_DIR/debug/nac" npm run --silent e2e)
elif [ "${CI:-}" = "true" ]; then
  echo "error: CI=true and no real control plane (KUBEBUILDER_ASSETS) for the browser tests"
  exit 1
else
  echo "==> no real control plane: the browser tests ran on the emulator only"
fi

# The two benchmarks that involve the API server run on the real control plane (with the
# emulator as a second column): the gateway's warm list against kube-apiserver's, and the
# controller taking NABs to Created against the floor of the same writes.
echo "==> gateway benchmark (quick; real kube-apiserver, then emulator)"
cargo bench --bench gateway -- --quick

echo "==> controller at scale benchmark (quick; real kube-apiserver, then emulator)"
cargo bench --bench controller_scale -- --quick

echo "==> streams and footprint benchmark (quick; nac controller and gateway processes on the real kube-apiserver)"
cargo bench --bench streams -- --quick

echo "==> emulator benchmark (quick)"
cargo bench --bench emulator -- --quick

echo "==> queue index benchmark (quick)"
cargo bench --bench queue_index -- --quick

echo "==> history store benchmark (quick)"
cargo bench --bench history -- --quick

echo "==> backup manifest benchmark (quick)"
cargo bench --bench manifest -- --quick

# The container image as CI's machines can build it (no daemon, no registry): the static binary
# (release: the benchmarks' release build above gives most dependencies, the nac library is
# compiled again, ~7 min on 2 cores), `buildah bud -f Containerfile.prebuilt` into an OCI archive
# under target/image/, then `nac --version`, `nac crds`, `nac gateway --help`, SQLite, DNS and TLS
# run inside it as its non-root user; prints its size. Installs buildah (apt) when missing.
echo "==> container image (scripts/build-image.sh)"
image_start=$(date +%s)
./scripts/build-image.sh
echo "==> container image: $(( $(date +%s) - image_start )) s"
