//! Stress mode: the protocol against a real store under real concurrency.
//!
//! Many Tokio tasks fire duplicate and conflicting requests with the same
//! keys at once through an in-process handler that runs the protocol
//! against the store over real connections. Holders are paused past their
//! lease, executions are abandoned between the payment call and the
//! completion, and the database terminates connections from its side. The
//! seed fixes the workload and the fault plan, not the interleaving: stress
//! runs are not deterministic, which is what they are for.
//!
//! The recorded history goes through the model's checkers. Concurrent
//! events are stamped so that real-time order can only hide a fencing
//! violation, never invent one: grants (claims, takeovers) when they
//! return, accepted writes when they were sent.

use crate::target::StoreTarget;
use idemsim_model::history::{Answer, Origin, RetryCause};
use idemsim_model::{
    check_all, decide, Attempt, Bytes, CallerId, Claim, Decision, DownstreamKey, Effects, Entry, Event, History,
    IdempotencyKey, NodeId, OpId, RecoveryPoint, Request, RequestId, RetryPolicy, RunMeta, Scope, SimTime,
    StoredResponse, Takeover, Try, Violation, WriteOutcome,
};
use idemsim_sim::execution::{completion, downstream_key, recovery_data, validate};
use idemsim_sim::rng::{between, chance, stream, SimRng, Stream};
use idemsim_store::{IdempotencyStore, SqlFlaw, StoreError};
use rand::Rng;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to stress.
#[derive(Clone, Debug)]
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
        }
    }
}

/// Terminates a store connection from the server side, if the store can.
pub type Terminator = Arc<dyn Fn(u64) -> BoxFuture<'static, Result<bool, StoreError>> + Send + Sync>;

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
    /// What the checkers found.
    pub violations: Vec<Violation>,
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Records events from many tasks, stamped by a monotonic clock.
struct Recorder {
    start: Instant,
    events: Mutex<Vec<(u128, u64, NodeId, Event)>>,
    counters: Mutex<BTreeMap<&'static str, usize>>,
    errors: Mutex<BTreeMap<String, usize>>,
}

impl Recorder {
    fn now_ns(&self) -> u128 {
        self.start.elapsed().as_nanos()
    }

    fn now(&self) -> SimTime {
        SimTime((self.now_ns() / 1_000_000) as u64)
    }

    fn at(&self, ns: u128, node: NodeId, event: Event) {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let seq = events.len() as u64;
        events.push((ns, seq, node, event));
    }

    fn record(&self, node: NodeId, event: Event) {
        self.at(self.now_ns(), node, event);
    }

    fn count(&self, what: &'static str) {
        *self.counters.lock().unwrap_or_else(|p| p.into_inner()).entry(what).or_default() += 1;
    }

    fn error(&self, op: &str, e: &StoreError) {
        let text: String = format!("{op}: {e}").chars().take(80).collect();
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()).entry(text).or_default() += 1;
    }

    fn into_history(self, meta: RunMeta) -> (History, BTreeMap<&'static str, usize>, BTreeMap<String, usize>) {
        let mut events = self.events.into_inner().unwrap_or_else(|p| p.into_inner());
        events.sort_by_key(|(ns, seq, _, _)| (*ns, *seq));
        let entries = events
            .into_iter()
            .map(|(ns, _, node, event)| Entry { at: SimTime((ns / 1_000_000) as u64), node, event })
            .collect();
        let counters = self.counters.into_inner().unwrap_or_else(|p| p.into_inner());
        (History { meta, entries }, counters, self.errors.into_inner().unwrap_or_else(|p| p.into_inner()))
    }
}

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
/// another body), all started at once.
fn workload(spec: &StressSpec) -> Vec<Vec<Op>> {
    let mut rng = stream(spec.seed, Stream::Workload);
    let mut faults = stream(spec.seed, Stream::Plan);
    let mut groups = Vec::new();
    let mut made = 0;
    while made < spec.requests {
        let g = groups.len();
        let size = (between(&mut rng, 2, 4) as usize).min(spec.requests - made);
        let caller = CallerId(["acme", "globex"][g % 2].to_string());
        let path = ["/orders", "/charges", "/checkout"][rng.gen_range(0..3)];
        let amount = between(&mut rng, 1, 999);
        let key = IdempotencyKey(format!("s{}-{g}", spec.seed));
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
        groups.push(group);
    }
    groups
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        base_ms: 5,
        cap_ms: 200,
        attempts_max: 12,
        deadline_ms: 20_000,
        timeout_ms: 5_000,
        budget: idemsim_model::retry::RetryBudget { tokens_max: 100_000, deposit_milli: 1000 },
    }
}

