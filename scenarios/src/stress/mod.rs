//! Stress mode: the protocol against a real store under real concurrency.
//!
//! Many Tokio tasks fire duplicate and conflicting requests with the same
//! keys at once. Each runs the protocol core (`idemsim_sim::protocol`, the
//! same code the simulator runs) in this file's environment: store calls
//! go straight to the store over its real connections, time is real, and
//! the fault sites pause holders past their lease or abandon executions
//! between the payment call and the completion, while the database
//! terminates connections from its side and a reconciler finishes what was
//! abandoned. The seed fixes the workload and the fault plan, not the
//! interleaving: stress runs are not deterministic, which is what they are
//! for. This file holds no protocol step, only the environment, the
//! recorder and the report.
//!
//! The recorded history goes through the model's checkers. Concurrent
//! events are stamped so that real-time order can only hide a fencing
//! violation, never invent one: grants (claims, takeovers) when they
//! return, accepted writes when they were sent.

use crate::target::StoreTarget;
use async_trait::async_trait;
use idemsim_model::history::Origin;
use idemsim_model::retry::TokenBucket;
use idemsim_model::{
    check_all, Attempt, Bytes, CallerId, DownstreamKey, Entry, Event, History, IdempotencyKey, MessageId, NodeId, OpId,
    OutboxEntry, RecordState, Request, RequestId, RetryPolicy, RunMeta, Scope, SimTime, Violation,
};
use idemsim_sim::protocol::{
    ChargeAnswer, ClientEnv, Env, FaultSite, KeyLock, Ledger, Proceed, Protocol, Reply, StoreOp, StoreReply,
};
use idemsim_sim::rng::{between, chance, stream, SimRng, Stream};
use idemsim_sim::{ProtocolSettings, RetryAfter};
use idemsim_store::{IdempotencyStore, StoreError, StoreFlaw};
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod env;
mod recorder;

use env::*;
use recorder::*;

/// Told how many requests have finished, as they finish.
pub type StressProgress = Arc<dyn Fn(usize) + Send + Sync>;

/// What to stress.
#[derive(Clone)]
pub struct StressSpec {
    /// Seeds the workload and the fault plan.
    pub seed: u64,
    /// Requests kept in flight at once.
    pub clients: usize,
    /// Requests in all (copies of one key count one each).
    pub requests: usize,
    /// Lease of a claim or takeover.
    pub lease_ms: u64,
    /// A holder sleeps past its lease before completing.
    pub pause_permille: u32,
    /// An execution is abandoned between the payment call and the completion.
    pub abandon_permille: u32,
    /// Server-side connection terminations during the run.
    pub terminations: u32,
    /// The schema (PostgreSQL) or database (MySQL) the run empties and
    /// uses; give concurrent runs different ones.
    pub schema: String,
    /// Called with the number of requests finished, after each one (a
    /// run can last long; `idemsim stress` shows it on stderr).
    pub progress: Option<StressProgress>,
}

impl std::fmt::Debug for StressSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StressSpec")
            .field("seed", &self.seed)
            .field("clients", &self.clients)
            .field("requests", &self.requests)
            .field("lease_ms", &self.lease_ms)
            .field("pause_permille", &self.pause_permille)
            .field("abandon_permille", &self.abandon_permille)
            .field("terminations", &self.terminations)
            .field("schema", &self.schema)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Default for StressSpec {
    fn default() -> StressSpec {
        StressSpec {
            seed: 0,
            clients: 16,
            requests: 2000,
            lease_ms: 150,
            pause_permille: 80,
            abandon_permille: 40,
            terminations: 10,
            schema: "idemsim_stress".into(),
            progress: None,
        }
    }
}

pub use idemsim_store::Terminator;

