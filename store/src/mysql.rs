//! `MySqlStore`: the protocol in MySQL / MariaDB, on mysql_async.
//!
//! The claim is `INSERT IGNORE` plus the affected-row count (1: inserted,
//! 0: the key exists), then a read of the existing row, or the revival of
//! a released tombstone in a one-row transaction. Connections report *matched* rows
//! (`CLIENT_FOUND_ROWS`), so a fenced write is exactly "zero rows".

use crate::sql::{attempt_of, check_identifier, limit_of, ms, RecordRow, RECORD_COLUMNS};
use crate::{IdempotencyStore, StoreError, StoreFlaw};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Bytes, CallerId, Claim, Completion, Fingerprint, IdempotencyKey, LocalEffect, MessageId, OutboxEntry,
    OutboxMessage, Record, RecoveryPoint, Scope, SimTime, Takeover, WriteOutcome,
};
use mysql_async::prelude::{FromValue, Queryable};
use mysql_async::{Conn, Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts, Row, TxOpts};

/// The schema, created on connect in the caller's database.
pub const MYSQL_SCHEMA: &str = include_str!("../sql/mysql.sql");

/// Longest caller or key the schema holds (`VARCHAR(191)`).
const KEY_CHARS_MAX: usize = 191;

/// A MySQL / MariaDB store on a connection pool. Cheap to clone.
#[derive(Clone)]
pub struct MySqlStore {
    pool: Pool,
    database: String,
    flaw: Option<StoreFlaw>,
}

impl MySqlStore {
    /// Connects to `url` (e.g. `mysql://root@127.0.0.1:3306/test`), creates
    /// `database` and the tables in it if missing, and pools up to
    /// `pool_size` connections to it. Must be called inside a Tokio runtime.
    pub async fn connect(url: &str, database: &str, pool_size: usize) -> Result<MySqlStore, StoreError> {
        check_identifier(database)?;
        let opts = Opts::from_url(url).map_err(|e| {
            StoreError::Unavailable(crate::text::plain(
                &format!("invalid MySQL URL {}: {e}", crate::mask_url(url)),
                Some(url),
            ))
        })?;
        let where_ = format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port());
        let mut admin = Conn::new(opts.clone())
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to MySQL at {where_}: {}", describe(&e))))?;
        admin
            .query_drop(format!("CREATE DATABASE IF NOT EXISTS {database} CHARACTER SET utf8mb4"))
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot create database {database}: {}", describe(&e))))?;
        admin.query_drop(format!("USE {database}")).await.map_err(map_err)?;
        for statement in statements(MYSQL_SCHEMA) {
            admin.query_drop(statement).await.map_err(|e| {
                StoreError::Unavailable(format!("cannot create the tables in {database}: {}", describe(&e)))
            })?;
        }
        let _ = admin.disconnect().await;
        let constraints = PoolConstraints::new(0, pool_size.max(1)).expect("0 <= max");
        let opts = OptsBuilder::from_opts(opts)
            .db_name(Some(database))
            .client_found_rows(true)
            .pool_opts(PoolOpts::default().with_constraints(constraints));
        Ok(MySqlStore { pool: Pool::new(opts), database: database.to_string(), flaw: None })
    }

    /// The same store with deliberately broken SQL (for the stress tests).
    pub fn with_flaw(self, flaw: StoreFlaw) -> MySqlStore {
        MySqlStore { flaw: Some(flaw), ..self }
    }

    /// Empties the tables (a fresh store for the next test case).
    pub async fn reset(&self) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        for table in ["idem_records", "idem_effects", "idem_outbox"] {
            c.query_drop(format!("DELETE FROM {table}")).await.map_err(map_err)?;
        }
        Ok(())
    }

    /// Kills one of this store's server connections from the server side
    /// (`KILL CONNECTION`), the `pick`-th by id. Returns whether one was.
    pub async fn terminate_a_connection(&self, pick: u64) -> Result<bool, StoreError> {
        let mut c = self.conn().await?;
        let ids: Vec<u64> = c
            .exec(
                "SELECT id FROM information_schema.PROCESSLIST WHERE db = ? AND id <> CONNECTION_ID() ORDER BY id",
                (self.database.as_str(),),
            )
            .await
            .map_err(map_err)?;
        let Some(id) = (!ids.is_empty()).then(|| ids[(pick % ids.len() as u64) as usize]) else { return Ok(false) };
        match c.query_drop(format!("KILL CONNECTION {id}")).await {
            Ok(()) => Ok(true),
            // It may have closed by itself meanwhile (unknown thread id).
            Err(mysql_async::Error::Server(e)) if e.code == 1094 => Ok(false),
            Err(e) => Err(map_err(e)),
        }
    }

    /// The database this store lives in.
    pub fn database(&self) -> &str {
        &self.database
    }

    async fn conn(&self) -> Result<Conn, StoreError> {
        self.pool
            .get_conn()
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot get a MySQL connection: {}", describe(&e))))
    }
}

