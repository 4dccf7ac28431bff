//! `RedisStore`: the protocol on Redis, every operation that must be atomic
//! one Lua script (`store/redis/*.lua`).
//!
//! Client: redis-rs (the `redis` crate) with its Tokio multiplexed
//! connections: the most used Redis client in Rust, maintained with the
//! server's releases, and small when only `tokio-comp` and `script` are on.

use crate::sql::RecordRow;
use crate::{mask_url, IdempotencyStore, StoreError, StoreFlaw};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Bytes, CallerId, Claim, Completion, Fingerprint, IdempotencyKey, LocalEffect, MessageId, OutboxEntry,
    OutboxMessage, Record, RecoveryPoint, Scope, SimTime, Takeover, WriteOutcome,
};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

mod values;

use values::*;

/// Prepended to every script: key names and the record reply.
const LIB: &str = include_str!("../../redis/lib.lua");

/// The scripts, each with the shared prelude, and their SHA-1.
struct Scripts {
    claim: Script,
    claim_unchecked: Script,
    take_over: Script,
    write_recovery_point: Script,
    complete: Script,
    complete_unfenced: Script,
    release: Script,
    read: Script,
    sweep: Script,
    stale: Script,
    outbox_pending: Script,
    mark_published: Script,
    stage_outbox: Script,
}

static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| {
    let complete = include_str!("../../redis/complete.lua");
    Scripts {
        claim: Script::new(include_str!("../../redis/claim.lua")),
        claim_unchecked: Script::new(include_str!("../../redis/claim_unchecked.lua")),
        take_over: Script::new(include_str!("../../redis/take_over.lua")),
        write_recovery_point: Script::new(include_str!("../../redis/write_recovery_point.lua")),
        complete: Script::new(complete),
        complete_unfenced: Script::new(&format!("{}\n{complete}", include_str!("../../redis/complete_unfenced.lua"))),
        release: Script::new(include_str!("../../redis/release.lua")),
        read: Script::new(include_str!("../../redis/read.lua")),
        sweep: Script::new(include_str!("../../redis/sweep.lua")),
        stale: Script::new(include_str!("../../redis/stale_in_progress.lua")),
        outbox_pending: Script::new(include_str!("../../redis/outbox_pending.lua")),
        mark_published: Script::new(include_str!("../../redis/outbox_mark_published.lua")),
        stage_outbox: Script::new(include_str!("../../redis/stage_outbox.lua")),
    }
});

/// A script's source (prelude included) and its SHA-1 for `EVALSHA`.
struct Script {
    source: String,
    sha: String,
}

impl Script {
    fn new(body: &str) -> Script {
        let source = format!("{LIB}\n{body}");
        let sha = redis::Script::new(&source).get_hash().to_string();
        Script { source, sha }
    }
}

/// A store on Redis. Keys live under `{prefix}:` (a hash tag, so they all
/// share one cluster slot); connections are a small round-robin pool of
/// multiplexed connections, each reopened after it breaks.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
    flaw: Option<StoreFlaw>,
}

struct Inner {
    client: redis::Client,
    /// `{prefix}`.
    tag: String,
    /// The connection name (`CLIENT SETNAME`), so a test can find them.
    conn_name: String,
    pool: Vec<tokio::sync::Mutex<Option<MultiplexedConnection>>>,
    next: AtomicUsize,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisStore({})", self.inner.tag)
    }
}

