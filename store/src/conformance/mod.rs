//! The conformance kit: property-based, model-based tests for any store.
//!
//! The kit draws random sequences of store operations over a few callers and
//! keys (with the clock advanced in between, so leases expire), runs each
//! sequence on a fresh store and on the reference model, and compares every
//! result. A failing sequence is shrunk to a minimal one and reported with
//! the seed that reproduces it. A store that errors, panics or hangs fails
//! with that said plainly.
//!
//! ```
//! use idemsim_store::{conformance::Conformance, MemStore};
//!
//! let verdict = Conformance::new()
//!     .cases(16)
//!     .check(|| async { Ok(MemStore::new()) })
//!     .unwrap_or_else(|failure| panic!("{failure}"));
//! assert!(verdict.stats.claims_owned > 0);
//! ```

mod concurrent;
mod op;
mod run;

pub use concurrent::{Concurrent, ConcurrentVerdict};
pub use op::Op;
pub use run::Stats;

use crate::{IdempotencyStore, StoreError};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use run::{run_case, show, Fault};
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::time::Duration;

/// Settings of a conformance run. Builder setters take and return `&mut Self`.
#[derive(Clone, Debug)]
pub struct Conformance {
    cases: u32,
    seed: u64,
    ops_max: usize,
    op_timeout: Duration,
    shrink_time: Duration,
}

impl Default for Conformance {
    fn default() -> Conformance {
        Conformance::new()
    }
}

impl Conformance {
    /// Defaults: 256 cases, seed 0 (or `IDEMSIM_CONFORMANCE_SEED`), up to 40
    /// operations a case, 10 s per operation before a store counts as hung,
    /// 60 s of shrinking at most.
    pub fn new() -> Conformance {
        let seed = std::env::var("IDEMSIM_CONFORMANCE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        Conformance {
            cases: 256,
            seed,
            ops_max: 40,
            op_timeout: Duration::from_secs(10),
            shrink_time: Duration::from_secs(60),
        }
    }

    /// How many random sequences to run.
    pub fn cases(&mut self, cases: u32) -> &mut Conformance {
        assert!(cases > 0, "at least one case");
        self.cases = cases;
        self
    }

    /// The seed: the same seed draws the same sequences.
    pub fn seed(&mut self, seed: u64) -> &mut Conformance {
        self.seed = seed;
        self
    }

    /// The longest sequence drawn.
    pub fn ops_max(&mut self, ops_max: usize) -> &mut Conformance {
        assert!(ops_max > 0, "at least one operation");
        self.ops_max = ops_max;
        self
    }

    /// How long one store operation may take before the store counts as hung.
    pub fn op_timeout(&mut self, limit: Duration) -> &mut Conformance {
        self.op_timeout = limit;
        self
    }

    /// How long shrinking a failure may take (a hanging store makes each
    /// shrinking step cost a whole `op_timeout`).
    pub fn shrink_time(&mut self, limit: Duration) -> &mut Conformance {
        self.shrink_time = limit;
        self
    }

