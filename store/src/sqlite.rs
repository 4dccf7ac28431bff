//! `SqliteStore`: the protocol in SQL, on an embedded SQLite database.

use crate::sql::{attempt_of, limit_of, ms, RecordRow, RECORD_COLUMNS};
use crate::{CrashDurability, IdempotencyStore, StoreError};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Bytes, CallerId, Claim, Completion, Fingerprint, IdempotencyKey, LocalEffect, MessageId, OutboxEntry,
    OutboxMessage, Record, RecoveryPoint, Scope, SimTime, Takeover, WriteOutcome,
};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// The schema, created on open. Shown in the docs.
pub const SQLITE_SCHEMA: &str = include_str!("../sql/sqlite.sql");

/// A store on SQLite (bundled; no server). One connection behind a mutex;
/// each operation is one statement or one `BEGIN IMMEDIATE` transaction.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

impl SqliteStore {
    /// A private in-memory database (what simulations use).
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        SqliteStore::with(Connection::open_in_memory().map_err(map_err)?)
    }

    /// A database file, created if missing.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path)
            .map_err(|e| StoreError::Unavailable(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(map_err)?;
        SqliteStore::with(conn)
    }

    fn with(conn: Connection) -> Result<SqliteStore, StoreError> {
        conn.execute_batch(SQLITE_SCHEMA).map_err(map_err)?;
        Ok(SqliteStore { conn: Mutex::new(conn) })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // rusqlite rolls back an unfinished transaction when it is dropped,
        // so a panic mid-operation leaves the connection usable.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn transaction<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(map_err)?;
        let value = f(&tx)?;
        tx.commit().map_err(map_err)?;
        Ok(value)
    }
}

/// The tables a sync copies and a crash restores.
const TABLES: [&str; 3] = ["idem_records", "idem_effects", "idem_outbox"];

/// A sync copies every table into a `synced_` twin in one transaction; a
/// crash empties the tables and copies the twins back.
impl CrashDurability for SqliteStore {
    fn sync(&self) -> Result<(), StoreError> {
        let copy: String = TABLES
            .iter()
            .map(|t| format!("DROP TABLE IF EXISTS synced_{t}; CREATE TABLE synced_{t} AS SELECT * FROM {t};"))
            .collect();
        self.lock().execute_batch(&format!("BEGIN; {copy} COMMIT;")).map_err(map_err)
    }

    fn lose_unsynced(&self) -> Result<(), StoreError> {
        let restore: String = TABLES
            .iter()
            .map(|t| {
                format!(
                    "CREATE TABLE IF NOT EXISTS synced_{t} AS SELECT * FROM {t} WHERE 0; \
                     DELETE FROM {t}; INSERT INTO {t} SELECT * FROM synced_{t};"
                )
            })
            .collect();
        self.lock().execute_batch(&format!("BEGIN; {restore} COMMIT;")).map_err(map_err)
    }
}