impl RedisStore {
    /// Connects to the Redis at `url` (`redis://[user:password@]host:port/db`)
    /// with `pool_size` connections, keeping its keys under `prefix`
    /// (letters, digits, `_`, `-`, `.` and `:`). Errors never show the
    /// password.
    pub async fn connect(url: &str, prefix: &str, pool_size: usize) -> Result<RedisStore, StoreError> {
        let valid = |c: char| c.is_ascii_alphanumeric() || "_-.:".contains(c);
        if prefix.is_empty() || prefix.len() > 64 || !prefix.chars().all(valid) {
            return Err(StoreError::Unavailable(format!(
                "'{prefix}' is not a key prefix (1 to 64 letters, digits, '_', '-', '.', ':')"
            )));
        }
        let shown = mask_url(url);
        let client = redis::Client::open(url)
            .map_err(|e| StoreError::Unavailable(format!("'{shown}' is not a Redis URL: {}", clean(&e))))?;
        let pool = (0..pool_size.clamp(1, 64)).map(|_| tokio::sync::Mutex::new(None)).collect();
        let conn_name = format!("idemsim-{}", prefix.replace(':', "-"));
        let inner = Inner { client, tag: format!("{{{prefix}}}"), conn_name, pool, next: AtomicUsize::new(0) };
        let store = RedisStore { inner: Arc::new(inner), flaw: None };
        // Connect now, so a refused port or a wrong password is an error here.
        store
            .conn()
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to Redis at {shown}: {}", clean(&e))))?;
        Ok(store)
    }

    /// The same store with a deliberately broken operation.
    pub fn with_flaw(self, flaw: StoreFlaw) -> RedisStore {
        RedisStore { flaw: Some(flaw), ..self }
    }

    /// Deletes this store's keys (those under its prefix: `SCAN`, never
    /// `FLUSHALL`).
    pub async fn reset(&self) -> Result<(), StoreError> {
        let (_, mut conn) = self.conn().await.map_err(|e| failed(&e, false))?;
        let pattern = format!("{}:*", self.inner.tag);
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(500)
                .query_async(&mut conn)
                .await
                .map_err(|e| failed(&e, true))?;
            if !keys.is_empty() {
                redis::cmd("UNLINK").arg(&keys).query_async::<()>(&mut conn).await.map_err(|e| failed(&e, true))?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Kills one of this store's connections from the server side
    /// (`CLIENT KILL ID`), the `pick`-th by id. Returns whether one was
    /// killed.
    pub async fn terminate_a_connection(&self, pick: u64) -> Result<bool, StoreError> {
        let mut admin = self.inner.client.get_multiplexed_async_connection().await.map_err(|e| failed(&e, false))?;
        let list: String =
            redis::cmd("CLIENT").arg("LIST").query_async(&mut admin).await.map_err(|e| failed(&e, false))?;
        let name = format!("name={}", self.inner.conn_name);
        let mut ids: Vec<u64> = list
            .lines()
            .filter(|l| l.split(' ').any(|f| f == name))
            .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")).and_then(|id| id.parse().ok()))
            .collect();
        ids.sort_unstable();
        let Some(&id) = ids.get((pick % ids.len().max(1) as u64) as usize) else { return Ok(false) };
        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(id)
            .query_async(&mut admin)
            .await
            .map_err(|e| failed(&e, false))?;
        Ok(killed > 0)
    }

    /// The key prefix's hash tag, `{prefix}`.
    pub fn tag(&self) -> &str {
        &self.inner.tag
    }

    /// A pooled connection (opened, and named, if its slot is empty).
    async fn conn(&self) -> Result<(usize, MultiplexedConnection), RedisError> {
        let slot = self.inner.next.fetch_add(1, Ordering::Relaxed) % self.inner.pool.len();
        let mut held = self.inner.pool[slot].lock().await;
        if let Some(conn) = held.as_ref() {
            return Ok((slot, conn.clone()));
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(10)));
        let mut conn = self.inner.client.get_multiplexed_async_connection_with_config(&config).await?;
        redis::cmd("CLIENT").arg("SETNAME").arg(&self.inner.conn_name).query_async::<()>(&mut conn).await?;
        *held = Some(conn.clone());
        Ok((slot, conn))
    }

    /// Runs a script (`EVALSHA`, and `EVAL` if the server does not have it
    /// cached yet). `writes`: whether a broken connection leaves the outcome
    /// unknown.
    async fn eval(&self, script: &Script, args: &[&[u8]], writes: bool) -> Result<Value, StoreError> {
        let (slot, mut conn) = self.conn().await.map_err(|e| failed(&e, false))?;
        let call = |command: &str, body: &str| {
            let mut cmd = redis::cmd(command);
            cmd.arg(body).arg(1).arg(&self.inner.tag);
            for a in args {
                cmd.arg(*a);
            }
            cmd
        };
        let mut reply = call("EVALSHA", &script.sha).query_async(&mut conn).await;
        if matches!(&reply, Err(e) if e.code() == Some("NOSCRIPT")) {
            reply = call("EVAL", &script.source).query_async(&mut conn).await;
        }
        reply.map_err(|e| {
            if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                // The connection broke: open a new one next time.
                if let Ok(mut held) = self.inner.pool[slot].try_lock() {
                    *held = None;
                }
            }
            failed(&e, writes)
        })
    }
}