/// What a stress run found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StressReport {
    /// The store's name.
    pub store: String,
    /// The seed.
    pub seed: u64,
    /// Requests issued (first sends).
    pub requests: usize,
    /// Sends including retries.
    pub sends: usize,
    /// Concurrency.
    pub clients: usize,
    /// Wall time.
    pub elapsed_ms: u64,
    /// Sends per second.
    pub requests_per_sec: f64,
    /// History events.
    pub events: usize,
    /// Store errors seen by handlers (the client retried).
    pub store_errors: usize,
    /// The same, by operation and error (message cut at 80 characters).
    pub store_error_kinds: BTreeMap<String, usize>,
    /// Holders paused past their lease.
    pub pauses: usize,
    /// Executions abandoned mid-way.
    pub abandoned: usize,
    /// Connections terminated by the server.
    pub terminated: usize,
    /// Stopped by Ctrl-C before all requests were sent: the verdict covers
    /// those that were.
    pub interrupted: bool,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// The events the violations cite, by their number (`#N`), described:
    /// a stress run has no seed to replay, so its report carries them.
    pub cited: BTreeMap<usize, CitedEvent>,
    /// The whole history (`idemsim stress --trace` writes it).
    #[serde(skip)]
    pub history: History,
}

/// One event of a stress history, as a report cites it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CitedEvent {
    /// Milliseconds since the run began.
    pub at_ms: u64,
    /// Where it happened.
    pub node: String,
    /// What happened, in words.
    pub text: String,
}

/// The events `violations` cite, described.
fn cited(history: &History, violations: &[Violation]) -> BTreeMap<usize, CitedEvent> {
    let numbers = violations.iter().flat_map(|v| v.events.iter().copied());
    numbers
        .filter_map(|i| {
            let e = history.entries.get(i)?;
            let text = idemsim_sim::timeline::describe(&e.event);
            Some((i, CitedEvent { at_ms: e.at.0, node: e.node.to_string(), text }))
        })
        .collect()
}

/// How much of a store error a report keeps to tell kinds apart.
const ERROR_KIND_CHARS: usize = 100;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// One logical operation: a request a client sends and retries.
#[derive(Clone)]
struct Op {
    op: OpId,
    client: u32,
    request: Request,
    pause: bool,
    abandon: bool,
    work_ms: u64,
}