#[async_trait]
impl IdempotencyStore for SqliteStore {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn durability(&self) -> Option<&dyn CrashDurability> {
        Some(self)
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        self.transaction(|tx| {
            let inserted: Option<i64> = tx
                .query_row(
                    "INSERT INTO idem_records (caller, key, fingerprint, status, attempt, locked_until, created_at) \
                     VALUES (?1, ?2, ?3, 'in_progress', 1, ?4, ?5) \
                     ON CONFLICT (caller, key) DO UPDATE SET fingerprint = excluded.fingerprint, \
                       status = 'in_progress', attempt = idem_records.attempt + 1, \
                       locked_until = excluded.locked_until, created_at = excluded.created_at, \
                       recovery_key = NULL, recovery_data = NULL, response_status = NULL, response_body = NULL \
                     WHERE idem_records.status = 'released' \
                     RETURNING attempt",
                    params![scope.caller.0.as_str(), scope.key.0.as_str(), fp.0.as_str(), until_ms, now_ms],
                    |row| row.get(0),
                )
                .optional()
                .map_err(map_err)?;
            if let Some(attempt) = inserted {
                return Ok(Claim::Owned(attempt_of(attempt)?));
            }
            let record = select_record(tx, scope)?;
            record.map(Claim::Existing).ok_or_else(|| StoreError::Corrupt(format!("{scope}: conflict but no row")))
        })
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        self.transaction(|tx| {
            let bumped: Option<i64> = tx
                .query_row(
                    "UPDATE idem_records SET attempt = attempt + 1, locked_until = ?1 \
                     WHERE caller = ?2 AND key = ?3 AND status = 'in_progress' AND attempt = ?4 AND locked_until <= ?5 \
                     RETURNING attempt",
                    params![until_ms, scope.caller.0.as_str(), scope.key.0.as_str(), expected.0, now_ms],
                    |row| row.get(0),
                )
                .optional()
                .map_err(map_err)?;
            match bumped {
                Some(attempt) => Ok(Takeover::Granted(attempt_of(attempt)?)),
                None => Ok(Takeover::Refused(select_record(tx, scope)?)),
            }
        })
    }

    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError> {
        let conn = self.lock();
        let changed = conn
            .execute(
                "UPDATE idem_records SET recovery_key = ?1, recovery_data = ?2 \
                 WHERE caller = ?3 AND key = ?4 AND status = 'in_progress' AND attempt = ?5",
                params![
                    point.downstream_key.0.as_str(),
                    point.data.0,
                    scope.caller.0.as_str(),
                    scope.key.0.as_str(),
                    attempt.0
                ],
            )
            .map_err(map_err)?;
        Ok(outcome(changed))
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        self.transaction(|tx| {
            let changed = tx
                .execute(
                    "UPDATE idem_records SET status = 'completed', response_status = ?1, response_body = ?2, \
                     locked_until = NULL \
                     WHERE caller = ?3 AND key = ?4 AND status = 'in_progress' AND attempt = ?5",
                    params![
                        completion.response.status,
                        completion.response.body.0,
                        scope.caller.0.as_str(),
                        scope.key.0.as_str(),
                        attempt.0
                    ],
                )
                .map_err(map_err)?;
            if changed == 0 {
                return Ok(WriteOutcome::Fenced); // the transaction rolls back on drop
            }
            if let Some(effect) = &completion.local_effect {
                tx.execute(
                    "INSERT INTO idem_effects (caller, key, effect_id, data) VALUES (?1, ?2, ?3, ?4)",
                    params![scope.caller.0.as_str(), scope.key.0.as_str(), effect.id, effect.data.0],
                )
                .map_err(map_err)?;
            }
            insert_outbox(tx, scope, &completion.outbox)?;
            Ok(WriteOutcome::Applied)
        })
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        let conn = self.lock();
        let changed = conn
            .execute(
                "UPDATE idem_records SET status = 'released', locked_until = NULL \
                 WHERE caller = ?1 AND key = ?2 AND status = 'in_progress' AND attempt = ?3",
                params![scope.caller.0.as_str(), scope.key.0.as_str(), attempt.0],
            )
            .map_err(map_err)?;
        Ok(outcome(changed))
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        select_record(&self.lock(), scope)
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT effect_id, data FROM idem_effects WHERE caller = ?1 AND key = ?2 ORDER BY seq")
            .map_err(map_err)?;
        let rows = stmt
            .query_map(params![scope.caller.0.as_str(), scope.key.0.as_str()], |row| {
                Ok(LocalEffect { id: row.get(0)?, data: Bytes(row.get(1)?) })
            })
            .map_err(map_err)?;
        rows.collect::<Result<_, _>>().map_err(map_err)
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        let Some(threshold) = now.0.checked_sub(window_ms) else { return Ok(Vec::new()) };
        let threshold = ms(SimTime(threshold))?;
        let conn = self.lock();
        let sql = format!(
            "DELETE FROM idem_records WHERE status IN ('completed', 'released') AND created_at <= ?1 \
             RETURNING caller, key, {RECORD_COLUMNS}"
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
        let mut rows = stmt.query(params![threshold]).map_err(map_err)?;
        let mut swept = Vec::new();
        while let Some(row) = rows.next().map_err(map_err)? {
            // Tombstones (no record) go silently.
            if let Some(record) = record_at(row, 2)? {
                swept.push((scope_of(row).map_err(map_err)?, record));
            }
        }
        swept.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(swept)
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT caller, key, {RECORD_COLUMNS} FROM idem_records \
             WHERE status = 'in_progress' AND locked_until <= ?1 ORDER BY caller, key LIMIT ?2"
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
        let mut rows = stmt.query(params![ms(now)?, limit_of(limit)]).map_err(map_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(map_err)? {
            let scope = scope_of(row).map_err(map_err)?;
            let record = record_at(row, 2)?.ok_or_else(|| StoreError::Corrupt("stale tombstone".into()))?;
            out.push((scope, record));
        }
        Ok(out)
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT caller, key, message_id, topic, payload FROM idem_outbox WHERE published = 0 ORDER BY seq LIMIT ?1",
            )
            .map_err(map_err)?;
        let limit = limit_of(limit);
        let rows = stmt
            .query_map(params![limit], |row| {
                let message = OutboxMessage {
                    id: MessageId(row.get::<_, String>(2)?.into()),
                    topic: row.get(3)?,
                    payload: Bytes(row.get(4)?),
                };
                Ok(OutboxEntry { scope: scope_of(row)?, message })
            })
            .map_err(map_err)?;
        rows.collect::<Result<_, _>>().map_err(map_err)
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        let conn = self.lock();
        let changed = conn
            .execute("UPDATE idem_outbox SET published = 1 WHERE message_id = ?1", params![id.0.as_str()])
            .map_err(map_err)?;
        Ok(changed > 0)
    }

    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        self.transaction(|tx| insert_outbox(tx, scope, messages))
    }
}

