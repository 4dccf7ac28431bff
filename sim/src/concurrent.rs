//! The simulator's concurrent mode: many callers issue store operations at
//! once on an in-process store (the bundled mem or SQLite store, or one of
//! a user's), under madsim, with replies lost, commits left indeterminate
//! and callers crashing; the history is judged for linearizability against
//! the reference model. Unlike the kit's real-parallel mode, one seed fixes
//! everything (the callers' plans, the latencies, the scheduler's choices
//! and the faults): a seed replays its history exactly, and the history's
//! hash is the same whichever worker ran it.
//!
//! ```
//! use idemsim_sim::concurrent::ConcurrentSim;
//! use idemsim_sim::Subject;
//! use idemsim_store::MemStore;
//!
//! let open = Subject::store("mine", || Ok(MemStore::new()));
//! let one = ConcurrentSim::new().operations(200).run_seed(7, &open).unwrap();
//! let again = ConcurrentSim::new().operations(200).run_seed(7, &open).unwrap();
//! assert!(one.linearizable());
//! assert_eq!(one.hash, again.hash);
//! ```

use crate::rng::{child_seed, stream, Stream};
use crate::{RunError, Subject};
use idemsim_model::linearizability::{check, shrink, Operation, Verdict, Witness};
use idemsim_model::SimTime;
use idemsim_store::plan::{apply, Plan};
use idemsim_store::IdempotencyStore;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Settings of the simulated concurrent mode. Setters take and return
/// `&mut Self`.
#[derive(Clone, Debug)]
pub struct ConcurrentSim {
    callers: usize,
    operations: usize,
    keys: usize,
    lost_permille: u64,
    indeterminate_permille: u64,
    crash_permille: u64,
    states_max: usize,
}

impl Default for ConcurrentSim {
    fn default() -> ConcurrentSim {
        ConcurrentSim::new()
    }
}

/// Simulated time a run may take before it counts as a livelock.
const TIME_LIMIT: Duration = Duration::from_secs(3_600);

impl ConcurrentSim {
    /// Defaults: 8 callers, 400 operations in all over 4 keys at a time,
    /// 2% of replies lost, 2% of commits indeterminate (taking effect or
    /// not, as drawn), 1% of operations ending in the caller's crash; a
    /// search budget of a million states per key.
    pub fn new() -> ConcurrentSim {
        ConcurrentSim {
            callers: 8,
            operations: 400,
            keys: 4,
            lost_permille: 20,
            indeterminate_permille: 20,
            crash_permille: 10,
            states_max: 1_000_000,
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

    /// Per mille of replies lost, of commits indeterminate, and of
    /// operations ending in the caller's crash (each at most 1000).
    pub fn faults(&mut self, lost_permille: u64, indeterminate_permille: u64, crash_permille: u64) -> &mut Self {
        self.lost_permille = lost_permille.min(1000);
        self.indeterminate_permille = indeterminate_permille.min(1000);
        self.crash_permille = crash_permille.min(1000);
        self
    }

    /// Runs `seed` on a fresh OS thread (nothing thread-local leaks between
    /// seeds) on `subject`'s store, and judges the history.
    pub fn run_seed(&self, seed: u64, subject: &Subject) -> Result<SimulatedHistory, RunError> {
        let (sim, subject) = (self.clone(), subject.clone());
        let worker = std::thread::Builder::new()
            .name(format!("seed-{seed}"))
            .spawn(move || sim.run_here(seed, &subject))
            .map_err(|e| RunError::Thread(e.to_string()))?;
        worker.join().unwrap_or_else(|_| Err(RunError::Panicked(format!("seed {seed}: the simulation thread died"))))
    }

    /// Runs `seeds` on `jobs` worker threads (each seed on a thread of its
    /// own); the result depends on the seeds only.
    pub fn sweep(&self, seeds: Range<u64>, jobs: usize, subject: &Subject) -> ConcurrentSweep {
        self.sweep_until(seeds, jobs, subject, &|| false)
    }

    /// [`ConcurrentSim::sweep`], starting no new seed once `stop` says so
    /// (Ctrl-C): the seeds run are those below the first one not run.
    pub fn sweep_until(
        &self,
        seeds: Range<u64>,
        jobs: usize,
        subject: &Subject,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> ConcurrentSweep {
        let next = AtomicU64::new(seeds.start);
        let results = Mutex::new(BTreeMap::new());
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1) {
                scope.spawn(|| loop {
                    if stop() {
                        return;
                    }
                    let seed = next.fetch_add(1, Ordering::SeqCst);
                    if seed >= seeds.end {
                        return;
                    }
                    let result = self.run_seed(seed, subject);
                    results.lock().unwrap_or_else(|e| e.into_inner()).insert(seed, result);
                });
            }
        });
        ConcurrentSweep::of(results.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// One seed on the calling thread.
    fn run_here(&self, seed: u64, subject: &Subject) -> Result<SimulatedHistory, RunError> {
        let store = subject.open()?;
        let mut rt = madsim::runtime::Runtime::with_seed_and_config(
            child_seed(seed, Stream::Scheduler),
            madsim::Config::default(),
        );
        rt.set_time_limit(TIME_LIMIT);
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(self.callers_run(seed, store))));
        let history = run.map_err(|panic| {
            RunError::Store(format!(
                "seed {seed}: store '{}' panicked: {}",
                subject.store_name(),
                idemsim_store::panic_message(&*panic)
            ))
        })?;
        Ok(self.judge(seed, history))
    }

