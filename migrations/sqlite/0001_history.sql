-- The history store (SQLite). Same schema as migrations/postgres (times are epoch milliseconds,
-- text compares bytewise); only the autoincrement and blob types differ.

-- One row per operation: the latest known state (see OperationRecord).
CREATE TABLE operations (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    kind           TEXT,
    name           TEXT NOT NULL DEFAULT '',
    uid            TEXT NOT NULL DEFAULT '',
    velero_name    TEXT,
    parent_name    TEXT,
    requester      TEXT,
    created_at     BIGINT NOT NULL DEFAULT 0,
    started_at     BIGINT,
    completed_at   BIGINT,
    phase          TEXT,
    phase_rank     BIGINT NOT NULL DEFAULT 0,
    nac_phase      TEXT,
    items_total    BIGINT,
    items_done     BIGINT,
    warnings       BIGINT,
    errors         BIGINT,
    failure_reason TEXT,
    queue_position BIGINT,
    deleted_at     BIGINT,
    updated_at     BIGINT NOT NULL DEFAULT 0
);

-- Keyset paging of a namespace, newest first.
CREATE INDEX operations_page ON operations (namespace, created_at DESC, id DESC);
-- Coverage and ETA reads (newest completed of some kinds).
CREATE INDEX operations_completed ON operations (namespace, kind, completed_at);
-- Finding an operation by its Velero object.
CREATE INDEX operations_velero ON operations (kind, velero_name);
-- Finding an operation by its tenant object name.
CREATE INDEX operations_name ON operations (namespace, kind, name);

-- Append-only timeline facts; (operation_id, attribute, value, dedup) makes replays no-ops.
CREATE TABLE transitions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id TEXT NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    namespace    TEXT NOT NULL,
    at           BIGINT NOT NULL,
    attribute    TEXT NOT NULL,
    value        TEXT NOT NULL,
    reason       TEXT,
    message      TEXT,
    dedup        TEXT NOT NULL DEFAULT '',
    UNIQUE (operation_id, attribute, value, dedup)
);

CREATE INDEX transitions_timeline ON transitions (namespace, operation_id, seq);

-- Idempotency-Key records of gateway writes.
CREATE TABLE idempotency_keys (
    caller       TEXT NOT NULL,
    path         TEXT NOT NULL,
    key          TEXT NOT NULL,
    body_digest  BLOB NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    status       BIGINT,
    content_type TEXT,
    body         BLOB,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (caller, path, key)
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
