//! One seed, one run: build the world from the seed's streams, run the
//! fault phase and the heal phase on madsim, then judge the history.

use crate::config::{ConfigError, Durability, FaultSettings, SimConfig};
use crate::faults::plan::{FaultAction, TimedFault};
use crate::faults::swarm::FaultProfile;
use crate::faults::verbs as faults;
use crate::nodes::{background, client, db, disk, downstream, server};
use crate::render::trace;
use crate::rng::{child_seed, stream, Stream};
use crate::runtime::node::Node;
use crate::runtime::world::{Action, Sim, World};
use crate::workload::Operation;
use futures::channel::oneshot;
use futures::future::{select, Either};
use idemsim_model::history::Phase;
use idemsim_model::{judge_with, Coverage, Event, History, NodeId, Violation};
use idemsim_store::IdempotencyStore;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

pub use crate::subject::{ProtocolFactory, StoreFactory, StoreKind, Subject};

/// Why a run could not be judged normally.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The step budget ran out: a livelock or runaway retries.
    #[error("livelock: {0}")]
    Livelock(String),
    /// The simulation itself panicked (a bug in idemsim or in a store).
    #[error("the simulation panicked: {0}")]
    Panicked(String),
    /// The store under test could not be opened, or broke during the run
    /// (it panicked, returned an error, or never answered).
    #[error("{0}")]
    Store(String),
    /// The operating system would not start a thread for the run.
    #[error("cannot start a simulation thread: {0}")]
    Thread(String),
}

/// Everything one seed produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// The fault profile it ran under.
    pub profile: FaultProfile,
    /// The timed faults it drew.
    pub plan: Vec<TimedFault>,
    /// What happened.
    pub history: History,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// Which interesting interleavings happened.
    pub coverage: Coverage,
    /// Why the run was cut short, if it was.
    pub error: Option<RunError>,
    /// Faults the config asked for that could not be applied to this store
    /// (for example lost unsynced writes, to a store that does not opt in
    /// to `CrashDurability`), each with the reason.
    pub not_applied: Vec<String>,
    /// Messages the simulated network carried, duplicates included (the
    /// traffic `idemsim bench` gives bare madsim for its floor).
    pub messages: u64,
}

impl RunOutcome {
    /// True when a property was violated or the run failed.
    pub fn failed(&self) -> bool {
        self.error.is_some() || !self.violations.is_empty()
    }

    /// The trace hash of the history.
    pub fn hash(&self) -> String {
        trace::trace_hash(&self.history)
    }
}

/// Runs one seed on a fresh OS thread (so nothing thread-local leaks
/// between seeds), and judges it; if the system will not start one, on
/// the calling thread, as [`run_seed_here`] (the outcome is the same). `subject` is a [`StoreKind`] or a
/// [`Subject`] (a store of one's own, and optionally a protocol).
pub fn run_seed(config: &SimConfig, subject: impl Into<Subject>, seed: u64) -> Result<RunOutcome, ConfigError> {
    config.validate()?;
    let (config, subject) = (Arc::new(config.clone()), subject.into());
    let on_thread = (config.clone(), subject.clone());
    let worker = std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(move || run_here(on_thread.0, &on_thread.1, seed));
    match worker {
        Ok(worker) => Ok(worker.join().unwrap_or_else(|panic| panicked(seed, &*panic))),
        Err(_) => run_seed_here(&config, subject, seed),
    }
}

/// Runs one seed on the calling thread and judges it: [`run_seed`] without
/// a thread per seed, for a worker that runs many seeds in turn. The
/// outcome is the same (a test compares trace hashes). A panic is caught
/// and reported as [`RunError::Panicked`]; after one, the thread should
/// run no more seeds, since the runtime's thread-local state may be left
/// behind.
pub fn run_seed_here(config: &SimConfig, subject: impl Into<Subject>, seed: u64) -> Result<RunOutcome, ConfigError> {
    config.validate()?;
    let (config, subject) = (Arc::new(config.clone()), subject.into());
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| run_here(config, &subject, seed)));
    Ok(ran.unwrap_or_else(|panic| panicked(seed, &*panic)))
}