    /// The callers, each on a task of its own, and their joined histories
    /// in invocation order.
    async fn callers_run(&self, seed: u64, store: Arc<dyn IdempotencyStore>) -> Vec<Operation> {
        let mut draws = stream(seed, Stream::Callers);
        let started = madsim::time::Instant::now();
        let shared = Rc::new(Shared { clock_ms: Cell::new(0), issued: Cell::new(0), started });
        let per_caller = self.operations.div_ceil(self.callers);
        let mut tasks = Vec::with_capacity(self.callers);
        for caller in 0..self.callers {
            let mut rng = crate::rng::SimRng::seed_from_u64(draws.gen());
            let draw: Box<dyn FnMut() -> u64> = Box::new(move || rng.gen());
            let mut faults = crate::rng::SimRng::seed_from_u64(draws.gen());
            let caller = SimCaller {
                plan: Plan::new(caller as u32, draw, self.keys),
                faults: Box::new(move |n| faults.gen_range(0..n)),
                store: store.clone(),
                shared: shared.clone(),
                settings: self.clone(),
            };
            tasks.push(madsim::task::spawn_local(caller.run(per_caller)));
        }
        let mut history = Vec::new();
        for task in tasks {
            history.extend(task.await.unwrap_or_default());
        }
        history.sort_by_key(|o| (o.invoked_ns, o.caller));
        history
    }

    fn judge(&self, seed: u64, history: Vec<Operation>) -> SimulatedHistory {
        let verdict = check(&history, self.states_max);
        let witness = match &verdict {
            Verdict::NotLinearizable { scope, operations } => {
                Some(shrink(&history, scope, operations, self.states_max))
            }
            _ => None,
        };
        let hash = history_hash(&history);
        SimulatedHistory { seed, history, hash, verdict, witness }
    }
}

/// The clock and the count of operations issued, shared by a run's callers.
struct Shared {
    clock_ms: Cell<u64>,
    issued: Cell<u64>,
    started: madsim::time::Instant,
}

/// One simulated caller.
struct SimCaller {
    plan: Plan<Box<dyn FnMut() -> u64>>,
    /// Draws `0..n` for the caller's faults and latencies.
    faults: Box<dyn FnMut(u64) -> u64>,
    store: Arc<dyn IdempotencyStore>,
    shared: Rc<Shared>,
    settings: ConcurrentSim,
}

