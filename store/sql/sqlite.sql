-- idemsim: the idempotency schema for SQLite (used by SqliteStore).
-- Times are milliseconds on the caller's clock; the store never reads a clock.

-- One row per (caller, key). The UNIQUE constraint is what makes the claim
-- atomic: INSERT ... ON CONFLICT DO NOTHING RETURNING.
CREATE TABLE IF NOT EXISTS idem_records (
    caller          TEXT    NOT NULL,
    key             TEXT    NOT NULL,
    fingerprint     TEXT    NOT NULL,
    -- 'released' is a tombstone: the key reads as absent, but the attempt
    -- count survives, so a re-claim never reissues a fencing token.
    status          TEXT    NOT NULL CHECK (status IN ('in_progress', 'completed', 'released')),
    attempt         INTEGER NOT NULL CHECK (attempt >= 1),  -- the fencing token
    locked_until    INTEGER,                                -- lease, while in_progress
    recovery_key    TEXT,                                   -- downstream key of the recovery point
    recovery_data   BLOB,
    response_status INTEGER,                                -- once completed
    response_body   BLOB,
    created_at      INTEGER NOT NULL,
    UNIQUE (caller, key)
);

-- The reconciler's and the sweeper's scans.
CREATE INDEX IF NOT EXISTS idem_records_lease ON idem_records (status, locked_until);
CREATE INDEX IF NOT EXISTS idem_records_age ON idem_records (status, created_at);

-- Stand-in for the application's own tables (orders, ...): a local effect
-- committed in the same transaction as the completion.
CREATE TABLE IF NOT EXISTS idem_effects (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    caller    TEXT NOT NULL,
    key       TEXT NOT NULL,
    effect_id TEXT NOT NULL,
    data      BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS idem_effects_scope ON idem_effects (caller, key, seq);

-- Transactional outbox: written by the completing transaction, published by
-- a relay afterwards, never directly by the handler.
CREATE TABLE IF NOT EXISTS idem_outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT    NOT NULL UNIQUE,
    caller     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    topic      TEXT    NOT NULL,
    payload    BLOB    NOT NULL,
    published  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idem_outbox_pending ON idem_outbox (published, seq);