/// The statements of a schema file, in order.
fn statements(schema: &str) -> impl Iterator<Item = String> + '_ {
    let without_comments: String =
        schema.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
    without_comments
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
}

fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("{} ({})", s.message, s.code),
        other => crate::text::plain(&other.to_string(), None),
    }
}

fn map_err(e: mysql_async::Error) -> StoreError {
    let text = describe(&e);
    match &e {
        mysql_async::Error::Server(s) if s.code == 1062 => StoreError::Conflict(text),
        // Deadlock, lock wait timeout.
        mysql_async::Error::Server(s) if s.code == 1213 || s.code == 1205 => StoreError::Conflict(text),
        mysql_async::Error::Server(s) if s.code == 1044 || s.code == 1045 || s.code == 1142 => {
            StoreError::Unavailable(text)
        }
        mysql_async::Error::Server(_) => StoreError::Unavailable(text),
        // The connection broke mid-operation: it may or may not have committed.
        _ => StoreError::Indeterminate(text),
    }
}

fn col<T: FromValue>(row: &Row, i: usize) -> Result<T, StoreError> {
    match row.get_opt::<T, usize>(i) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(StoreError::Corrupt(format!("column {i}: {e}"))),
        None => Err(StoreError::Corrupt(format!("column {i} missing"))),
    }
}

fn record_row(row: &Row, at: usize) -> Result<RecordRow, StoreError> {
    Ok(RecordRow {
        fingerprint: col(row, at)?,
        status: col(row, at + 1)?,
        attempt: col(row, at + 2)?,
        locked_until: col(row, at + 3)?,
        recovery_key: col(row, at + 4)?,
        recovery_data: col(row, at + 5)?,
        response_status: col(row, at + 6)?,
        response_body: col(row, at + 7)?,
        created_at: col(row, at + 8)?,
    })
}

fn scope_at(row: &Row) -> Result<Scope, StoreError> {
    Ok(Scope { caller: CallerId(col::<String>(row, 0)?.into()), key: IdempotencyKey(col::<String>(row, 1)?.into()) })
}

fn record_columns() -> String {
    RECORD_COLUMNS.to_string()
}

async fn select_record(c: &mut impl Queryable, scope: &Scope, lock: bool) -> Result<Option<Record>, StoreError> {
    let lock = if lock { " LOCK IN SHARE MODE" } else { "" };
    let sql = format!("SELECT {} FROM idem_records WHERE caller = ? AND `key` = ?{lock}", record_columns());
    let row: Option<Row> = c.exec_first(sql, (scope.caller.0.as_str(), scope.key.0.as_str())).await.map_err(map_err)?;
    match row {
        Some(row) => record_row(&row, 0)?.into_record(),
        None => Ok(None),
    }
}

/// READ COMMITTED: no gap locks, so inserts into the effect and outbox
/// tables of different keys do not deadlock.
fn tx_opts() -> TxOpts {
    let mut opts = TxOpts::default();
    opts.with_isolation_level(mysql_async::IsolationLevel::ReadCommitted);
    opts
}

fn outcome(changed: u64) -> WriteOutcome {
    if changed == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Fenced
    }
}