/// Groups of 2 to 4 copies of one keyed request (one copy in seven has
/// another body), all started at once: drawn one group at a time, so a
/// run never holds its whole workload.
fn workload(spec: &StressSpec) -> impl Iterator<Item = Vec<Op>> + '_ {
    let mut rng = stream(spec.seed, Stream::Workload);
    let mut faults = stream(spec.seed, Stream::Plan);
    let (mut made, mut g) = (0, 0);
    std::iter::from_fn(move || {
        if made >= spec.requests {
            return None;
        }
        let size = (between(&mut rng, 2, 4) as usize).min(spec.requests - made);
        let caller = CallerId(["acme", "globex"][g % 2].into());
        let path = ["/orders", "/charges", "/checkout"][rng.gen_range(0..3)];
        let amount = between(&mut rng, 1, 999);
        let key = IdempotencyKey(format!("s{}-{g}", spec.seed).into());
        let group = (0..size)
            .map(|i| {
                let amount = if chance(&mut rng, 143) { amount + 1 } else { amount };
                let body = Bytes(format!(r#"{{"amount":{amount},"currency":"eur"}}"#).into_bytes());
                let request = Request {
                    caller: caller.clone(),
                    key: Some(key.clone()),
                    method: "POST".into(),
                    path: path.into(),
                    body,
                };
                let op = OpId((made + i + 1) as u32);
                Op {
                    op,
                    client: (op.0 as usize % spec.clients.max(1)) as u32,
                    request,
                    pause: chance(&mut faults, spec.pause_permille),
                    abandon: chance(&mut faults, spec.abandon_permille),
                    work_ms: between(&mut faults, 2, 30),
                }
            })
            .collect();
        made += size;
        g += 1;
        Some(group)
    })
}

/// The protocol's timings in a stress run: the spec's lease, short
/// `Retry-After` hints and a reconciler that scans often, so a run of a
/// few thousand requests takes seconds.
pub fn settings(spec: &StressSpec) -> ProtocolSettings {
    ProtocolSettings {
        lease_ms: spec.lease_ms,
        reconcile_interval_ms: spec.lease_ms,
        reconcile_idle_max_ms: 4 * spec.lease_ms,
        retry: RetryPolicy {
            base_ms: 5,
            cap_ms: 200,
            attempts_max: 12,
            deadline_ms: 20_000,
            timeout_ms: 5_000,
            budget: idemsim_model::retry::RetryBudget { tokens_max: 100_000, deposit_milli: 1000 },
        },
        amplification_max_percent: 1200,
        retry_after: RetryAfter { in_flight_min_ms: 5, takeover_refused_ms: 5, lease_lost_ms: 5, unavailable_ms: 10 },
        ..ProtocolSettings::default()
    }
}

/// A store opened inside the stress run's runtime (its connections belong
/// to it), with an optional way to terminate one of its connections from
/// the server side.
pub struct Opened {
    /// The store, emptied.
    pub store: Arc<dyn IdempotencyStore>,
    /// Kills a connection, if the store can.
    pub terminate: Option<Terminator>,
}

impl Opened {
    /// A store that cannot have its connections killed.
    pub fn store(store: impl IdempotencyStore + 'static) -> Opened {
        Opened { store: Arc::new(store), terminate: None }
    }
}

/// Opens the store under stress; called once, inside the run's runtime.
pub type Opener<'a> = &'a (dyn Fn() -> BoxFuture<'static, Result<Opened, StoreError>> + Sync);

/// Shared state of one stress run.
struct Ctx {
    store: Arc<dyn IdempotencyStore>,
    protocol: Arc<dyn Protocol>,
    settings: ProtocolSettings,
    rec: Recorder,
    /// The dependency's dedup table: downstream key to charge id.
    ledger: Mutex<Ledger>,
    /// Message ids the consumer has applied.
    consumed: Mutex<BTreeSet<MessageId>>,
    /// Key locks of the broken lock-based claims.
    locks: Mutex<BTreeSet<KeyLock>>,
    /// Each client's retry budget.
    buckets: Mutex<BTreeMap<u32, TokenBucket>>,
    /// Requests finished, for the progress callback.
    finished: std::sync::atomic::AtomicUsize,
}

/// Why a stress run could not run.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// Bad settings.
    #[error("{0}")]
    Usage(String),
    /// The store could not be opened.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Runs a stress test against `target` (opened inside the run's runtime,
/// in `spec.schema`, with `flaw` if given), running `protocol`.
pub fn stress(
    spec: &StressSpec,
    target: &StoreTarget,
    flaw: Option<StoreFlaw>,
    protocol: Arc<dyn Protocol>,
) -> Result<StressReport, StressError> {
    let (schema, pool) = (spec.schema.clone(), spec.clients);
    let target = target.clone();
    let open = move || -> BoxFuture<'static, Result<Opened, StoreError>> {
        let (target, schema) = (target.clone(), schema.clone());
        Box::pin(async move {
            let (store, terminate) = target.open(&schema, pool, flaw).await?;
            Ok(Opened { store, terminate })
        })
    };
    stress_with(spec, &open, protocol)
}

/// The most requests a stress run keeps in flight at once.
pub const MAX_CLIENTS: usize = 1024;

/// Runs a stress test against any store: `open` opens it (empty) inside
/// the run's runtime, and may say how to kill its connections.
pub fn stress_with(
    spec: &StressSpec,
    open: Opener<'_>,
    protocol: Arc<dyn Protocol>,
) -> Result<StressReport, StressError> {
    if spec.clients == 0 || spec.clients > MAX_CLIENTS || spec.requests == 0 || spec.lease_ms == 0 {
        return Err(StressError::Usage(format!(
            "--clients must be 1..={MAX_CLIENTS}, --requests and the lease positive"
        )));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| StressError::Usage(format!("cannot start a runtime: {e}")))?;
    let Opened { store, terminate } = rt.block_on(open())?;
    let ctx = Arc::new(Ctx {
        store: store.clone(),
        protocol,
        settings: settings(spec),
        rec: Recorder {
            start: Instant::now(),
            events: Mutex::default(),
            counters: Mutex::default(),
            errors: Mutex::default(),
        },
        ledger: Mutex::default(),
        consumed: Mutex::default(),
        locks: Mutex::default(),
        buckets: Mutex::default(),
        finished: Default::default(),
    });
    let started = Instant::now();
    rt.block_on(drive(&ctx, spec, terminate));
    let elapsed = started.elapsed();
    drop(rt);
    let ctx = Arc::try_unwrap(ctx).map_err(|_| StressError::Usage("stress tasks outlived the run".into()))?;
    let settings = &ctx.settings;
    let meta = RunMeta {
        lease_ms: settings.lease_ms,
        retry: settings.retry.clone(),
        amplification_max_percent: settings.amplification_max_percent,
        ..RunMeta::default()
    };
    let (history, counters, store_error_kinds) = ctx.rec.into_history(meta);
    let sends = history.entries.iter().filter(|e| matches!(e.event, Event::RequestSent { .. })).count();
    let count = |k| counters.get(k).copied().unwrap_or(0);
    let violations = check_all(&history);
    Ok(StressReport {
        store: store.name().to_string(),
        seed: spec.seed,
        requests: spec.requests,
        sends,
        clients: spec.clients,
        elapsed_ms: elapsed.as_millis() as u64,
        requests_per_sec: sends as f64 / elapsed.as_secs_f64().max(1e-9),
        events: history.entries.len(),
        store_errors: count("store_error"),
        store_error_kinds,
        pauses: count("pause"),
        abandoned: count("abandon"),
        terminated: count("terminated"),
        interrupted: count("interrupted") > 0,
        cited: cited(&history, &violations),
        violations,
        history,
    })
}

/// Runs the groups (copies of a group start together and race), at most
/// `clients` requests at a time, with the reconciler and the connection
/// killer beside them. A Ctrl-C stops it starting groups.
async fn drive(ctx: &Arc<Ctx>, spec: &StressSpec, terminate: Option<Terminator>) {
    let killer = terminate.map(|t| tokio::spawn(terminations(t, spec.seed, spec.terminations, ctx.clone())));
    let reconciler = {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let env = StressEnv { ctx: ctx.clone(), node: NodeId::Reconciler, origin: Origin::Reconciler, op: None };
            idemsim_sim::protocol::reconciler(&*ctx.protocol, &env).await;
        })
    };
    let permits = Arc::new(tokio::sync::Semaphore::new(spec.clients));
    let all = u32::try_from(spec.clients).expect("clients are at most 1024");
    for group in workload(spec) {
        if crate::sweep::stopped() {
            ctx.rec.count("interrupted");
            break;
        }
        // The group's permits, held until its last copy finishes.
        let wanted = u32::try_from(group.len().min(spec.clients)).expect("a group is small");
        let Ok(held) = permits.clone().acquire_many_owned(wanted).await else { break };
        let held = Arc::new(held);
        for op in group {
            let (ctx, held, progress) = (ctx.clone(), held.clone(), spec.progress.clone());
            tokio::spawn(async move {
                let client = StressClient::new(ctx.clone(), Arc::new(op));
                idemsim_sim::protocol::run_operation(&*ctx.protocol, &client, client.op.op, &client.op.request).await;
                let done = ctx.finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if let Some(progress) = progress {
                    progress(done);
                }
                drop(held);
            });
        }
    }
    // Every permit back: every request has finished.
    let _ = permits.acquire_many(all).await;
    reconciler.abort();
    let _ = reconciler.await;
    if let Some(k) = killer {
        k.abort();
        let _ = k.await;
    }
}

/// Kills `count` of the store's connections from the server side, one
/// every 20 to 150 ms. An attempt that finds no connection to kill, or
/// fails (a busy pool under load), is tried again, up to five times the
/// count, so a loaded machine still sees its kills.
async fn terminations(terminate: Terminator, seed: u64, count: u32, ctx: Arc<Ctx>) {
    let mut rng: SimRng = stream(seed, Stream::Net);
    let mut killed = 0;
    for _ in 0..count.saturating_mul(5) {
        if killed >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(between(&mut rng, 20, 150))).await;
        if let Ok(true) = terminate(rng.gen()).await {
            killed += 1;
            ctx.rec.count("terminated");
        }
    }
}
