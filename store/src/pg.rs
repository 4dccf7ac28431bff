//! `PgStore`: the protocol in PostgreSQL, on tokio-postgres.
//!
//! Why tokio-postgres: it is the async driver the rest of the Rust Postgres
//! ecosystem builds on, small, with no compile-time query macros or build
//! step, and plain parameterised statements map one to one onto the SQL a
//! reviewer expects to read. (sqlx would add a large dependency tree for no
//! gain here.)

use crate::sql::{attempt_of, check_identifier, limit_of, ms, RecordRow, RECORD_COLUMNS};
use crate::{IdempotencyStore, StoreError, StoreFlaw};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Bytes, CallerId, Claim, Completion, Fingerprint, IdempotencyKey, LocalEffect, MessageId, OutboxEntry,
    OutboxMessage, Record, RecoveryPoint, Scope, SimTime, Takeover, WriteOutcome,
};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, GenericClient, NoTls, Row};

/// The schema, created on connect in the caller's schema. Shown in the docs.
pub const POSTGRES_SCHEMA: &str = include_str!("../sql/postgres.sql");

/// The prefix of every connection's `application_name`; a store's own
/// connections are named `idemsim/<schema>`, so a test can find (and
/// terminate) them without touching another store's.
pub const PG_APPLICATION_NAME: &str = "idemsim";

const CLAIM: &str = "INSERT INTO idem_records (caller, key, fingerprint, status, attempt, locked_until, created_at) \
     VALUES ($1, $2, $3, 'in_progress', 1, $4, $5) \
     ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = 'in_progress', \
       attempt = idem_records.attempt + 1, locked_until = EXCLUDED.locked_until, created_at = EXCLUDED.created_at, \
       recovery_key = NULL, recovery_data = NULL, response_status = NULL, response_body = NULL \
     WHERE idem_records.status = 'released' \
     RETURNING attempt";

/// A PostgreSQL store: a small pool of connections, each operation one
/// statement or one transaction. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    schema: String,
    conns: Vec<Mutex<Option<Client>>>,
    next: AtomicUsize,
    flaw: Option<StoreFlaw>,
}

impl PgStore {
    /// Connects to `url` (e.g. `postgresql://postgres@127.0.0.1:5432/test`),
    /// creates `schema` and the tables in it if missing, and keeps a pool
    /// of `pool_size` connections whose `search_path` is that schema.
    /// Must be called inside a Tokio runtime.
    pub async fn connect(url: &str, schema: &str, pool_size: usize) -> Result<PgStore, StoreError> {
        check_identifier(schema)?;
        let mut config = Config::from_str(url).map_err(|e| {
            StoreError::Unavailable(crate::text::plain(
                &format!("invalid PostgreSQL URL {}: {e}", crate::mask_url(url)),
                Some(url),
            ))
        })?;
        config.application_name(format!("{PG_APPLICATION_NAME}/{schema}")).connect_timeout(Duration::from_secs(5));
        let admin = open(&config).await?;
        admin
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot create schema {schema}: {}", describe(&e))))?;
        config.options(format!("-c search_path={schema}"));
        let first = open(&config).await?;
        first
            .batch_execute(POSTGRES_SCHEMA)
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot create the tables in {schema}: {}", describe(&e))))?;
        let mut first = Some(first);
        let conns = (0..pool_size.max(1)).map(|_| Mutex::new(first.take())).collect();
        let inner = Inner { config, schema: schema.to_string(), conns, next: AtomicUsize::new(0), flaw: None };
        Ok(PgStore { inner: Arc::new(inner) })
    }

    /// The same store with deliberately broken SQL (for the stress tests).
    pub fn with_flaw(self, flaw: StoreFlaw) -> PgStore {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|_| panic!("with_flaw needs the only handle"));
        PgStore { inner: Arc::new(Inner { flaw: Some(flaw), ..inner }) }
    }

    /// Empties the tables (a fresh store for the next test case).
    pub async fn reset(&self) -> Result<(), StoreError> {
        let mut guard = self.conn().await?;
        let c = guard.as_mut().expect("conn() connects");
        c.batch_execute("DELETE FROM idem_records; DELETE FROM idem_effects; DELETE FROM idem_outbox")
            .await
            .map_err(map_err)
    }

    /// Terminates one of this store's server connections from the server
    /// side (`pg_terminate_backend`), the `pick`-th by process id. Returns
    /// whether one was terminated.
    pub async fn terminate_a_connection(&self, pick: u64) -> Result<bool, StoreError> {
        let admin = open(&self.inner.config).await?;
        let name = format!("{PG_APPLICATION_NAME}/{}", self.inner.schema);
        let sql = "SELECT pg_terminate_backend(pid) FROM ( \
                     SELECT pid FROM pg_stat_activity \
                     WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid() \
                     ORDER BY pid) AS p \
                   ORDER BY pid OFFSET ($2::bigint % GREATEST((SELECT count(*) FROM pg_stat_activity \
                     WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()), 1)) \
                   LIMIT 1";
        let rows = admin.query(sql, &[&name, &(pick as i64)]).await.map_err(map_err)?;
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }

    /// The schema this store lives in.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    async fn conn(&self) -> Result<MutexGuard<'_, Option<Client>>, StoreError> {
        let i = self.inner.next.fetch_add(1, Ordering::Relaxed) % self.inner.conns.len();
        let mut guard = self.inner.conns[i].lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = Some(open(&self.inner.config).await?);
        }
        Ok(guard)
    }
}