    /// Checks a store. `fresh` must return an empty store each time it is
    /// called (a new in-memory database, a new schema, truncated tables); it
    /// runs inside a Tokio current-thread runtime, so async drivers work.
    pub fn check<S, F, Fut>(&self, fresh: F) -> Result<Verdict, Failure>
    where
        S: IdempotencyStore,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<S, StoreError>>,
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| self.setup_failure("?", StoreError::Unavailable(format!("cannot start a runtime: {e}"))))?;
        let name = rt.block_on(fresh()).map_err(|e| self.setup_failure("?", e))?.name().to_string();
        let mut runner = TestRunner::new(self.proptest_config());
        let stats = RefCell::new(Stats::default());
        let strategy = proptest::collection::vec(Op::strategy(), 1..=self.ops_max);
        let result = runner.run(&strategy, |ops| {
            let run = rt.block_on(async {
                let store = fresh().await.map_err(|e| TestCaseError::fail(format!("setup failed: {e}")))?;
                Ok::<_, TestCaseError>(run_case(&store, &ops, self.op_timeout).await)
            })?;
            match run.failure {
                None => {
                    stats.borrow_mut().add(&run.stats);
                    Ok(())
                }
                Some((step, what, fault)) => Err(TestCaseError::fail(describe(step, &what, &fault))),
            }
        });
        match result {
            Ok(()) => Ok(Verdict { store: name, cases: self.cases, seed: self.seed, stats: stats.into_inner() }),
            Err(TestError::Fail(reason, minimal)) => {
                let transcript = rt.block_on(async {
                    match fresh().await {
                        Ok(store) => run_case(&store, &minimal, self.op_timeout).await.transcript,
                        Err(e) => format!("(could not replay: {e})\n"),
                    }
                });
                Err(Failure { store: name, seed: self.seed, reason: reason.to_string(), minimal, transcript })
            }
            Err(TestError::Abort(reason)) => Err(Failure {
                store: name,
                seed: self.seed,
                reason: format!("the run was aborted: {reason}"),
                minimal: Vec::new(),
                transcript: String::new(),
            }),
        }
    }

    fn proptest_config(&self) -> Config {
        Config {
            cases: self.cases,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(self.seed),
            max_shrink_iters: 10_000,
            max_shrink_time: u32::try_from(self.shrink_time.as_millis()).unwrap_or(u32::MAX),
            ..Config::default()
        }
    }

    fn setup_failure(&self, store: &str, e: StoreError) -> Failure {
        Failure {
            store: store.to_string(),
            seed: self.seed,
            reason: format!("could not create a fresh store: {e}"),
            minimal: Vec::new(),
            transcript: String::new(),
        }
    }
}

fn describe(step: usize, what: &str, fault: &Fault) -> String {
    let head = format!("step {} ({what})", step + 1);
    match fault {
        Fault::Differs { expected, actual } => {
            format!("{head}: the model says {}, the store said {}", show(expected), show(actual))
        }
        Fault::Error(e) => format!("{head}: the store returned an error: {e}"),
        Fault::Panicked(msg) => format!("{head}: the store panicked: {msg}"),
        Fault::Hung(limit) => format!("{head}: the store did not answer within {} ms", limit.as_millis()),
    }
}

/// A passing run: how much it exercised.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The store's name.
    pub store: String,
    /// Cases run.
    pub cases: u32,
    /// The seed used.
    pub seed: u64,
    /// What the cases exercised, summed.
    pub stats: Stats,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "store `{}` conforms: {} cases, {} operations (seed {}); claims {} owned / {} existing, takeovers {} granted / {} refused, {} fenced writes, {} completions, {} sweeps deleting, {} stale scans finding, {} messages published, {} keys completed again after a sweep",
            self.store, self.cases, s.ops, self.seed, s.claims_owned, s.claims_existing, s.takeovers_granted,
            s.takeovers_refused, s.writes_fenced, s.completions, s.sweeps_deleting, s.stale_found, s.messages_published,
            s.recompleted_after_sweep
        )
    }
}

/// A failing run: the minimal sequence and what went wrong.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The store's name.
    pub store: String,
    /// The seed that reproduces the failure.
    pub seed: u64,
    /// What went wrong at the failing step.
    pub reason: String,
    /// The shrunk operation sequence (empty for a setup failure).
    pub minimal: Vec<Op>,
    /// The minimal sequence replayed, one line per step, with the model's
    /// answers.
    pub transcript: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "store `{}` does not conform: {}", self.store, self.reason)?;
        if !self.minimal.is_empty() {
            writeln!(f, "minimal sequence ({} operations; each line shows the model's answer):", self.minimal.len())?;
            f.write_str(&self.transcript)?;
        }
        write!(
            f,
            "reproduce with seed {} (Conformance::new().seed({}) or IDEMSIM_CONFORMANCE_SEED={})",
            self.seed, self.seed, self.seed
        )
    }
}

impl std::error::Error for Failure {}
