-- idemsim: the idempotency schema for PostgreSQL (used by PgStore).
-- Created in the schema the caller names (the connection's search_path).
-- Times are milliseconds on the caller's clock; the store never reads a clock.

CREATE TABLE IF NOT EXISTS idem_records (
    caller          TEXT    NOT NULL COLLATE "C",
    key             TEXT    NOT NULL COLLATE "C",
    fingerprint     TEXT    NOT NULL,
    -- 'released' is a tombstone: the key reads as absent, but the attempt
    -- count survives, so a re-claim never reissues a fencing token.
    status          TEXT    NOT NULL CHECK (status IN ('in_progress', 'completed', 'released')),
    attempt         INTEGER NOT NULL CHECK (attempt >= 1),   -- the fencing token
    locked_until    BIGINT,                                  -- lease, while in_progress
    recovery_key    TEXT,                                    -- downstream key of the recovery point
    recovery_data   BYTEA,
    response_status INTEGER,                                 -- once completed
    response_body   BYTEA,
    created_at      BIGINT  NOT NULL,
    PRIMARY KEY (caller, key)                                -- the claim's unique constraint
);
CREATE INDEX IF NOT EXISTS idem_records_lease ON idem_records (status, locked_until);
CREATE INDEX IF NOT EXISTS idem_records_age ON idem_records (status, created_at);

-- Stand-in for the application's own tables: a local effect committed in the
-- same transaction as the completion.
CREATE TABLE IF NOT EXISTS idem_effects (
    seq       BIGSERIAL PRIMARY KEY,
    caller    TEXT  NOT NULL COLLATE "C",
    key       TEXT  NOT NULL COLLATE "C",
    effect_id TEXT  NOT NULL,
    data      BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS idem_effects_scope ON idem_effects (caller, key, seq);

-- Transactional outbox.
CREATE TABLE IF NOT EXISTS idem_outbox (
    seq        BIGSERIAL PRIMARY KEY,
    message_id TEXT    NOT NULL UNIQUE,
    caller     TEXT    NOT NULL COLLATE "C",
    key        TEXT    NOT NULL COLLATE "C",
    topic      TEXT    NOT NULL,
    payload    BYTEA   NOT NULL,
    published  BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS idem_outbox_pending ON idem_outbox (published, seq);
