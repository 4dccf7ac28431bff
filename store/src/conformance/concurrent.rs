//! The concurrent half of the kit: many callers issue store operations at
//! once, over a few keys, on one store, with real parallelism; every
//! invocation and answer is recorded with its times, and the history is
//! judged for linearizability against the reference model
//! ([`idemsim_model::linearizability`]). The sequential kit checks what
//! each operation means; this checks that each is atomic.
//!
//! The callers also ask what the correct protocol never would: takeovers
//! before a lease ends, and writes and releases by attempts that do not
//! hold the record. The seed fixes each caller's plan, not the
//! interleaving: a run is not deterministic, which is what it is for.
//!
//! ```
//! use idemsim_store::{conformance::Concurrent, MemStore};
//! let verdict = Concurrent::new().operations(400).check(|| async { Ok(MemStore::new()) }).unwrap();
//! assert!(verdict.linearizable(), "{verdict}");
//! ```

use crate::plan::{apply, Plan};
use crate::{IdempotencyStore, StoreError, Terminator};
use idemsim_model::linearizability::{check, shrink, Operation, Verdict, Witness};
use idemsim_model::SimTime;
use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings of a concurrent check. Builder setters take and return `&mut Self`.
#[derive(Clone, Debug)]
pub struct Concurrent {
    callers: usize,
    operations: usize,
    keys: usize,
    seed: u64,
    states_max: usize,
    op_timeout: Duration,
    kills: u32,
}

impl Default for Concurrent {
    fn default() -> Concurrent {
        Concurrent::new()
    }
}

impl Concurrent {
    /// Defaults: 8 callers, 2,000 operations in all over 4 keys at a time
    /// (fresh ones every 100 operations), seed 0,
    /// a search budget of a million states per key, 10 s per operation
    /// before its answer counts as lost.
    pub fn new() -> Concurrent {
        Concurrent {
            callers: 8,
            operations: 2_000,
            keys: 4,
            seed: 0,
            states_max: 1_000_000,
            op_timeout: Duration::from_secs(10),
            kills: 0,
        }
    }

    /// Callers running at once (at least 1).
    pub fn callers(&mut self, n: usize) -> &mut Self {
        self.callers = n.max(1);
        self
    }

    /// Operations in all, shared among the callers.
    pub fn operations(&mut self, n: usize) -> &mut Self {
        self.operations = n;
        self
    }

    /// Keys the operations name at a time (at least 1).
    pub fn keys(&mut self, n: usize) -> &mut Self {
        self.keys = n.max(1);
        self
    }

    /// The seed of the callers' plans.
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = seed;
        self
    }

    /// Connections to kill from the server side while the callers run
    /// (with the store's [`Terminator`], given to
    /// [`Concurrent::check_store`]): an operation cut off mid-flight has
    /// its answer lost, and may or may not have happened.
    pub fn kill_connections(&mut self, n: u32) -> &mut Self {
        self.kills = n;
        self
    }

    /// Runs the callers on a store `open` makes (empty), on a runtime of
    /// two worker threads, and judges the history.
    pub fn check<S, F, Fut>(&self, open: F) -> Result<ConcurrentVerdict, StoreError>
    where
        S: IdempotencyStore + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, StoreError>>,
    {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("cannot start a runtime: {e}")))?;
        rt.block_on(async {
            let store: Arc<dyn IdempotencyStore> = Arc::new(open().await?);
            Ok(self.check_store(store, None).await)
        })
    }

    /// Runs the callers on `store` (inside a multi-threaded runtime for
    /// real parallelism), killing connections with `terminator` if given
    /// and [`Concurrent::kill_connections`] asks, and judges the history.
    pub async fn check_store(
        &self,
        store: Arc<dyn IdempotencyStore>,
        terminator: Option<Terminator>,
    ) -> ConcurrentVerdict {
        let started = Instant::now();
        let clock = Arc::new(AtomicU64::new(0));
        let issued = Arc::new(AtomicU64::new(0));
        let per_caller = self.operations.div_ceil(self.callers);
        let mut tasks = Vec::with_capacity(self.callers);
        for caller in 0..self.callers {
            let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(self.seed, caller as u64));
            let draw: Box<dyn FnMut() -> u64 + Send> = Box::new(move || rng.next_u64());
            let plan = Caller {
                plan: Plan::new(caller as u32, draw, self.keys),
                store: store.clone(),
                clock: clock.clone(),
                issued: issued.clone(),
                started,
                op_timeout: self.op_timeout,
            };
            tasks.push(tokio::spawn(plan.run(per_caller)));
        }
        let done = Arc::new(AtomicBool::new(false));
        let killed = Arc::new(AtomicU32::new(0));
        let killer = terminator
            .filter(|_| self.kills > 0)
            .map(|t| tokio::spawn(kill(t, self.seed, self.kills, done.clone(), killed.clone())));
        let mut history = Vec::new();
        for task in tasks {
            history.extend(task.await.unwrap_or_default());
        }
        done.store(true, Ordering::SeqCst);
        if let Some(killer) = killer {
            let _ = killer.await;
        }
        let mut verdict = self.judge(history);
        verdict.killed = killed.load(Ordering::SeqCst);
        verdict
    }

    /// Judges a recorded history (and shrinks a failure).
    pub fn judge(&self, history: Vec<Operation>) -> ConcurrentVerdict {
        let verdict = check(&history, self.states_max);
        let witness = match &verdict {
            Verdict::NotLinearizable { scope, operations } => {
                Some(shrink(&history, scope, operations, self.states_max))
            }
            _ => None,
        };
        let lost = history.iter().filter(|o| o.answer.is_none()).count();
        ConcurrentVerdict { operations: history.len(), callers: self.callers, lost, killed: 0, verdict, witness }
    }
}

