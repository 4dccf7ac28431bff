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

use crate::{IdempotencyStore, StoreError, Terminator};
use idemsim_model::linearizability::{check, shrink, Answer, Call, Operation, Verdict, Witness};
use idemsim_model::{
    Attempt, Bytes, Claim, Completion, DownstreamKey, Fingerprint, MessageId, OutboxMessage, RecoveryPoint, Scope,
    SimTime, StoredResponse, Takeover,
};
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

/// Operations (of all callers) per generation of keys: then every caller
/// moves to fresh keys, so first claims race again and again (a record
/// once made is rarely absent again), and each key's history stays short.
const GENERATION_OPS: u64 = 100;

/// The lease every claim and takeover asks for, in the model's clock.
const LEASE_MS: u64 = 1_000;

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
            let plan = Caller {
                id: caller as u32,
                rng: TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(self.seed, caller as u64)),
                keys: self.keys,
                attempts: vec![Attempt(1); self.keys],
                store: store.clone(),
                clock: clock.clone(),
                issued: issued.clone(),
                generation: 0,
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
            Verdict::NotLinearizable { operations, .. } => Some(shrink(&history, operations, self.states_max)),
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
                    Some(witness) => write!(f, "{}", WitnessStory { scope, witness }),
                    None => Ok(()),
                }
            }
        }
    }
}

/// A witness told as a short story: where the record stood, then each
/// operation with its caller, interval and answer.
struct WitnessStory<'a> {
    scope: &'a Scope,
    witness: &'a Witness,
}

impl fmt::Display for WitnessStory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Witness { before, starts, operations, as_answered, left_out } = self.witness;
        let callers = self.witness.callers();
        writeln!(
            f,
            "A witness: {} of {} that no order explains (times in µs from the first):",
            count(operations.len(), "operation", "operations"),
            count(callers.len(), "caller", "callers"),
        )?;
        let state = |s: &idemsim_model::RefStore| match (s.read(self.scope), s.tombstone(self.scope)) {
            (Some(r), _) => Answer::Record(Some(r)).to_string(),
            (None, Some((a, _))) => format!("absent, released by attempt {a}"),
            (None, None) => "absent".to_string(),
        };
        let states: Vec<String> = starts.iter().map(state).collect();
        match *before {
            0 => writeln!(f, "  the record: absent (nothing came before)")?,
            n => writeln!(
                f,
                "  the record: {} (after the {n} operations before these, in any order)",
                states.join(" or ")
            )?,
        }
        let base = operations.first().map_or(0, |o| o.invoked_ns);
        let us = |ns: u64| (ns - base) / 1_000;
        for (n, (judged, real)) in operations.iter().zip(as_answered).enumerate() {
            let answer = match (&judged.answer, &real.answer, real.returned_ns) {
                (Some(a), _, Some(r)) => format!("[+{} .. +{}] -> {a}", us(judged.invoked_ns), us(r)),
                (None, Some(a), Some(r)) => format!(
                    "[+{} .. +{}, after the cut] -> {a} (judged as not yet answered)",
                    us(judged.invoked_ns),
                    us(r)
                ),
                _ => format!("[+{} .. never] -> answer lost", us(judged.invoked_ns)),
            };
            writeln!(f, "  {:>2}. caller {}: {} {answer}", n + 1, judged.caller, judged.call)?;
        }
        if !left_out.is_empty() {
            writeln!(
                f,
                "  left out: {} still running then or lost; with or without them, no order explains the above:",
                count(left_out.len(), "operation", "operations")
            )?;
            for op in left_out {
                let answer = op.answer.as_ref().map_or("answer lost".to_string(), |a| format!("later {a}"));
                let at = (op.invoked_ns as i64 - base as i64) / 1_000;
                writeln!(f, "      caller {}: {} [{at:+} ..] -> {answer}", op.caller, op.call)?;
            }
        }
        Ok(())
    }
}

/// `n` and the noun, singular or plural.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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

/// One caller: its plan's random stream, and the attempt it last saw per key.
struct Caller {
    id: u32,
    rng: TestRng,
    keys: usize,
    attempts: Vec<Attempt>,
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<AtomicU64>,
    /// Operations issued by all callers: the generation of keys.
    issued: Arc<AtomicU64>,
    generation: u64,
    started: Instant,
    op_timeout: Duration,
}