async fn open(config: &Config) -> Result<Client, StoreError> {
    let (client, connection) = config.connect(NoTls).await.map_err(|e| {
        StoreError::Unavailable(format!("cannot connect to PostgreSQL at {}: {}", hosts(config), describe(&e)))
    })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn hosts(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "?".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            // The driver's line ("error connecting to server"), then its causes.
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text = format!("{text}: {c}");
                cause = c.source();
            }
            crate::text::plain(&text, None)
        }
    }
}

fn map_err(e: tokio_postgres::Error) -> StoreError {
    let text = describe(&e);
    match e.code() {
        Some(c) if *c == SqlState::UNIQUE_VIOLATION => StoreError::Conflict(text),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
            StoreError::Conflict(text)
        }
        Some(c) if *c == SqlState::ADMIN_SHUTDOWN => StoreError::Indeterminate(text),
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => StoreError::Unavailable(text),
        Some(_) => StoreError::Unavailable(text),
        // The connection broke mid-operation: it may or may not have committed.
        None => StoreError::Indeterminate(text),
    }
}

fn record_row(row: &Row, at: usize) -> RecordRow {
    RecordRow {
        fingerprint: row.get(at),
        status: row.get(at + 1),
        attempt: i64::from(row.get::<_, i32>(at + 2)),
        locked_until: row.get(at + 3),
        recovery_key: row.get(at + 4),
        recovery_data: row.get(at + 5),
        response_status: row.get::<_, Option<i32>>(at + 6).map(i64::from),
        response_body: row.get(at + 7),
        created_at: row.get(at + 8),
    }
}

fn scope_at(row: &Row) -> Scope {
    Scope { caller: CallerId(row.get::<_, String>(0).into()), key: IdempotencyKey(row.get::<_, String>(1).into()) }
}

async fn select_record(c: &impl GenericClient, scope: &Scope) -> Result<Option<Record>, StoreError> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM idem_records WHERE caller = $1 AND key = $2");
    let row = c.query_opt(&sql, &[&scope.caller.0.as_str(), &scope.key.0.as_str()]).await.map_err(map_err)?;
    match row {
        Some(row) => record_row(&row, 0).into_record(),
        None => Ok(None),
    }
}

fn outcome(changed: u64) -> WriteOutcome {
    if changed == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Fenced
    }
}

fn attempt_i32(a: Attempt) -> i32 {
    i32::try_from(a.0).unwrap_or(i32::MAX)
}