fn panicked(seed: u64, panic: &(dyn std::any::Any + Send)) -> RunOutcome {
    RunOutcome {
        seed,
        profile: FaultProfile::calm(),
        plan: Vec::new(),
        history: History::default(),
        violations: Vec::new(),
        coverage: Coverage::default(),
        error: Some(RunError::Panicked(idemsim_store::panic_message(panic))),
        not_applied: Vec::new(),
        messages: 0,
    }
}

/// What a seed draws before the run starts: its fault profile, its timed
/// faults and its operations, under the timing that follows `subject`'s
/// lease (see [`followed`]). An explicit schedule or operation list in the
/// config is returned as it is (sorted by time), so `draws` of a shrunk
/// scenario is exactly what it runs.
pub fn draws(config: &SimConfig, subject: &Subject, seed: u64) -> (FaultProfile, Vec<TimedFault>, Vec<Operation>) {
    let lease_ms = crate::timing::followed_lease_ms(config, &*subject.protocol_for(config));
    draws_at(&crate::timing::follow(config, lease_ms), lease_ms, seed)
}

/// `config` with the durations it derives from the lease following the
/// lease `subject`'s protocol asks for (the table in `timing`): what a run
/// of `subject` actually runs.
pub fn followed(config: &SimConfig, subject: &Subject) -> SimConfig {
    crate::timing::follow(config, crate::timing::followed_lease_ms(config, &*subject.protocol_for(config)))
}

fn draws_at(config: &SimConfig, lease_ms: u64, seed: u64) -> (FaultProfile, Vec<TimedFault>, Vec<Operation>) {
    let (profile, mut plan) = match &config.faults {
        FaultSettings::Scheduled { profile, faults } => (profile.clone(), faults.clone()),
        settings => {
            let profile = match settings {
                FaultSettings::Swarm => FaultProfile::draw(&mut stream(seed, Stream::Swarm), lease_ms),
                FaultSettings::Pinned(p) => p.clone(),
                _ => FaultProfile::calm(),
            };
            let plan = crate::faults::plan::draw(config, &profile, &mut stream(seed, Stream::Plan));
            (profile, plan)
        }
    };
    plan.sort_by_key(|f| f.at_ms);
    let ops = match &config.workload.operations {
        Some(ops) => {
            let mut ops = ops.clone();
            ops.sort_by_key(|o| (o.start_ms, o.op));
            ops
        }
        None => crate::workload::draw(config, &mut stream(seed, Stream::Workload)),
    };
    (profile, plan, ops)
}

fn run_here(config: Arc<SimConfig>, subject: &Subject, seed: u64) -> RunOutcome {
    // One protocol instance for this run, and the timing that follows its lease.
    let protocol = subject.protocol_for(&config);
    let lease_ms = crate::timing::followed_lease_ms(&config, &*protocol);
    let config = Arc::new(crate::timing::follow(&config, lease_ms));
    let (profile, plan, ops) = draws_at(&config, lease_ms, seed);
    let mut outcome = RunOutcome {
        seed,
        profile: profile.clone(),
        plan: plan.clone(),
        history: History::new(config.run_meta(lease_ms)),
        violations: Vec::new(),
        coverage: Coverage::default(),
        error: None,
        not_applied: Vec::new(),
        messages: 0,
    };
    let store = match subject.open() {
        Ok(store) => store,
        Err(why) => {
            outcome.error = Some(why);
            return outcome;
        }
    };
    let skew_ms = clock_skew_bound_ms(&config, &profile, &plan);
    let history = history_for(&config, lease_ms, ops.len());
    let (world, abort_rx) = World::new(config.clone(), seed, &ops, history, store, protocol, profile);
    if matches!(config.durability, Durability::WriteBack { .. }) && world.write_back.is_none() {
        outcome.not_applied.push(format!(
            "lost unsynced writes: store '{}' does not opt in to CrashDurability (IdempotencyStore::durability)",
            subject.store_name()
        ));
    }
    let sim = Sim::new(world);
    let rt =
        madsim::runtime::Runtime::with_seed_and_config(child_seed(seed, Stream::Scheduler), madsim::Config::default());
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(controller(sim.clone(), plan, ops, abort_rx))));
    crate::runtime::world::forget_clock();
    drop(rt);
    let (history, aborted) = sim.with(|w| {
        let unanswered = w.store_queue.unanswered();
        if unanswered > 0 && !w.ending.failed() {
            let why = format!(
                "store '{}' left {} operation(s) unanswered when the run ended (it hangs)",
                w.store.name(),
                unanswered
            );
            w.store_broke(why);
        }
        // The world holds madsim node handles, and madsim's node table holds
        // init closures that hold the world: break the cycle, or every run
        // leaks its runtime and world.
        w.tear_down();
        w.draws.finish();
        outcome.messages = w.messages;
        (std::mem::take(&mut w.history), w.ending.take_failure())
    });
    let mut fingerprints = sim.with(|w| std::mem::take(&mut w.servers.fingerprints));
    outcome.history = history;
    outcome.history.meta.clock_skew_max_ms = skew_ms;
    if let Err(panic) = ran {
        outcome.error = panicked(seed, &*panic).error;
        return outcome;
    }
    if let Some(error) = aborted {
        outcome.error = Some(error);
        return outcome;
    }
    (outcome.violations, outcome.coverage) = judge_with(&outcome.history, &mut fingerprints);
    crate::worker_memo::put(fingerprints);
    outcome
}