impl Caller {
    async fn run(mut self, count: usize) -> Vec<Operation> {
        let mut out = Vec::with_capacity(count);
        for n in 0..count {
            // A quarter of the steps move the shared clock on, so leases end.
            if self.pick(4) == 0 {
                let step_ms = 200 + self.pick(800) as u64;
                self.clock.fetch_add(step_ms, Ordering::SeqCst);
            }
            let generation = self.issued.fetch_add(1, Ordering::SeqCst) / GENERATION_OPS;
            if generation != self.generation {
                self.generation = generation;
                self.attempts.fill(Attempt(1));
            }
            let key = self.pick(self.keys);
            let call = self.call(key, n);
            let invoked = self.nanos();
            let answer = tokio::time::timeout(self.op_timeout, apply(&*self.store, &call)).await;
            let returned = self.nanos();
            let caller = self.id;
            let op = |returned_ns, answer| Operation {
                caller,
                call: call.clone(),
                invoked_ns: invoked,
                returned_ns,
                answer,
            };
            match answer {
                Ok(Ok(answer)) => {
                    self.learn(key, &answer);
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

    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next_u64() % n as u64) as usize
    }

    /// The attempt to act as: most often the one last seen for the key, at
    /// times one that does not hold it (a stale or confused caller).
    fn attempt(&mut self, key: usize) -> Attempt {
        match self.pick(4) {
            0 => Attempt(1 + self.pick(3) as u32),
            _ => self.attempts[key],
        }
    }

    fn learn(&mut self, key: usize, answer: &Answer) {
        let seen = match answer {
            Answer::Claim(Claim::Owned(a)) | Answer::Takeover(Takeover::Granted(a)) => Some(*a),
            Answer::Claim(Claim::Existing(r)) | Answer::Record(Some(r)) => Some(r.attempt()),
            Answer::Takeover(Takeover::Refused(Some(r))) => Some(r.attempt()),
            _ => None,
        };
        if let Some(a) = seen {
            self.attempts[key] = a;
        }
    }

    fn call(&mut self, key: usize, n: usize) -> Call {
        let scope = Scope::new(["alice", "bob"][key % 2], &format!("k{key}-g{}", self.generation));
        let now = SimTime(self.clock.load(Ordering::SeqCst));
        match self.pick(10) {
            0..=2 => {
                let body = format!("{{\"amount\":{}}}", 100 + self.pick(2));
                let fingerprint = Fingerprint::of("POST", "/orders", body.as_bytes());
                Call::Claim { scope, fingerprint, now, lease_ms: LEASE_MS }
            }
            3..=4 => Call::TakeOver { scope, expected: self.attempt(key), now, lease_ms: LEASE_MS },
            5 => {
                let point = RecoveryPoint {
                    downstream_key: DownstreamKey(format!("dk-{}-{n}", self.id).into()),
                    data: Bytes::text("{}"),
                };
                Call::WriteRecoveryPoint { scope, attempt: self.attempt(key), point }
            }
            6..=7 => {
                let id = MessageId(format!("m-{}-{n}", self.id).into());
                let message = OutboxMessage { id, topic: "t".into(), payload: Bytes::text("{}") };
                let outbox = if self.pick(2) == 0 { vec![message] } else { Vec::new() };
                let completion = Completion { response: StoredResponse::new(201, "{}"), local_effect: None, outbox };
                Call::Complete { scope, attempt: self.attempt(key), completion }
            }
            8 => Call::Release { scope, attempt: self.attempt(key) },
            _ => Call::Read { scope },
        }
    }
}

/// Runs `call` on `store`.
async fn apply(store: &dyn IdempotencyStore, call: &Call) -> Result<Answer, StoreError> {
    Ok(match call {
        Call::Claim { scope, fingerprint, now, lease_ms } => {
            Answer::Claim(store.claim(scope, fingerprint, *now, *lease_ms).await?)
        }
        Call::TakeOver { scope, expected, now, lease_ms } => {
            Answer::Takeover(store.take_over(scope, *expected, *now, *lease_ms).await?)
        }
        Call::WriteRecoveryPoint { scope, attempt, point } => {
            Answer::Write(store.write_recovery_point(scope, *attempt, point).await?)
        }
        Call::Complete { scope, attempt, completion } => {
            Answer::Write(store.complete(scope, *attempt, completion).await?)
        }
        Call::Release { scope, attempt } => Answer::Write(store.release(scope, *attempt).await?),
        Call::Read { scope } => Answer::Record(store.read(scope).await?),
    })
}