struct Ctx {
    store: Arc<dyn IdempotencyStore>,
    rec: Recorder,
    lease_ms: u64,
    charges: Mutex<BTreeMap<DownstreamKey, String>>,
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
/// in `spec.schema`, with `flaw` if given).
pub fn stress(spec: &StressSpec, target: &StoreTarget, flaw: Option<SqlFlaw>) -> Result<StressReport, StressError> {
    if spec.clients == 0 || spec.clients > 1024 || spec.requests == 0 || spec.lease_ms == 0 {
        return Err(StressError::Usage("--clients must be 1..=1024, --requests and the lease positive".into()));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| StressError::Usage(format!("cannot start a runtime: {e}")))?;
    let (store, terminate) = rt.block_on(target.open(&spec.schema, spec.clients, flaw))?;
    let ctx = Arc::new(Ctx {
        store: store.clone(),
        rec: Recorder {
            start: Instant::now(),
            events: Mutex::default(),
            counters: Mutex::default(),
            errors: Mutex::default(),
        },
        lease_ms: spec.lease_ms,
        charges: Mutex::default(),
    });
    let groups = workload(spec);
    let started = Instant::now();
    rt.block_on(async {
        let killer = terminate.map(|t| tokio::spawn(terminations(t, spec.seed, spec.terminations, ctx.clone())));
        let permits = Arc::new(tokio::sync::Semaphore::new(spec.clients));
        let mut tasks = Vec::new();
        for group in groups {
            // Copies of a group wait for each other, then race.
            let gate = Arc::new(tokio::sync::Barrier::new(group.len()));
            for op in group {
                let (ctx, permits, gate) = (ctx.clone(), permits.clone(), gate.clone());
                tasks.push(tokio::spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    gate.wait().await;
                    client(&ctx, &op).await;
                }));
            }
        }
        for t in tasks {
            let _ = t.await;
        }
        if let Some(k) = killer {
            k.abort();
        }
    });
    let elapsed = started.elapsed();
    drop(rt);
    let ctx = Arc::try_unwrap(ctx).map_err(|_| StressError::Usage("stress tasks outlived the run".into()))?;
    let meta =
        RunMeta { lease_ms: spec.lease_ms, retry: policy(), amplification_max_percent: 1200, ..RunMeta::default() };
    let (history, counters, store_error_kinds) = ctx.rec.into_history(meta);
    let sends = history.entries.iter().filter(|e| matches!(e.event, Event::RequestSent { .. })).count();
    let count = |k| counters.get(k).copied().unwrap_or(0);
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
        violations: check_all(&history),
    })
}

async fn terminations(terminate: Terminator, seed: u64, count: u32, ctx: Arc<Ctx>) {
    let mut rng: SimRng = stream(seed, Stream::Net);
    for _ in 0..count {
        tokio::time::sleep(Duration::from_millis(between(&mut rng, 20, 150))).await;
        if let Ok(true) = terminate(rng.gen()).await {
            ctx.rec.count("terminated");
        }
    }
}

/// A client: send, wait, retry transient answers with full jitter.
async fn client(ctx: &Ctx, op: &Op) {
    let policy = policy();
    let node = NodeId::Client(op.client);
    let mut rng = stream(op.op.0.into(), Stream::Clients);
    for try_no in 1..=policy.attempts_max {
        let req = RequestId { op: op.op, try_no: Try(try_no) };
        ctx.rec.record(node, Event::RequestSent { req, to: NodeId::Server(0), request: op.request.clone() });
        let answer = handle(ctx, op, req).await;
        let (cause, retry_after) = match answer {
            Some((answer, response, retry_after_ms)) => {
                let status = response.status;
                ctx.rec.record(node, Event::ResponseReceived { req, answer, response, retry_after_ms });
                if !idemsim_model::retry::is_transient_status(status) {
                    return;
                }
                (RetryCause::Status(status), retry_after_ms.unwrap_or(0))
            }
            None => {
                ctx.rec.record(node, Event::TimedOut { req });
                (RetryCause::Timeout, 0)
            }
        };
        if try_no == policy.attempts_max {
            break;
        }
        let wait_ms = between(&mut rng, 0, policy.backoff_max_ms(try_no + 1)).max(retry_after);
        ctx.rec.record(node, Event::RetryScheduled { req, wait_ms, cause });
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    }
    ctx.rec.record(node, Event::GaveUp { op: op.op, reason: format!("gave up after {} sends", policy.attempts_max) });
}

type Reply = (Answer, StoredResponse, Option<u64>);

fn reply(answer: Answer, status: u16, body: &str, retry_after_ms: Option<u64>) -> Option<Reply> {
    Some((answer, StoredResponse::new(status, body), retry_after_ms))
}