#[async_trait]
impl IdempotencyStore for RedisStore {
    fn name(&self) -> &str {
        "redis"
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        let m = member(scope)?;
        let (now_b, until_b) = (num(now.0), num(now.plus_ms(lease_ms).0));
        let args: [&[u8]; 4] = [&m, fp.0.as_bytes(), &now_b, &until_b];
        let script = match self.flaw {
            Some(StoreFlaw::CheckThenInsert) => {
                // The flaw: GET, then (another round trip later) SET.
                if let Some(existing) = record_of(&self.eval(&SCRIPTS.read, &[&m], false).await?)? {
                    return Ok(Claim::Existing(existing));
                }
                tokio::task::yield_now().await;
                &SCRIPTS.claim_unchecked
            }
            _ => &SCRIPTS.claim,
        };
        let reply = self.eval(script, &args, true).await?;
        match items(&reply) {
            [flag, attempt] if int(flag) == Some(1) => Ok(Claim::Owned(attempt_of(attempt)?)),
            [flag, record] if int(flag) == Some(0) => {
                record_of(record)?.map(Claim::Existing).ok_or_else(|| corrupt("a claim", &reply))
            }
            _ => Err(corrupt("a claim", &reply)),
        }
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        let m = member(scope)?;
        let (expected_b, now_b, until_b) = (num(expected.0.into()), num(now.0), num(now.plus_ms(lease_ms).0));
        let reply = self.eval(&SCRIPTS.take_over, &[&m, &expected_b, &now_b, &until_b], true).await?;
        match items(&reply) {
            [flag, attempt] if int(flag) == Some(1) => Ok(Takeover::Granted(attempt_of(attempt)?)),
            [flag] if int(flag) == Some(0) => Ok(Takeover::Refused(None)),
            [flag, record] if int(flag) == Some(0) => Ok(Takeover::Refused(record_of(record)?)),
            _ => Err(corrupt("a takeover", &reply)),
        }
    }

    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError> {
        let m = member(scope)?;
        let a = num(attempt.0.into());
        let args: [&[u8]; 4] = [&m, &a, point.downstream_key.0.as_bytes(), &point.data.0];
        write_outcome(&self.eval(&SCRIPTS.write_recovery_point, &args, true).await?)
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        let m = member(scope)?;
        let (a, status, n) =
            (num(attempt.0.into()), num(completion.response.status.into()), num(completion.outbox.len() as u64));
        let (has_effect, effect_id, effect_data): (&[u8], &[u8], &[u8]) = match &completion.local_effect {
            Some(e) => (b"1", e.id.as_bytes(), &e.data.0),
            None => (b"0", b"", b""),
        };
        let mut args: Vec<&[u8]> =
            vec![&m, &a, &status, &completion.response.body.0, has_effect, effect_id, effect_data, &n];
        args.extend(message_args(&completion.outbox));
        let script = match self.flaw {
            Some(StoreFlaw::UnfencedCompletion) => &SCRIPTS.complete_unfenced,
            _ => &SCRIPTS.complete,
        };
        write_outcome(&self.eval(script, &args, true).await?)
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        let m = member(scope)?;
        let a = num(attempt.0.into());
        write_outcome(&self.eval(&SCRIPTS.release, &[&m, &a], true).await?)
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        let m = member(scope)?;
        record_of(&self.eval(&SCRIPTS.read, &[&m], false).await?)
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        let mut key = format!("{}:e:", self.inner.tag).into_bytes();
        key.extend(member(scope)?);
        let (_, mut conn) = self.conn().await.map_err(|e| failed(&e, false))?;
        let flat: Vec<Vec<u8>> =
            redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(&mut conn).await.map_err(|e| failed(&e, false))?;
        let effect = |pair: &[Vec<u8>]| -> Result<LocalEffect, StoreError> {
            let id = String::from_utf8(pair[0].clone()).map_err(|_| StoreError::Corrupt("effect id".into()))?;
            Ok(LocalEffect { id, data: Bytes(pair[1].clone()) })
        };
        flat.chunks_exact(2).map(effect).collect()
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        let (now_b, window_b) = (num(now.0), num(window_ms));
        let reply = self.eval(&SCRIPTS.sweep, &[&now_b, &window_b], true).await?;
        let mut swept = Vec::new();
        for pair in items(&reply) {
            let [m, record] = items(pair) else { return Err(corrupt("a sweep", &reply)) };
            let scope = scope_of(&bytes(m).ok_or_else(|| corrupt("a sweep", &reply))?)?;
            let record = record_of(record)?.ok_or_else(|| corrupt("a swept record", &reply))?;
            swept.push((scope, record));
        }
        swept.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(swept)
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        let now_b = num(now.0);
        let reply = self.eval(&SCRIPTS.stale, &[&now_b], false).await?;
        let mut stale = Vec::new();
        for pair in items(&reply) {
            let [m, record] = items(pair) else { return Err(corrupt("a stale scan", &reply)) };
            let scope = scope_of(&bytes(m).ok_or_else(|| corrupt("a stale scan", &reply))?)?;
            if let Some(record) = record_of(record)? {
                stale.push((scope, record));
            }
        }
        stale.sort_by(|a, b| a.0.cmp(&b.0));
        stale.truncate(limit);
        Ok(stale)
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // The index of the last entry wanted; -1 (all) past what Redis counts.
        let last = i64::try_from(limit).map_or(-1, |l| l - 1).to_string().into_bytes();
        let reply = self.eval(&SCRIPTS.outbox_pending, &[&last], false).await?;
        let entry = |v: &Value| -> Result<OutboxEntry, StoreError> {
            let [id, m, topic, payload] = items(v) else { return Err(corrupt("an outbox scan", v)) };
            let field = |f: &Value| bytes(f).ok_or_else(|| corrupt("an outbox entry", v));
            let message = OutboxMessage {
                id: MessageId(text(id).ok_or_else(|| corrupt("an outbox id", v))?.into()),
                topic: text(topic).ok_or_else(|| corrupt("an outbox topic", v))?,
                payload: Bytes(field(payload)?),
            };
            Ok(OutboxEntry { scope: scope_of(&field(m)?)?, message })
        };
        items(&reply).iter().map(entry).collect()
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        let reply = self.eval(&SCRIPTS.mark_published, &[id.0.as_bytes()], true).await?;
        Ok(int(&reply) == Some(1))
    }

    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        let (m, n) = (member(scope)?, num(messages.len() as u64));
        let mut args: Vec<&[u8]> = vec![&m, &n];
        args.extend(message_args(messages));
        self.eval(&SCRIPTS.stage_outbox, &args, true).await.map(|_| ())
    }
}

/// The script arguments of outbox messages: id, topic and payload of each,
/// as `complete.lua` and `stage_outbox.lua` read them (lib.lua's
/// `queue_outbox`).
fn message_args(messages: &[OutboxMessage]) -> impl Iterator<Item = &[u8]> {
    messages.iter().flat_map(|m| [m.id.0.as_bytes(), m.topic.as_bytes(), &m.payload.0[..]])
}
