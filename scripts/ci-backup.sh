#!/usr/bin/env bash
# A CI pipeline step: back up a namespace through NAC's gateway and fail the job unless the
# backup completed. Needs `nac` on PATH, NAC_SERVER (the gateway's URL) and NAC_TOKEN (a token
# allowed to create NonAdminBackups there, e.g. a service account's).
#   usage: scripts/ci-backup.sh NAMESPACE [BACKUP-NAME]
set -euo pipefail
namespace=${1:?usage: $0 NAMESPACE [BACKUP-NAME]}
name=${2:-ci-$(date -u +%Y%m%d%H%M%S)}

set +e
nac backup create "$name" -n "$namespace" --wait --timeout 30m -o name \
    --idempotency-key "${CI_PIPELINE_ID:-local}-$name"
status=$?
set -e
case $status in
  0) echo "backup $namespace/$name completed" ;;
  3) echo "backup $namespace/$name partially failed; its log follows" >&2
     nac backup logs "$name" -n "$namespace" >&2 || true ;;
  4) echo "backup $namespace/$name failed or was refused" >&2 ;;
  5) echo "backup $namespace/$name did not finish in time" >&2 ;;
  *) echo "could not back up $namespace (exit $status)" >&2 ;;
esac
exit "$status"
