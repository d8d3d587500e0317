#!/usr/bin/env bash
# Builds NAC's container image without a container daemon or registry access: the `nac` binary
# statically linked (glibc included, `-C target-feature=+crt-static`, release profile), a root
# filesystem around it, and `buildah bud -f Containerfile.prebuilt` (FROM scratch: nothing is
# pulled) with the vfs storage driver and chroot isolation. Writes an OCI archive and checks the
# image by running it as its non-root user.
#
#   scripts/build-image.sh                      build, archive, check (CI runs this)
#   scripts/build-image.sh --context BINARY DIR only lay out the final stage's build context
#                                               around BINARY in DIR (Containerfile's build
#                                               stage uses it)
#
# Output (NAC_IMAGE_DIR, default target/image in the checkout):
#   nac-<version>-<rev>[-dirty].oci.tar   the image, tagged nac:<version>-<rev>[-dirty]
#   context/                              the build context (what the image holds)
#   storage/                              buildah's own image store (vfs), rebuilt each run
# Needs: cargo, git, buildah, readelf, openssl (the last three installed with apt when missing),
# the CA bundle at /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates, installed when
# missing; NAC_CA_BUNDLE to use another).
set -euo pipefail
cd "$(dirname "$0")/.."

# The build context of the image's final stage around a static binary, in DIR:
#   DIR/rootfs/  copied to `/` as root's: usr/local/bin/nac, etc/ssl/certs/ca-certificates.crt,
#                etc/{passwd,group,nsswitch.conf} (from image/etc/), an empty /tmp (1777)
#                and /home
#   DIR/home/    an empty directory, copied to /home/nac as the user's (65532): the user's HOME
#                in /etc/passwd, where `nac migrate` and friends keep SQLite by default
assemble_context() {
  local binary="$1" dir="$2"
  local ca_bundle="${NAC_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
  [ -s "$ca_bundle" ] || { echo "error: no CA bundle at $ca_bundle (apt-get install ca-certificates)"; exit 1; }
  rm -rf "$dir"
  install -D -m 0755 "$binary" "$dir/rootfs/usr/local/bin/nac"
  install -D -m 0644 "$ca_bundle" "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
  install -m 0644 image/etc/passwd image/etc/group image/etc/nsswitch.conf "$dir/rootfs/etc/"
  install -d -m 1777 "$dir/rootfs/tmp"
  install -d -m 0755 "$dir/rootfs/home"
  install -d -m 0700 "$dir/home"
}

if [ "${1:-}" = "--context" ]; then
  [ "$#" -eq 3 ] || { echo "usage: $0 --context BINARY DIR"; exit 2; }
  assemble_context "$2" "$3"
  exit 0
fi
[ "$#" -eq 0 ] || { echo "usage: $0 [--context BINARY DIR]"; exit 2; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nac/target}"
out="${NAC_IMAGE_DIR:-target/image}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

need_apt=()
command -v buildah >/dev/null 2>&1 || need_apt+=(buildah)
[ -s /etc/ssl/certs/ca-certificates.crt ] || [ -n "${NAC_CA_BUNDLE:-}" ] || need_apt+=(ca-certificates)
command -v readelf >/dev/null 2>&1 || need_apt+=(binutils)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "==> installing ${need_apt[*]} (apt)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

version="$(cargo pkgid --quiet | sed 's/.*[#@]//')"
revision="$(git rev-parse HEAD)"
tag="$version-$(git rev-parse --short HEAD)"
# Uncommitted changes to tracked files (what `git describe --dirty` means).
[ -z "$(git status --porcelain --untracked-files=no)" ] || tag="$tag-dirty"
source_url="$(git remote get-url origin 2>/dev/null || true)"
case "$source_url" in *://*|*@*:*) ;; *) source_url=unknown ;; esac
image="localhost/nac:$tag"
archive="$out/nac-$tag.oci.tar"

echo "==> static nac binary (cargo rustc --release, -C target-feature=+crt-static on the binary)"
start=$(date +%s)
# `cargo rustc` passes the flag to the binary's compilation only: the nac library and the
# dependencies are the very artifacts `cargo build --release` makes, and the dependencies mostly
# those `cargo bench` made before in CI (the library is compiled once more: the benchmarks' build
# has the dev-dependencies' features); build scripts and proc-macros stay dynamic, and the binary
# links glibc (and all else) statically. Cargo keeps this binary and the dynamic one apart:
# target/release/nac is whichever was built last.
cargo rustc --locked --quiet --release --bin nac -- -C target-feature=+crt-static
binary="$CARGO_TARGET_DIR/release/nac"
echo "  $binary: $(du -h --apparent-size "$binary" | cut -f1), $(( $(date +%s) - start )) s"
if readelf -l "$binary" | grep -q 'program interpreter' || readelf -d "$binary" | grep -q NEEDED; then
  echo "error: $binary is dynamically linked"; readelf -d "$binary" | grep NEEDED; exit 1
fi

echo "==> image $image (buildah $(buildah --version | awk '{print $3}'), vfs storage in $out/storage)"
assemble_context "$binary" "$out/context"
b=(buildah --root "$out/storage" --runroot "$out/run" --storage-driver vfs)
# A store of its own, rebuilt every run: no clash with a podman/buildah configuration of the
# machine (another storage driver), and nothing piles up.
"${b[@]}" rm --all >/dev/null 2>&1 || true
if grep -q " $out/" /proc/self/mounts; then
  echo "error: something is mounted under $out (an interrupted build?): unmount it first"; grep " $out/" /proc/self/mounts; exit 1
