-- idemsim: the idempotency schema for MySQL 8 / MariaDB 10.5+ (used by MySqlStore).
-- Created in the database the caller names. Keys compare bytewise (utf8mb4_bin),
-- like the model's BTreeMap. Times are milliseconds on the caller's clock.

CREATE TABLE IF NOT EXISTS idem_records (
    caller          VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    `key`           VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    fingerprint     VARCHAR(64)  NOT NULL,
    -- 'released' is a tombstone: the key reads as absent, but the attempt
    -- count survives, so a re-claim never reissues a fencing token.
    status          VARCHAR(16)  NOT NULL,
    attempt         INT          NOT NULL,                  -- the fencing token
    locked_until    BIGINT       NULL,                      -- lease, while in_progress
    recovery_key    VARCHAR(512) NULL,
    recovery_data   LONGBLOB     NULL,
    response_status INT          NULL,
    response_body   LONGBLOB     NULL,
    created_at      BIGINT       NOT NULL,
    PRIMARY KEY (caller, `key`),                            -- the claim's unique constraint
    KEY idem_records_lease (status, locked_until),
    KEY idem_records_age (status, created_at),
    CONSTRAINT idem_records_status CHECK (status IN ('in_progress', 'completed', 'released')),
    CONSTRAINT idem_records_attempt CHECK (attempt >= 1)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS idem_effects (
    seq       BIGINT AUTO_INCREMENT PRIMARY KEY,
    caller    VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    `key`     VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    effect_id VARCHAR(512) NOT NULL,
    data      LONGBLOB     NOT NULL,
    KEY idem_effects_scope (caller, `key`, seq)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS idem_outbox (
    seq        BIGINT AUTO_INCREMENT PRIMARY KEY,
    message_id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL UNIQUE,
    caller     VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    `key`      VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    topic      VARCHAR(191) NOT NULL,
    payload    LONGBLOB     NOT NULL,
    published  TINYINT      NOT NULL DEFAULT 0,
    KEY idem_outbox_pending (published, seq)
) ENGINE = InnoDB;