/// Queues `messages` for `scope` in the transaction `tx`.
fn insert_outbox(tx: &rusqlite::Transaction<'_>, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
    for m in messages {
        tx.execute(
            "INSERT INTO idem_outbox (message_id, caller, key, topic, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![m.id.0.as_str(), scope.caller.0.as_str(), scope.key.0.as_str(), m.topic, m.payload.0],
        )
        .map_err(map_err)?;
    }
    Ok(())
}

fn select_record(conn: &Connection, scope: &Scope) -> Result<Option<Record>, StoreError> {
    let sql =
        format!("SELECT {RECORD_COLUMNS} FROM idem_records WHERE caller = ?1 AND key = ?2 AND status <> 'released'");
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let mut rows = stmt.query(params![scope.caller.0.as_str(), scope.key.0.as_str()]).map_err(map_err)?;
    match rows.next().map_err(map_err)? {
        Some(row) => record_at(row, 0),
        None => Ok(None),
    }
}

/// Decodes the `RECORD_COLUMNS` starting at column `at`; `None` for a
/// tombstone.
fn record_at(row: &Row<'_>, at: usize) -> Result<Option<Record>, StoreError> {
    let get_err = |e: rusqlite::Error| StoreError::Corrupt(e.to_string());
    RecordRow {
        fingerprint: row.get(at).map_err(get_err)?,
        status: row.get(at + 1).map_err(get_err)?,
        attempt: row.get(at + 2).map_err(get_err)?,
        locked_until: row.get(at + 3).map_err(get_err)?,
        recovery_key: row.get(at + 4).map_err(get_err)?,
        recovery_data: row.get(at + 5).map_err(get_err)?,
        response_status: row.get(at + 6).map_err(get_err)?,
        response_body: row.get(at + 7).map_err(get_err)?,
        created_at: row.get(at + 8).map_err(get_err)?,
    }
    .into_record()
}

fn scope_of(row: &Row<'_>) -> rusqlite::Result<Scope> {
    Ok(Scope {
        caller: CallerId(row.get::<_, String>(0)?.into()),
        key: IdempotencyKey(row.get::<_, String>(1)?.into()),
    })
}

fn outcome(changed: usize) -> WriteOutcome {
    if changed == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Fenced
    }
}

fn map_err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::ConstraintViolation) => StoreError::Conflict(e.to_string()),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Unavailable(e.to_string()),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt(e.to_string()),
        _ => StoreError::Unavailable(e.to_string()),
    }
}