/// What a concurrent check found.
#[derive(Clone, Debug)]
pub struct ConcurrentVerdict {
    /// Operations recorded (those refused by the store before they began
    /// are not: they did not happen).
    pub operations: usize,
    /// Callers that ran at once.
    pub callers: usize,
    /// Operations whose answer was lost (they may or may not have happened).
    pub lost: usize,
    /// Connections killed from the server side while the callers ran.
    pub killed: u32,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// For a history no order explains: a short part of it that still no
    /// order explains (see [`idemsim_model::linearizability::shrink`]).
    pub witness: Option<Witness>,
}

impl ConcurrentVerdict {
    /// True when some order consistent with real time explains every answer.
    pub fn linearizable(&self) -> bool {
        self.verdict == Verdict::Linearizable
    }
}

impl fmt::Display for ConcurrentVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut head =
            format!("{} operations of {} callers ({} answers lost", self.operations, self.callers, self.lost);
        if self.killed > 0 {
            head += &format!(", {} connections killed", self.killed);
        }
        head += ")";
        match &self.verdict {
            Verdict::Linearizable => write!(f, "LINEARIZABLE: {head}"),
            Verdict::Unknown { scope } => write!(f, "UNKNOWN: {head}; the search on {scope} ran out of budget"),
            Verdict::NotLinearizable { scope, operations } => {
                writeln!(
                    f,
                    "NOT LINEARIZABLE: {head}; no order of the {} operations on {scope} explains every answer.",
                    operations.len()
                )?;
                match &self.witness {
                    Some(witness) => write!(f, "{}", witness.story(scope)),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Kills `count` connections, one every 2 to 20 ms, while the callers run
/// (a kill that finds no connection is tried again, up to five times the
/// count).
async fn kill(terminator: Terminator, seed: u64, count: u32, done: Arc<AtomicBool>, killed: Arc<AtomicU32>) {
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed, u64::MAX));
    for _ in 0..count.saturating_mul(5) {
        if done.load(Ordering::SeqCst) || killed.load(Ordering::SeqCst) >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2 + rng.next_u64() % 19)).await;
        if let Ok(true) = terminator(rng.next_u64()).await {
            killed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The seed of a caller's plan: the kit's seed and the caller's number.
fn seed_bytes(seed: u64, caller: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&caller.to_le_bytes());
    bytes
}

/// One caller on a real runtime: its plan, the store, the shared clock.
struct Caller {
    plan: Plan<Box<dyn FnMut() -> u64 + Send>>,
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<AtomicU64>,
    /// Operations issued by all callers: the generation of keys.
    issued: Arc<AtomicU64>,
    started: Instant,
    op_timeout: Duration,
}

impl Caller {
    async fn run(mut self, count: usize) -> Vec<Operation> {
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let step_ms = self.plan.clock_step_ms();
            let now = SimTime(self.clock.fetch_add(step_ms, Ordering::SeqCst) + step_ms);
            let call = self.plan.next_call(now, self.issued.fetch_add(1, Ordering::SeqCst));
            let invoked = self.nanos();
            let answer = tokio::time::timeout(self.op_timeout, apply(&*self.store, &call)).await;
            let returned = self.nanos();
            let caller = self.plan.caller();
            let op = |returned_ns, answer| Operation {
                caller,
                call: call.clone(),
                invoked_ns: invoked,
                returned_ns,
                answer,
            };
            match answer {
                Ok(Ok(answer)) => {
                    self.plan.learn(&answer);
                    out.push(op(Some(returned), Some(answer)));
                }
                // Refused before it began: it did not happen.
                Ok(Err(StoreError::Unavailable(_) | StoreError::Conflict(_))) => {}
                // It may or may not have happened.
                Ok(Err(_)) | Err(_) => out.push(op(None, None)),
            }
            tokio::task::yield_now().await;
        }
        out
    }

    fn nanos(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }
}