impl SimCaller {
    async fn run(mut self, count: usize) -> Vec<Operation> {
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let step_ms = self.plan.clock_step_ms();
            self.shared.clock_ms.set(self.shared.clock_ms.get() + step_ms);
            let issued = self.shared.issued.replace(self.shared.issued.get() + 1);
            let call = self.plan.next_call(SimTime(self.shared.clock_ms.get()), issued);
            let invoked_ns = self.now_ns();
            // The request's way to the store, and the reply's way back,
            // so operations overlap and reorder.
            self.latency().await;
            let indeterminate = self.chance(self.settings.indeterminate_permille);
            let skipped = indeterminate && (self.faults)(2) == 0;
            let answer = match skipped {
                true => None,
                false => apply(&*self.store, &call).await.ok(),
            };
            self.latency().await;
            let lost = indeterminate || self.chance(self.settings.lost_permille);
            let crashed = self.chance(self.settings.crash_permille);
            let returned = match (answer, lost || crashed) {
                (Some(answer), false) => {
                    self.plan.learn(&answer);
                    Some((self.now_ns(), answer))
                }
                (Some(_), true) | (None, _) => None,
            };
            if crashed {
                self.plan.forget();
            }
            let (returned_ns, answer) = returned.map_or((None, None), |(at, a)| (Some(at), Some(a)));
            out.push(Operation { caller: self.plan.caller(), call, invoked_ns, returned_ns, answer });
        }
        out
    }

    fn chance(&mut self, permille: u64) -> bool {
        (self.faults)(1000) < permille
    }

    /// Simulated nanoseconds since the run began.
    fn now_ns(&self) -> u64 {
        self.shared.started.elapsed().as_nanos() as u64
    }

    /// 0 to 4 whole milliseconds: callers wake at the same simulated
    /// instants, where the scheduler interleaves them at every await inside
    /// the store (a store's operation takes no simulated time of its own).
    async fn latency(&mut self) {
        let ms = (self.faults)(5);
        madsim::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// The history's hash: FNV-1a of its operations' text, in invocation order.
fn history_hash(history: &[Operation]) -> String {
    let text: String = history.iter().map(|op| format!("{op:?}\n")).collect();
    fnv(&text)
}

fn fnv(text: &str) -> String {
    let hash =
        text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("{hash:016x}")
}

/// One seed's history and its verdict.
#[derive(Clone, Debug)]
pub struct SimulatedHistory {
    /// The seed.
    pub seed: u64,
    /// The operations, in invocation order.
    pub history: Vec<Operation>,
    /// The history's hash (the same on every run of the seed).
    pub hash: String,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// For a history no order explains: a short witness.
    pub witness: Option<Witness>,
}

impl SimulatedHistory {
    /// True when some order consistent with real time explains every answer.
    pub fn linearizable(&self) -> bool {
        self.verdict == Verdict::Linearizable
    }

    /// The history drawn as a page (callers as lanes): for a history no
    /// order explains, the failing key's operations with the witness
    /// marked; otherwise every operation.
    pub fn html(&self) -> String {
        let title =
            format!("seed {}: {}", self.seed, if self.linearizable() { "linearizable" } else { "not linearizable" });
        let scope = match &self.verdict {
            Verdict::NotLinearizable { scope, .. } | Verdict::Unknown { scope } => Some(scope),
            Verdict::Linearizable => None,
        };
        crate::render::history_html::render(&title, &self.history, scope, self.witness.as_ref())
    }

    /// Operations whose answer was lost.
    pub fn lost(&self) -> usize {
        self.history.iter().filter(|o| o.answer.is_none()).count()
    }
}

impl std::fmt::Display for SimulatedHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head = format!(
            "seed {}: {} operations ({} answers lost), history {}",
            self.seed,
            self.history.len(),
            self.lost(),
            self.hash
        );
        match (&self.verdict, &self.witness) {
            (Verdict::Linearizable, _) => write!(f, "LINEARIZABLE: {head}"),
            (Verdict::Unknown { scope }, _) => write!(f, "UNKNOWN: {head}; the search on {scope} ran out of budget"),
            (Verdict::NotLinearizable { scope, operations }, witness) => {
                writeln!(
                    f,
                    "NOT LINEARIZABLE: {head}; no order of the {} operations on {scope} explains every answer.",
                    operations.len()
                )?;
                match witness {
                    Some(w) => write!(f, "{}", w.story(scope)),
                    None => Ok(()),
                }
            }
        }
    }
}

/// What a sweep of seeds found.
#[derive(Clone, Debug)]
pub struct ConcurrentSweep {
    /// Each seed's history hash, by seed.
    pub hashes: BTreeMap<u64, String>,
    /// The seeds no order explains, with their histories.
    pub failures: Vec<SimulatedHistory>,
    /// Seeds the search gave up on (its budget ran out).
    pub unknown: Vec<u64>,
    /// Seeds that could not run, and why.
    pub errors: Vec<(u64, RunError)>,
    /// Operations in all, and those whose answer was lost.
    pub operations: usize,
    /// Operations whose answer was lost.
    pub lost: usize,
}

impl ConcurrentSweep {
    fn of(results: BTreeMap<u64, Result<SimulatedHistory, RunError>>) -> ConcurrentSweep {
        let mut sweep = ConcurrentSweep {
            hashes: BTreeMap::new(),
            failures: Vec::new(),
            unknown: Vec::new(),
            errors: Vec::new(),
            operations: 0,
            lost: 0,
        };
        for (seed, result) in results {
            let run = match result {
                Ok(run) => run,
                Err(e) => {
                    sweep.errors.push((seed, e));
                    continue;
                }
            };
            sweep.hashes.insert(seed, run.hash.clone());
            sweep.operations += run.history.len();
            sweep.lost += run.lost();
            match run.verdict {
                Verdict::Linearizable => {}
                Verdict::Unknown { .. } => sweep.unknown.push(seed),
                Verdict::NotLinearizable { .. } => sweep.failures.push(run),
            }
        }
        sweep
    }

    /// One hash of every seed's history hash, in seed order.
    pub fn hash(&self) -> String {
        let text: String = self.hashes.iter().map(|(seed, h)| format!("{seed} {h}\n")).collect();
        fnv(&text)
    }
}