fn check_lengths(scope: &Scope) -> Result<(), StoreError> {
    if scope.caller.0.chars().count() > KEY_CHARS_MAX || scope.key.0.chars().count() > KEY_CHARS_MAX {
        return Err(StoreError::Conflict(format!("{scope}: caller and key are limited to {KEY_CHARS_MAX} characters")));
    }
    Ok(())
}

#[async_trait]
impl IdempotencyStore for MySqlStore {
    fn name(&self) -> &str {
        match self.flaw {
            None => "mysql",
            Some(StoreFlaw::CheckThenInsert) => "mysql-check-then-insert",
            Some(StoreFlaw::UnfencedCompletion) => "mysql-unfenced-completion",
        }
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        check_lengths(scope)?;
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        let (caller, key) = (scope.caller.0.as_str(), scope.key.0.as_str());
        let mut c = self.conn().await?;
        if self.flaw == Some(StoreFlaw::CheckThenInsert) {
            // The flaw: look, then write, in separate statements.
            if let Some(existing) = select_record(&mut c, scope, false).await? {
                return Ok(Claim::Existing(existing));
            }
            let sql =
                "INSERT INTO idem_records (caller, `key`, fingerprint, status, attempt, locked_until, created_at) \
                       VALUES (?, ?, ?, 'in_progress', 1, ?, ?) \
                       ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), attempt = 1, \
                         locked_until = VALUES(locked_until), created_at = VALUES(created_at), status = 'in_progress'";
            c.exec_drop(sql, (caller, key, fp.0.as_str(), until_ms, now_ms)).await.map_err(map_err)?;
            return Ok(Claim::Owned(Attempt::FIRST));
        }
        // Autocommit statements: a duplicate INSERT IGNORE holds its shared
        // lock only for the statement, so racers on one key never deadlock.
        // Only reviving a tombstone takes a (one-row) transaction.
        for _ in 0..3 {
            let insert = "INSERT IGNORE INTO idem_records (caller, `key`, fingerprint, status, attempt, locked_until, created_at) \
                          VALUES (?, ?, ?, 'in_progress', 1, ?, ?)";
            c.exec_drop(insert, (caller, key, fp.0.as_str(), until_ms, now_ms)).await.map_err(map_err)?;
            if c.affected_rows() == 1 {
                return Ok(Claim::Owned(Attempt::FIRST));
            }
            if let Some(existing) = select_record(&mut c, scope, false).await? {
                return Ok(Claim::Existing(existing));
            }
            let mut tx = c.start_transaction(tx_opts()).await.map_err(map_err)?;
            let revive =
                "UPDATE idem_records SET fingerprint = ?, attempt = attempt + 1, locked_until = ?, created_at = ?, \
                            recovery_key = NULL, recovery_data = NULL, response_status = NULL, response_body = NULL, \
                            status = 'in_progress' \
                          WHERE caller = ? AND `key` = ? AND status = 'released'";
            tx.exec_drop(revive, (fp.0.as_str(), until_ms, now_ms, caller, key)).await.map_err(map_err)?;
            if tx.affected_rows() == 1 {
                let attempt: Option<i64> = tx
                    .exec_first("SELECT attempt FROM idem_records WHERE caller = ? AND `key` = ?", (caller, key))
                    .await
                    .map_err(map_err)?;
                tx.commit().await.map_err(map_err)?;
                let attempt = attempt.ok_or_else(|| StoreError::Corrupt(format!("{scope} vanished while revived")))?;
                return Ok(Claim::Owned(attempt_of(attempt)?));
            }
            tx.rollback().await.map_err(map_err)?;
            // Someone else revived (or swept) it meanwhile: look again.
        }
        Err(StoreError::Conflict(format!("{scope} kept changing during the claim; retry")))
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        let mut c = self.conn().await?;
        let mut tx = c.start_transaction(tx_opts()).await.map_err(map_err)?;
        let read = format!("SELECT {} FROM idem_records WHERE caller = ? AND `key` = ? FOR UPDATE", record_columns());
        let row: Option<Row> =
            tx.exec_first(read, (scope.caller.0.as_str(), scope.key.0.as_str())).await.map_err(map_err)?;
        let found = match row {
            Some(row) => record_row(&row, 0)?.into_record()?,
            None => None,
        };
        if !crate::sql::takeable(found.as_ref(), expected, now) {
            tx.commit().await.map_err(map_err)?;
            return Ok(Takeover::Refused(found));
        }
        let sql = "UPDATE idem_records SET attempt = attempt + 1, locked_until = ? \
                   WHERE caller = ? AND `key` = ? AND status = 'in_progress' AND attempt = ? AND locked_until <= ?";
        tx.exec_drop(sql, (until_ms, scope.caller.0.as_str(), scope.key.0.as_str(), expected.0, now_ms))
            .await
            .map_err(map_err)?;
        let result = match tx.affected_rows() {
            1 => Takeover::Granted(attempt_of(i64::from(expected.0) + 1)?),
            _ => Takeover::Refused(found),
        };
        tx.commit().await.map_err(map_err)?;
        Ok(result)
    }

    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError> {
        let mut c = self.conn().await?;
        let sql = "UPDATE idem_records SET recovery_key = ?, recovery_data = ? \
                   WHERE caller = ? AND `key` = ? AND status = 'in_progress' AND attempt = ?";
        let params = (
            point.downstream_key.0.as_str(),
            point.data.0.as_slice(),
            scope.caller.0.as_str(),
            scope.key.0.as_str(),
            attempt.0,
        );
        c.exec_drop(sql, params).await.map_err(map_err)?;
        Ok(outcome(c.affected_rows()))
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        let (caller, key) = (scope.caller.0.as_str(), scope.key.0.as_str());
        let mut c = self.conn().await?;
        let mut tx = c.start_transaction(tx_opts()).await.map_err(map_err)?;
        let (status, body) = (completion.response.status, completion.response.body.0.as_slice());
        if self.flaw == Some(StoreFlaw::UnfencedCompletion) {
            let sql = "UPDATE idem_records SET response_status = ?, response_body = ?, locked_until = NULL, status = 'completed' \
                       WHERE caller = ? AND `key` = ? AND status = 'in_progress'";
            tx.exec_drop(sql, (status, body, caller, key)).await.map_err(map_err)?;
        } else {
            let sql = "UPDATE idem_records SET response_status = ?, response_body = ?, locked_until = NULL, status = 'completed' \
                       WHERE caller = ? AND `key` = ? AND status = 'in_progress' AND attempt = ?";
            tx.exec_drop(sql, (status, body, caller, key, attempt.0)).await.map_err(map_err)?;
        }
        if tx.affected_rows() != 1 {
            tx.rollback().await.map_err(map_err)?;
            return Ok(WriteOutcome::Fenced);
        }
        if let Some(effect) = &completion.local_effect {
            let sql = "INSERT INTO idem_effects (caller, `key`, effect_id, data) VALUES (?, ?, ?, ?)";
            tx.exec_drop(sql, (caller, key, effect.id.as_str(), effect.data.0.as_slice())).await.map_err(map_err)?;
        }
        insert_outbox(&mut tx, scope, &completion.outbox).await?;
        tx.commit().await.map_err(map_err)?;
        Ok(WriteOutcome::Applied)
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        let mut c = self.conn().await?;
        let sql = "UPDATE idem_records SET locked_until = NULL, status = 'released' \
                   WHERE caller = ? AND `key` = ? AND status = 'in_progress' AND attempt = ?";
        c.exec_drop(sql, (scope.caller.0.as_str(), scope.key.0.as_str(), attempt.0)).await.map_err(map_err)?;
        Ok(outcome(c.affected_rows()))
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        let mut c = self.conn().await?;
        select_record(&mut c, scope, false).await
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        let mut c = self.conn().await?;
        let sql = "SELECT effect_id, data FROM idem_effects WHERE caller = ? AND `key` = ? ORDER BY seq";
        let rows: Vec<Row> = c.exec(sql, (scope.caller.0.as_str(), scope.key.0.as_str())).await.map_err(map_err)?;
        rows.iter().map(|r| Ok(LocalEffect { id: col(r, 0)?, data: Bytes(col(r, 1)?) })).collect()
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        let Some(threshold) = now.0.checked_sub(window_ms) else { return Ok(Vec::new()) };
        let threshold = ms(SimTime(threshold))?;
        let mut c = self.conn().await?;
        let mut tx = c.start_transaction(tx_opts()).await.map_err(map_err)?;
        let select = format!(
            "SELECT caller, `key`, {} FROM idem_records \
             WHERE status IN ('completed', 'released') AND created_at <= ? FOR UPDATE",
            record_columns()
        );
        let rows: Vec<Row> = tx.exec(select, (threshold,)).await.map_err(map_err)?;
        // Exactly the rows selected (and locked), by key: a DELETE with the
        // same condition would also take a record completed by another
        // transaction since the SELECT (InnoDB's DELETE reads the latest
        // rows), deleting a record the sweep does not report. The
        // concurrent kit found that.
        let keys: Vec<(String, String)> = rows
            .iter()
            .map(|row| Ok((col::<String>(row, 0)?, col::<String>(row, 1)?)))
            .collect::<Result<_, StoreError>>()?;
        let delete = "DELETE FROM idem_records WHERE caller = ? AND `key` = ?";
        tx.exec_batch(delete, keys).await.map_err(map_err)?;
        tx.commit().await.map_err(map_err)?;
        let mut swept = Vec::new();
        for row in &rows {
            // Tombstones (no record) go silently.
            if let Some(record) = record_row(row, 2)?.into_record()? {
                swept.push((scope_at(row)?, record));
            }
        }
        swept.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(swept)
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        let mut c = self.conn().await?;
        let sql = format!(
            "SELECT caller, `key`, {} FROM idem_records WHERE status = 'in_progress' AND locked_until <= ? \
             ORDER BY caller, `key` LIMIT ?",
            record_columns()
        );
        let rows: Vec<Row> = c.exec(sql, (ms(now)?, limit_of(limit))).await.map_err(map_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let record =
                record_row(row, 2)?.into_record()?.ok_or_else(|| StoreError::Corrupt("stale tombstone".into()))?;
            out.push((scope_at(row)?, record));
        }
        Ok(out)
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut c = self.conn().await?;
        let sql = "SELECT caller, `key`, message_id, topic, payload FROM idem_outbox WHERE published = 0 ORDER BY seq LIMIT ?";
        let rows: Vec<Row> = c.exec(sql, (limit_of(limit),)).await.map_err(map_err)?;
        rows.iter()
            .map(|r| {
                let message = OutboxMessage {
                    id: MessageId(col::<String>(r, 2)?.into()),
                    topic: col(r, 3)?,
                    payload: Bytes(col(r, 4)?),
                };
                Ok(OutboxEntry { scope: scope_at(r)?, message })
            })
            .collect()
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        let mut c = self.conn().await?;
        c.exec_drop("UPDATE idem_outbox SET published = 1 WHERE message_id = ?", (id.0.as_str(),))
            .await
            .map_err(map_err)?;
        Ok(c.affected_rows() > 0)
    }

    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let mut tx = c.start_transaction(tx_opts()).await.map_err(map_err)?;
        insert_outbox(&mut tx, scope, messages).await?;
        tx.commit().await.map_err(map_err)
    }
}

/// Queues `messages` for `scope` in the transaction `tx`.
async fn insert_outbox(
    tx: &mut mysql_async::Transaction<'_>,
    scope: &Scope,
    messages: &[OutboxMessage],
) -> Result<(), StoreError> {
    let (caller, key) = (scope.caller.0.as_str(), scope.key.0.as_str());
    let sql = "INSERT INTO idem_outbox (message_id, caller, `key`, topic, payload) VALUES (?, ?, ?, ?, ?)";
    for m in messages {
        let row = (m.id.0.as_str(), caller, key, m.topic.as_str(), m.payload.0.as_slice());
        tx.exec_drop(sql, row).await.map_err(map_err)?;
    }
    Ok(())
}