/// The most two nodes' clocks can disagree in a run: each clock's offset
/// and drift are bounded by the profile (or by the scheduled skews), in
/// either direction.
fn clock_skew_bound_ms(config: &SimConfig, profile: &FaultProfile, plan: &[TimedFault]) -> u64 {
    let (mut offset_ms, mut drift_ppm) = (profile.skew_ms_max, u64::from(profile.drift_ppm_max));
    for fault in plan {
        if let FaultAction::Skew { offset_ms: o, drift_ppm: d, .. } = fault.action {
            offset_ms = offset_ms.max(o.unsigned_abs());
            drift_ppm = drift_ppm.max(u64::from(d.unsigned_abs()));
        }
    }
    let run_ms = config.phases.fault_ms.saturating_add(config.phases.heal_ms);
    let drift_ms = (u128::from(run_ms) * u128::from(drift_ppm) / 1_000_000) as u64;
    2 * offset_ms.saturating_add(drift_ms)
}

/// An empty history with room for a typical run of `ops` operations (a
/// default run records about 18 events each), so recording does not keep
/// regrowing it.
fn history_for(config: &SimConfig, lease_ms: u64, ops: usize) -> History {
    let mut history = History::new(config.run_meta(lease_ms));
    // Room for a busy seed (a default one records about 18 events an
    // operation): growing copies every event recorded so far.
    history.entries.reserve(64 + 32 * ops);
    history
}

async fn controller(sim: Sim, plan: Vec<TimedFault>, ops: Vec<Operation>, mut abort: oneshot::Receiver<String>) {
    crate::runtime::world::keep_clock();
    sim.with(|w| w.clock = Some(crate::runtime::world::RunClock::current()));
    madsim::task::spawn_local(faults::agenda(sim.clone()));
    spawn_nodes(&sim, ops);
    let (fault_ms, heal_ms) = sim.with(|w| {
        for f in plan {
            match f.action.at_site() {
                true => w.faults.wait_for_site(f),
                false => w.schedule_at(f.at_ms, Action::Fault(f.action)),
            }
        }
        w.record(NodeId::World, Event::Phase { phase: Phase::Faults });
        (w.config.phases.fault_ms, w.config.phases.heal_ms)
    });
    if !aborted_during(fault_ms, &mut abort).await {
        sim.heal();
        if !aborted_during(heal_ms, &mut abort).await {
            sim.record(NodeId::World, Event::Phase { phase: Phase::End });
        }
    }
    shut_down(&sim).await;
}