/// The server side of one send; `None` when the execution was abandoned
/// (the client sees a timeout).
async fn handle(ctx: &Ctx, op: &Op, req: RequestId) -> Option<Reply> {
    let server = NodeId::Server(0);
    let by = Origin::Request { req, copy: 1 };
    let fp = op.request.fingerprint();
    ctx.rec.record(server, Event::RequestReceived { req, copy: 1, fingerprint: fp.clone() });
    let scope = op.request.scope().expect("stress requests carry keys");
    let now = ctx.rec.now();
    let answer = match ctx.store.claim(&scope, &fp, now, ctx.lease_ms).await {
        Ok(claim) => {
            record_claim(ctx, by, &scope, &fp, now, &claim);
            match decide(&fp, Some(&claim), now) {
                Decision::MissingKey => unreachable!("keyed"),
                Decision::Mismatch => reply(Answer::Mismatch, 422, r#"{"error":"key reused"}"#, None),
                Decision::InFlight => {
                    reply(Answer::InFlight, 409, r#"{"error":"in progress"}"#, Some(in_flight_wait(&claim, now)))
                }
                Decision::Replay(response) => Some((Answer::Replayed, response, None)),
                Decision::Execute { attempt } => execute(ctx, op, by, &scope, attempt, None).await,
                Decision::TakeOver { expected, recovery_point } => {
                    take_over(ctx, op, by, &scope, expected, recovery_point).await
                }
            }
        }
        Err(e) => store_failed(ctx, by, "claim", &e),
    };
    if let Some((answer, response, retry_after_ms)) = &answer {
        let event = Event::ResponseSent {
            req,
            copy: 1,
            answer: *answer,
            response: response.clone(),
            retry_after_ms: *retry_after_ms,
        };
        ctx.rec.record(server, event);
    }
    answer
}

fn in_flight_wait(claim: &Claim, now: SimTime) -> u64 {
    match claim {
        Claim::Existing(r) => match r.state {
            idemsim_model::RecordState::InProgress { locked_until, .. } => locked_until.since_ms(now).max(5),
            _ => 5,
        },
        Claim::Owned(_) => 5,
    }
}

fn record_claim(ctx: &Ctx, by: Origin, scope: &Scope, fp: &idemsim_model::Fingerprint, now: SimTime, claim: &Claim) {
    let event = match claim {
        Claim::Owned(attempt) => Event::Claimed {
            by,
            scope: scope.clone(),
            fingerprint: fp.clone(),
            attempt: *attempt,
            locked_until: now.plus_ms(ctx.lease_ms),
        },
        Claim::Existing(record) => Event::ClaimFound { by, scope: scope.clone(), record: record.clone(), as_of: now },
    };
    ctx.rec.record(NodeId::Db, event);
}

fn store_failed(ctx: &Ctx, by: Origin, op: &str, e: &StoreError) -> Option<Reply> {
    ctx.rec.count("store_error");
    ctx.rec.error(op, e);
    ctx.rec.record(NodeId::Db, Event::StoreFailed { by, op: op.into(), error: e.to_string() });
    reply(Answer::Unavailable, 503, r#"{"error":"store unavailable"}"#, Some(10))
}

async fn take_over(
    ctx: &Ctx,
    op: &Op,
    by: Origin,
    scope: &Scope,
    expected: Attempt,
    rp: Option<RecoveryPoint>,
) -> Option<Reply> {
    let now = ctx.rec.now();
    match ctx.store.take_over(scope, expected, now, ctx.lease_ms).await {
        Ok(Takeover::Granted(attempt)) => {
            let event = Event::TakenOver { by, scope: scope.clone(), attempt, locked_until: now.plus_ms(ctx.lease_ms) };
            ctx.rec.record(NodeId::Db, event);
            execute(ctx, op, by, scope, attempt, rp).await
        }
        Ok(Takeover::Refused(_)) => {
            ctx.rec.record(NodeId::Db, Event::TakeoverRefused { by, scope: scope.clone(), expected });
            reply(Answer::InFlight, 409, r#"{"error":"in progress"}"#, Some(5))
        }
        Err(e) => store_failed(ctx, by, "take_over", &e),
    }
}

/// A write's outcome, recorded at the time it was sent.
fn record_write(ctx: &Ctx, sent_ns: u128, accepted: Event, fenced: Event, outcome: WriteOutcome) {
    let event = if outcome == WriteOutcome::Applied { accepted } else { fenced };
    ctx.rec.at(sent_ns, NodeId::Db, event);
}

async fn execute(
    ctx: &Ctx,
    op: &Op,
    by: Origin,
    scope: &Scope,
    attempt: Attempt,
    rp: Option<RecoveryPoint>,
) -> Option<Reply> {
    use idemsim_model::history::WriteKind;
    ctx.rec.record(NodeId::Server(0), Event::ExecutionStarted { by, scope: scope.clone(), attempt });
    let fenced = |write| Event::WriteFenced { by, scope: scope.clone(), attempt, write };
    if let Err(why) = validate(&op.request) {
        let sent = ctx.rec.now_ns();
        if let Ok(outcome) = ctx.store.release(scope, attempt).await {
            record_write(
                ctx,
                sent,
                Event::Released { by, scope: scope.clone(), attempt },
                fenced(WriteKind::Release),
                outcome,
            );
        }
        return reply(Answer::Invalid, 400, &format!(r#"{{"error":"{why}"}}"#), None);
    }
    tokio::time::sleep(Duration::from_millis(op.work_ms)).await;
    let mut charge = None;
    if Effects::of_path(&op.request.path).external {
        let key = match rp {
            Some(p) => p.downstream_key,
            None => {
                let key = downstream_key(scope, &op.request.fingerprint());
                let point = RecoveryPoint { downstream_key: key.clone(), data: recovery_data(&op.request) };
                let sent = ctx.rec.now_ns();
                match ctx.store.write_recovery_point(scope, attempt, &point).await {
                    Ok(outcome) => {
                        let accepted = Event::RecoveryPointWritten {
                            by,
                            scope: scope.clone(),
                            attempt,
                            downstream_key: key.clone(),
                        };
                        record_write(ctx, sent, accepted, fenced(WriteKind::RecoveryPoint), outcome);
                        if outcome == WriteOutcome::Fenced {
                            return reply(Answer::LeaseLost, 409, r#"{"error":"lease lost"}"#, Some(5));
                        }
                    }
                    Err(e) => return store_failed(ctx, by, "write_recovery_point", &e),
                }
                key
            }
        };
        charge = Some(call_dependency(ctx, by, scope, attempt, key));
        if op.abandon && attempt == Attempt::FIRST {
            ctx.rec.count("abandon");
            return None;
        }
    }
    if op.pause && attempt == Attempt::FIRST {
        ctx.rec.count("pause");
        tokio::time::sleep(Duration::from_millis(ctx.lease_ms + op.work_ms * 2)).await;
    }
    let done = completion(scope, &op.request, charge.as_deref());
    let sent = ctx.rec.now_ns();
    match ctx.store.complete(scope, attempt, &done).await {
        Ok(WriteOutcome::Applied) => {
            record_completion(ctx, sent, by, scope, attempt, &done);
            Some((Answer::Executed, done.response, None))
        }
        Ok(WriteOutcome::Fenced) => {
            ctx.rec.at(sent, NodeId::Db, fenced(WriteKind::Completion));
            reply(Answer::LeaseLost, 409, r#"{"error":"lease lost"}"#, Some(5))
        }
        Err(e @ StoreError::Indeterminate(_)) => {
            // The connection broke around the commit: read back whether our
            // completion landed, so the history does not lose an effect.
            if committed(ctx, scope, attempt, &done.response).await {
                record_completion(ctx, sent, by, scope, attempt, &done);
            }
            store_failed(ctx, by, "complete", &e)
        }
        Err(e) => store_failed(ctx, by, "complete", &e),
    }
}

/// True if the record is completed by `attempt` with `response`.
async fn committed(ctx: &Ctx, scope: &Scope, attempt: Attempt, response: &StoredResponse) -> bool {
    for _ in 0..5 {
        match ctx.store.read(scope).await {
            Ok(Some(r)) => {
                return matches!(&r.state, idemsim_model::RecordState::Completed { attempt: a, response: stored }
                    if *a == attempt && stored == response)
            }
            Ok(None) => return false,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    false
}

fn record_completion(
    ctx: &Ctx,
    sent: u128,
    by: Origin,
    scope: &Scope,
    attempt: Attempt,
    done: &idemsim_model::Completion,
) {
    for event in Event::completion(by, scope, attempt, done) {
        ctx.rec.at(sent, NodeId::Db, event);
    }
}

/// The dependency: one effect per downstream key.
fn call_dependency(ctx: &Ctx, by: Origin, scope: &Scope, attempt: Attempt, key: DownstreamKey) -> String {
    let mut charges = ctx.charges.lock().unwrap_or_else(|p| p.into_inner());
    let called = Event::DownstreamCalled {
        by,
        from: NodeId::Server(0),
        scope: scope.clone(),
        attempt,
        downstream_key: key.clone(),
    };
    ctx.rec.record(NodeId::Downstream, called);
    if let Some(id) = charges.get(&key) {
        return id.clone();
    }
    let id = format!("ch_{}", charges.len() + 1);
    charges.insert(key.clone(), id.clone());
    ctx.rec.record(NodeId::Downstream, Event::DownstreamEffect { scope: scope.clone(), downstream_key: key });
    id
}