#[async_trait]
impl IdempotencyStore for PgStore {
    fn name(&self) -> &str {
        match self.inner.flaw {
            None => "pg",
            Some(StoreFlaw::CheckThenInsert) => "pg-check-then-insert",
            Some(StoreFlaw::UnfencedCompletion) => "pg-unfenced-completion",
        }
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        let mut guard = self.conn().await?;
        let c = guard.as_mut().expect("conn() connects");
        if self.inner.flaw == Some(StoreFlaw::CheckThenInsert) {
            // The flaw: look, then write, in separate statements.
            if let Some(existing) = select_record(&*c, scope).await? {
                return Ok(Claim::Existing(existing));
            }
            let sql = "INSERT INTO idem_records (caller, key, fingerprint, status, attempt, locked_until, created_at) \
                       VALUES ($1, $2, $3, 'in_progress', 1, $4, $5) \
                       ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, \
                         status = 'in_progress', attempt = 1, locked_until = EXCLUDED.locked_until, \
                         created_at = EXCLUDED.created_at";
            c.execute(sql, &[&scope.caller.0.as_str(), &scope.key.0.as_str(), &fp.0.as_str(), &until_ms, &now_ms])
                .await
                .map_err(map_err)?;
            return Ok(Claim::Owned(Attempt::FIRST));
        }
        let tx = c.transaction().await.map_err(map_err)?;
        let inserted = tx
            .query_opt(CLAIM, &[&scope.caller.0.as_str(), &scope.key.0.as_str(), &fp.0.as_str(), &until_ms, &now_ms])
            .await
            .map_err(map_err)?;
        let claim = match inserted {
            Some(row) => Claim::Owned(attempt_of(i64::from(row.get::<_, i32>(0)))?),
            None => match select_record(&tx, scope).await? {
                Some(existing) => Claim::Existing(existing),
                None => return Err(StoreError::Conflict(format!("{scope} changed during the claim; retry"))),
            },
        };
        tx.commit().await.map_err(map_err)?;
        Ok(claim)
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        let (now_ms, until_ms) = (ms(now)?, ms(now.plus_ms(lease_ms))?);
        let mut guard = self.conn().await?;
        let tx = guard.as_mut().expect("conn() connects").transaction().await.map_err(map_err)?;
        let read = format!("SELECT {RECORD_COLUMNS} FROM idem_records WHERE caller = $1 AND key = $2 FOR UPDATE");
        let row = tx.query_opt(&read, &[&scope.caller.0.as_str(), &scope.key.0.as_str()]).await.map_err(map_err)?;
        let found = match row {
            Some(row) => record_row(&row, 0).into_record()?,
            None => None,
        };
        if !crate::sql::takeable(found.as_ref(), expected, now) {
            tx.commit().await.map_err(map_err)?;
            return Ok(Takeover::Refused(found));
        }
        let sql = "UPDATE idem_records SET attempt = attempt + 1, locked_until = $1 \
                   WHERE caller = $2 AND key = $3 AND status = 'in_progress' AND attempt = $4 AND locked_until <= $5 \
                   RETURNING attempt";
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&until_ms, &scope.caller.0.as_str(), &scope.key.0.as_str(), &attempt_i32(expected), &now_ms];
        let bumped = tx.query_opt(sql, &params).await.map_err(map_err)?;
        let result = match bumped {
            Some(row) => Takeover::Granted(attempt_of(i64::from(row.get::<_, i32>(0)))?),
            None => Takeover::Refused(found),
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
        let mut guard = self.conn().await?;
        let c = guard.as_mut().expect("conn() connects");
        let sql = "UPDATE idem_records SET recovery_key = $1, recovery_data = $2 \
                   WHERE caller = $3 AND key = $4 AND status = 'in_progress' AND attempt = $5";
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
            &point.downstream_key.0.as_str(),
            &point.data.0,
            &scope.caller.0.as_str(),
            &scope.key.0.as_str(),
            &attempt_i32(attempt),
        ];
        c.execute(sql, &params).await.map(outcome).map_err(map_err)
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        let mut guard = self.conn().await?;
        let tx = guard.as_mut().expect("conn() connects").transaction().await.map_err(map_err)?;
        let status = i32::from(completion.response.status);
        let body = &completion.response.body.0;
        let changed = if self.inner.flaw == Some(StoreFlaw::UnfencedCompletion) {
            let sql = "UPDATE idem_records SET status = 'completed', response_status = $1, response_body = $2, \
                       locked_until = NULL WHERE caller = $3 AND key = $4 AND status = 'in_progress'";
            tx.execute(sql, &[&status, body, &scope.caller.0.as_str(), &scope.key.0.as_str()]).await
        } else {
            let sql = "UPDATE idem_records SET status = 'completed', response_status = $1, response_body = $2, \
                       locked_until = NULL \
                       WHERE caller = $3 AND key = $4 AND status = 'in_progress' AND attempt = $5";
            tx.execute(sql, &[&status, body, &scope.caller.0.as_str(), &scope.key.0.as_str(), &attempt_i32(attempt)])
                .await
        }
        .map_err(map_err)?;
        if changed != 1 {
            return Ok(WriteOutcome::Fenced); // dropping the transaction rolls it back
        }
        if let Some(effect) = &completion.local_effect {
            let sql = "INSERT INTO idem_effects (caller, key, effect_id, data) VALUES ($1, $2, $3, $4)";
            tx.execute(sql, &[&scope.caller.0.as_str(), &scope.key.0.as_str(), &effect.id, &effect.data.0])
                .await
                .map_err(map_err)?;
        }
        insert_outbox(&tx, scope, &completion.outbox).await?;
        tx.commit().await.map_err(map_err)?;
        Ok(WriteOutcome::Applied)
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        let mut guard = self.conn().await?;
        let c = guard.as_mut().expect("conn() connects");
        let sql = "UPDATE idem_records SET status = 'released', locked_until = NULL \
                   WHERE caller = $1 AND key = $2 AND status = 'in_progress' AND attempt = $3";
        c.execute(sql, &[&scope.caller.0.as_str(), &scope.key.0.as_str(), &attempt_i32(attempt)])
            .await
            .map(outcome)
            .map_err(map_err)
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        let guard = self.conn().await?;
        select_record(guard.as_ref().expect("conn() connects"), scope).await
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        let guard = self.conn().await?;
        let c = guard.as_ref().expect("conn() connects");
        let sql = "SELECT effect_id, data FROM idem_effects WHERE caller = $1 AND key = $2 ORDER BY seq";
        let rows = c.query(sql, &[&scope.caller.0.as_str(), &scope.key.0.as_str()]).await.map_err(map_err)?;
        Ok(rows.iter().map(|r| LocalEffect { id: r.get(0), data: Bytes(r.get(1)) }).collect())
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        let Some(threshold) = now.0.checked_sub(window_ms) else { return Ok(Vec::new()) };
        let threshold = ms(SimTime(threshold))?;
        let guard = self.conn().await?;
        let c = guard.as_ref().expect("conn() connects");
        let sql = format!(
            "DELETE FROM idem_records WHERE status IN ('completed', 'released') AND created_at <= $1 \
             RETURNING caller, key, {RECORD_COLUMNS}"
        );
        let rows = c.query(&sql, &[&threshold]).await.map_err(map_err)?;
        let mut swept = Vec::with_capacity(rows.len());
        for row in &rows {
            // Tombstones (no record) go silently.
            if let Some(record) = record_row(row, 2).into_record()? {
                swept.push((scope_at(row), record));
            }
        }
        swept.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(swept)
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        let guard = self.conn().await?;
        let c = guard.as_ref().expect("conn() connects");
        let sql = format!(
            "SELECT caller, key, {RECORD_COLUMNS} FROM idem_records \
             WHERE status = 'in_progress' AND locked_until <= $1 ORDER BY caller, key LIMIT $2"
        );
        let rows = c.query(&sql, &[&ms(now)?, &limit_of(limit)]).await.map_err(map_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let record =
                record_row(row, 2).into_record()?.ok_or_else(|| StoreError::Corrupt("stale tombstone".into()))?;
            out.push((scope_at(row), record));
        }
        Ok(out)
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let guard = self.conn().await?;
        let c = guard.as_ref().expect("conn() connects");
        let sql = "SELECT caller, key, message_id, topic, payload FROM idem_outbox WHERE NOT published \
                   ORDER BY seq LIMIT $1";
        let rows = c.query(sql, &[&limit_of(limit)]).await.map_err(map_err)?;
        Ok(rows
            .iter()
            .map(|r| OutboxEntry {
                scope: scope_at(r),
                message: OutboxMessage {
                    id: MessageId(r.get::<_, String>(2).into()),
                    topic: r.get(3),
                    payload: Bytes(r.get(4)),
                },
            })
            .collect())
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        let guard = self.conn().await?;
        let c = guard.as_ref().expect("conn() connects");
        let changed = c
            .execute("UPDATE idem_outbox SET published = TRUE WHERE message_id = $1", &[&id.0.as_str()])
            .await
            .map_err(map_err)?;
        Ok(changed > 0)
    }

    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        let mut guard = self.conn().await?;
        let tx = guard.as_mut().expect("conn() connects").transaction().await.map_err(map_err)?;
        insert_outbox(&tx, scope, messages).await?;
        tx.commit().await.map_err(map_err)
    }
}

/// Queues `messages` for `scope` in the transaction `tx`.
async fn insert_outbox(
    tx: &tokio_postgres::Transaction<'_>,
    scope: &Scope,
    messages: &[OutboxMessage],
) -> Result<(), StoreError> {
    let sql = "INSERT INTO idem_outbox (message_id, caller, key, topic, payload) VALUES ($1, $2, $3, $4, $5)";
    for m in messages {
        let row = [
            &m.id.0.as_str() as &(dyn tokio_postgres::types::ToSql + Sync),
            &scope.caller.0.as_str(),
            &scope.key.0.as_str(),
            &m.topic,
            &m.payload.0,
        ];
        tx.execute(sql, &row).await.map_err(map_err)?;
    }
    Ok(())
}
