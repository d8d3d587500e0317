-- Identity over time (DESIGN §5): history rows and Idempotency-Key records carry the UID of
-- their tenant namespace, and every tenant read matches it as well as the name, so a namespace
-- deleted and created again under the same name sees nothing of its predecessor. Same schema as
-- migrations/sqlite/0003_namespace_uid.sql.
--
-- Rows written before have no UID (''): the recorder attributes such a row to the namespace of
-- that name that exists when it starts, only if that namespace was created no later than the
-- operation (a namespace created after an operation cannot own it); rows it cannot attribute
-- are never shown to a tenant. The admin reads them here until retention purges them.
-- Transitions and manifests belong to their operation and are read through it.
ALTER TABLE operations ADD COLUMN namespace_uid TEXT NOT NULL DEFAULT '';

-- Every tenant read is scoped to (namespace, namespace_uid): the indexes lead with both.
DROP INDEX operations_page;
CREATE INDEX operations_page ON operations (namespace, namespace_uid, created_at DESC, id DESC);
DROP INDEX operations_completed;
CREATE INDEX operations_completed ON operations (namespace, namespace_uid, kind, completed_at);
DROP INDEX operations_name;
CREATE INDEX operations_name ON operations (namespace, namespace_uid, kind, name);

-- An Idempotency-Key answer belongs to the namespace it was given in: a record of another UID
-- is treated as absent (and replaced).
ALTER TABLE idempotency_keys ADD COLUMN namespace_uid TEXT NOT NULL DEFAULT '';