fi
rm -rf --one-file-system "$out/storage" "$out/run"
"${b[@]}" bud --quiet --isolation chroot --pull-never --layers=false \
  -f Containerfile.prebuilt \
  --build-arg NAC_VERSION="$version" \
  --build-arg NAC_REVISION="$revision" \
  --build-arg NAC_SOURCE="$source_url" \
  --timestamp "$(git log -1 --format=%ct)" \
  -t "$image" "$out/context" >/dev/null
rm -f "$out"/nac-*.oci.tar
"${b[@]}" push --quiet "$image" "oci-archive:$archive:nac:$tag"
"${b[@]}" inspect --type image --format '{{range $k, $v := .OCIv1.Config.Labels}}  {{$k}}={{$v}}
{{end}}  user {{.OCIv1.Config.User}}, entrypoint {{.OCIv1.Config.Entrypoint}}
' "$image"

user="$("${b[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$image")"
echo "==> in the image, as its user $user (buildah run --isolation chroot)"
# A name only /etc/hosts knows (buildah writes the container's /etc/hosts from --add-host).
ctr="$("${b[@]}" from --pull-never --add-host nac-hosts-entry.test:127.0.0.1 "$image")"
tls_pid=""
cleanup() {
  [ -z "$tls_pid" ] || kill "$tls_pid" 2>/dev/null || true
  "${b[@]}" rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# run [buildah run options] -- nac's arguments
run() {
  local opts=()
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  "${b[@]}" run --isolation chroot "${opts[@]}" "$ctr" -- nac "$@"
}
echo "\$ nac --version"; run -- --version
echo "\$ nac crds | head -n 6"; run -- crds > "$out/crds.yaml"; head -n 6 "$out/crds.yaml"
echo "  ($(grep -c '^kind: CustomResourceDefinition' "$out/crds.yaml") CustomResourceDefinitions, $(wc -l < "$out/crds.yaml") lines)"
echo "\$ nac gateway --help | head -n 3"; run -- gateway --help > "$out/gateway-help.txt"; head -n 3 "$out/gateway-help.txt"
# SQLite (bundled, linked in): the history store's default place is in the user's HOME; the user
# cannot write to /.
echo "\$ nac migrate"; run -- migrate
echo "\$ nac migrate --database-url sqlite:///history.db   (refused: the user is not root)"
if run -- migrate --database-url sqlite:///history.db > "$out/refused.txt" 2>&1; then
  echo "error: the image's user could write to /"; exit 1
fi
head -n 1 "$out/refused.txt" | sed 's/^/  /'

# DNS (static glibc: only the built-in files and dns services) and TLS (rustls with ring; the
# platform's roots, read from /etc/ssl/certs/ca-certificates.crt): `nac backup list` against an
# HTTPS server on the loopback with a certificate from a throwaway CA. Trusted through
# SSL_CERT_FILE it answers (200 with a page that is no gateway's); with the image's own bundle the
# certificate is refused; with no bundle at all nac says it found none.
tls="$out/tls"; rm -rf "$tls"; mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=nac-image-test-ca \
  -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,DNS:nac-hosts-entry.test\n' > "$tls/ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
  -days 1 -extfile "$tls/ext" -out "$tls/server.pem" 2>/dev/null
port=$(( 20000 + RANDOM % 20000 ))
openssl s_server -quiet -www -accept "127.0.0.1:$port" -cert "$tls/server.pem" -key "$tls/server.key" >/dev/null 2>&1 &
tls_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
"${b[@]}" copy --quiet "$ctr" "$tls/ca.pem" /tmp/test-ca.pem >/dev/null
# What `nac backup list` says (it fails: the server is no gateway).
answer() { { run "$@" 2>&1 || true; } | grep -m 1 '^error:' || true; }
for host in localhost nac-hosts-entry.test; do
  echo "\$ SSL_CERT_FILE=/tmp/test-ca.pem nac backup list --server https://$host:$port --token t"
  a="$(answer --env SSL_CERT_FILE=/tmp/test-ca.pem -- backup list --server "https://$host:$port" --token t)"
  echo "  $a"
  case "$a" in *"200 OK"*) ;; *) echo "error: no TLS answer from $host"; exit 1 ;; esac
done
echo "\$ nac backup list --server https://localhost:$port --token t   (the image's bundle: the throwaway CA is not trusted)"
a="$(answer -- backup list --server "https://localhost:$port" --token t)"; echo "  $a"
case "$a" in *"cannot reach the gateway"*) ;; *) echo "error: the certificate was not refused"; exit 1 ;; esac
echo "\$ SSL_CERT_FILE=/nonexistent nac backup list --server https://localhost:$port --token t   (no bundle)"
a="$(answer --env SSL_CERT_FILE=/nonexistent -- backup list --server "https://localhost:$port" --token t)"; echo "  $a"
case "$a" in *"no native root CA certificates"*) ;; *) echo "error: unexpected answer without a CA bundle"; exit 1 ;; esac

echo "==> size"
echo "  OCI archive $archive: $(du -h "$archive" | cut -f1) ($(stat -c %s "$archive") bytes)"
echo "  uncompressed: $("${b[@]}" images --format '{{.Size}}' "$image") (nac $(du -h --apparent-size "$binary" | cut -f1))"
echo "==> image built: $image -> $archive"
