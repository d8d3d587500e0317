-- Backup manifests (seed 002): one per backup operation, built once from the backup's contents.
-- The document is kept in its compact encoding (gzip'd JSON, see src/manifest/export.rs) with a
-- summary beside it, so listings never read the items. A manifest goes with its operation.
CREATE TABLE manifests (
    operation_id   TEXT PRIMARY KEY REFERENCES operations (id) ON DELETE CASCADE,
    namespace      TEXT NOT NULL,
    backup_name    TEXT NOT NULL,
    velero_name    TEXT NOT NULL,
    velero_uid     TEXT NOT NULL DEFAULT '',
    format_version BIGINT NOT NULL,
    item_count     BIGINT NOT NULL,
    -- Items per kind: a JSON array of {group, kind, resource, count}.
    counts_by_kind TEXT NOT NULL,
    encoded        BLOB NOT NULL,
    encoded_size   BIGINT NOT NULL,
    built_at       BIGINT NOT NULL
);

-- A namespace's manifests (every read is scoped to one).
CREATE INDEX manifests_namespace ON manifests (namespace, operation_id);