/// Stops every task of the run while the executor still runs, so their
/// futures (which hold the world) are dropped: madsim does not cancel
/// pending tasks when a runtime is dropped, and a task waiting on a timer
/// or a channel would keep the whole world alive.
async fn shut_down(sim: &Sim) {
    let nodes = sim.with(|w| {
        w.ending.stop();
        w.wakeups.wake_now();
        w.nodes.iter_mut().filter_map(|(_, n)| n.madsim.as_ref().map(|h| h.id())).collect::<Vec<_>>()
    });
    let handle = madsim::runtime::Handle::current();
    for id in nodes {
        handle.kill(id);
    }
    madsim::time::sleep(Duration::from_millis(1)).await;
}

/// Waits `ms`; true if the step budget ran out meanwhile.
async fn aborted_during(ms: u64, abort: &mut oneshot::Receiver<String>) -> bool {
    let sleep = Box::pin(madsim::time::sleep(Duration::from_millis(ms)));
    matches!(select(sleep, abort).await, Either::Right((Ok(_), _)))
}

/// The part a node plays.
#[derive(Clone)]
enum Role {
    Server,
    Db,
    Dependency,
    Consumer,
    Reconciler,
    Sweeper,
    Relay,
    /// Shared: a node's init runs again on every restart, and cloning the
    /// role must not clone its operations.
    Client(Arc<[Operation]>),
}

fn spawn_nodes(sim: &Sim, ops: Vec<Operation>) {
    let (servers, clients) = sim.with(|w| (w.config.topology.servers, w.config.topology.clients));
    let mut roles: Vec<(NodeId, Role)> = (0..servers).map(|s| (NodeId::Server(s), Role::Server)).collect();
    roles.extend([
        (NodeId::Db, Role::Db),
        (NodeId::Downstream, Role::Dependency),
        (NodeId::Consumer, Role::Consumer),
        (NodeId::Reconciler, Role::Reconciler),
        (NodeId::Sweeper, Role::Sweeper),
        (NodeId::Relay, Role::Relay),
    ]);
    // Each client's operations, in their order (one an unknown client
    // would send is sent by none).
    let mut mine: Vec<Vec<Operation>> = (0..clients).map(|_| Vec::new()).collect();
    for op in ops {
        if let Some(list) = mine.get_mut(op.client as usize) {
            list.push(op);
        }
    }
    for (c, ops) in (0..clients).zip(mine) {
        roles.push((NodeId::Client(c), Role::Client(ops.into())));
    }
    let handle = madsim::runtime::Handle::current();
    for (id, role) in roles {
        let s = sim.clone();
        let node = handle
            .create_node()
            .name(id.to_string())
            .init(move || {
                let (sim, role) = (s.clone(), role.clone());
                // Boxed: madsim moves a node's init future several times
                // on its way into a task, and `play` is as large as the
                // largest role's.
                Box::pin(play(sim, id, role))
            })
            .build();
        sim.with(|w| w.node(id).madsim = Some(node));
    }
}

fn ignore(_: &Node, _: Box<crate::runtime::msg::Msg>) {}

/// Every scope the workload's requests use, sorted, each once.
async fn play(sim: Sim, id: NodeId, role: Role) {
    let (handle, at_once): (crate::runtime::node::Handler, bool) = match role {
        Role::Server => (server::handle, false),
        Role::Db => (db::handle, true),
        Role::Dependency => (downstream::handle_dependency, true),
        Role::Consumer => (downstream::handle_consumer, true),
        Role::Relay => (background::handle_relay, true),
        _ => (ignore, true),
    };
    let node = Node::start(sim, id, crate::runtime::node::Handling { handle, at_once });
    match role {
        Role::Db => {
            // The second service runs beside the database, on its machine.
            futures::future::join(disk::syncer(node.clone()), background::meddler(node)).await;
        }
        Role::Reconciler => background::reconciler(node).await,
        Role::Sweeper => background::sweeper(node).await,
        Role::Relay => background::relay(node).await,
        Role::Client(ops) => client::drive(&node, ops),
        Role::Server | Role::Dependency | Role::Consumer => {}
    }
    // The init task must not finish: madsim stops a node whose init returns.
    std::future::pending::<()>().await
}
