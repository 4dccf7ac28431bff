//! One execution of a configuration under a [`Chooser`]: the executor
//! polls the protocol core's tasks, and at every step where more than one
//! thing can happen (which waiting task goes on, whether a fault happens
//! there) asks the chooser. The history it records is judged by the
//! simulator's checkers.

use super::config::{ExploreConfig, FaultKind};
use super::env::{ExploreClient, ExploreEnv, Shared};
use super::world::{TaskFuture, World};
use super::ExploreError;
use crate::protocol::{Protocol, ProtocolSettings};
use idemsim_model::history::{Origin, Phase};
use idemsim_model::{judge, Event, History, NodeId, OpId, RunMeta, SimTime, Violation};
use idemsim_store::IdempotencyStore;
use parking_lot::Mutex;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

/// One thing that can happen next: task `task` takes its step, normally
/// or with a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The task (numbered in the order they were created).
    pub task: usize,
    /// `None`: the step as it normally goes; else the fault injected there.
    pub fault: Option<FaultKind>,
}

/// Picks what happens at a choice point.
pub trait Chooser {
    /// An index into `choices` (two or more).
    fn choose(&mut self, choices: &[Choice]) -> Result<usize, ExploreError>;
}

/// One step of an execution, for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// True time.
    pub at: SimTime,
    /// Who took it.
    pub task: String,
    /// What it did.
    pub what: String,
    /// The fault injected there.
    pub fault: Option<FaultKind>,
    /// How many things could have happened instead (1: no choice).
    pub choices: usize,
}

/// What one execution did, and the verdict on its history.
#[derive(Clone, Debug)]
pub struct Execution {
    /// The recorded history, as the simulator records it.
    pub history: History,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// The option taken at each choice point: replays this execution.
    pub schedule: Vec<u32>,
    /// How many options each choice point had.
    pub arities: Vec<u32>,
    /// Every step.
    pub steps: Vec<Step>,
    /// Steps until the first violation's last event (where it broke).
    pub broke_at: Option<usize>,
    /// The step budget ran out: a livelock.
    pub livelock: bool,
}

impl Execution {
    /// Whether a property broke (or the execution livelocked).
    pub fn failed(&self) -> bool {
        self.livelock || !self.violations.is_empty()
    }
}

/// The protocol's settings and the settings the checkers judge by, both
/// following the subject's own lease (`timing::followed_lease_ms`) as the
/// simulator's do (`timing::follow`: the retry deadline at least 6 leases,
/// the retention windows grown as much; `run_meta`), with a client that
/// waits at least one lease for an answer, so the retry after a lost reply
/// or a paused holder comes when the record can be taken over. The
/// checkers get the servers' clock skew and no share of successes to
/// reach: progress is a property of long runs, and an explored execution
/// with a fault on purpose owes none.
fn followed(config: &ExploreConfig, protocol: &dyn Protocol) -> (ProtocolSettings, RunMeta) {
    let sim = crate::SimConfig { protocol: config.protocol.clone(), ..Default::default() };
    let lease_ms = crate::timing::followed_lease_ms(&sim, protocol);
    let mut sim = crate::timing::follow(&sim, lease_ms);
    sim.protocol.retry.timeout_ms = sim.protocol.retry.timeout_ms.max(lease_ms);
    let skews = (0..config.servers).map(|s| config.skew_of(s));
    let (lo, hi) = skews.fold((0i64, 0i64), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let meta = RunMeta { progress_min_percent: 0, clock_skew_max_ms: hi.abs_diff(lo), ..sim.run_meta(lease_ms) };
    (sim.protocol, meta)
}

/// Runs one execution of `config` with a fresh store and protocol.
pub fn execute(
    config: &ExploreConfig,
    store: Arc<dyn IdempotencyStore>,
    protocol: Arc<dyn Protocol>,
    chooser: &mut dyn Chooser,
) -> Result<Execution, ExploreError> {
    let (settings, meta) = followed(config, &*protocol);
    let world = World::new(config.clone(), History { meta, entries: Vec::new() });
    let shared = Arc::new(Shared { world: Mutex::new(world), store, protocol, settings });
    let mut run = Executor {
        shared,
        futures: Vec::new(),
        steps: Vec::new(),
        schedule: Vec::new(),
        arities: Vec::new(),
        heal_ends: None,
    };
    run.start();
    let livelock = run.drive(chooser)?;
    Ok(run.finish(livelock))
}

struct Executor {
    shared: Arc<Shared>,
    futures: Vec<Option<TaskFuture>>,
    steps: Vec<Step>,
    schedule: Vec<u32>,
    arities: Vec<u32>,
    /// When the run ends, once it heals.
    heal_ends: Option<SimTime>,
}

impl Executor {
    fn start(&mut self) {
        let mut w = self.shared.world.lock();
        w.record(NodeId::World, Event::Phase { phase: Phase::Faults });
        for (i, op) in w.config.operations.clone().into_iter().enumerate() {
            let (client, task) = (i as u32, w.tasks.len());
            let env = ExploreClient { shared: self.shared.clone(), task, client };
            let future = Box::pin(async move {
                if op.at_ms > 0 {
                    crate::protocol::ClientEnv::sleep_ms(&env, op.at_ms).await;
                }
                let protocol = env.shared.protocol.clone();
                crate::protocol::run_operation(&*protocol, &env, OpId(client), &op.request()).await;
            });
            w.spawn(format!("client-{client}"), future);
        }
    }

    /// Steps until nothing can happen (or the heal ends); `true` when the
    /// step budget ran out.
    fn drive(&mut self, chooser: &mut dyn Chooser) -> Result<bool, ExploreError> {
        loop {
            let heal_ends = self.heal_ends;
            self.poll_spawned()?;
            let (choices, at) = {
                let w = self.shared.world.lock();
                let ready = w.tasks.iter().enumerate().filter(|(_, t)| !t.done);
                let ready: Vec<(usize, SimTime)> =
                    ready.filter_map(|(i, t)| t.gate.as_ref().and_then(|g| w.ready_at(g)).map(|at| (i, at))).collect();
                let Some(at) = ready.iter().map(|(_, at)| *at).min() else {
                    drop(w);
                    match heal_ends {
                        None => self.heal_ends = Some(self.heal()),
                        Some(_) => return Ok(false),
                    }
                    continue;
                };
                if heal_ends.is_some_and(|end| at > end) {
                    return Ok(false);
                }
                let mut choices = Vec::new();
                // The heal is run, not explored: faults are off, and the
                // background jobs go in the order they were started.
                let due = ready.iter().filter(|(_, t)| *t == at).take(if w.healing { 1 } else { usize::MAX });
                for (task, _) in due {
                    let gate = w.tasks[*task].gate.as_ref().expect("a waiting task has a gate");
                    choices.extend(w.options(gate).into_iter().map(|fault| Choice { task: *task, fault }));
                }
                (choices, at)
            };
            let pick = match choices.len() {
                1 => 0,
                n => {
                    let pick = chooser.choose(&choices)?;
                    assert!(pick < n, "a chooser picks one of the choices");
                    self.schedule.push(pick as u32);
                    self.arities.push(n as u32);
                    pick
                }
            };
            if self.steps.len() >= self.shared.world.lock().config.steps_max as usize {
                return Ok(true);
            }
            self.grant(choices[pick], at, choices.len())?;
        }
    }

    /// Lets `choice`'s task take its step at `at`, and runs it to its next gate.
    fn grant(&mut self, choice: Choice, at: SimTime, choices: usize) -> Result<(), ExploreError> {
        {
            let mut w = self.shared.world.lock();
            w.step += 1;
            w.now = w.now.max(at);
            if choice.fault.is_some() {
                w.faults_left -= 1;
            }
            let now = w.now;
            let task = &mut w.tasks[choice.task];
            let gate = task.gate.take().expect("a granted task waits");
            task.granted = Some(choice.fault);
            let step =
                Step { at: now, task: task.name.clone(), what: gate.kind.describe(), fault: choice.fault, choices };
            self.steps.push(step);
        }
        self.poll(choice.task)
    }

    /// Polls the futures spawned since the last step up to their first gate.
    fn poll_spawned(&mut self) -> Result<(), ExploreError> {
        loop {
            let spawned = std::mem::take(&mut self.shared.world.lock().spawned);
            if spawned.is_empty() {
                return Ok(());
            }
            for (id, future) in spawned {
                if self.futures.len() <= id {
                    self.futures.resize_with(id + 1, || None);
                }
                self.futures[id] = Some(future);
                self.poll(id)?;
            }
        }
    }

    fn poll(&mut self, id: usize) -> Result<(), ExploreError> {
        let Some(future) = self.futures[id].as_mut() else { return Ok(()) };
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)));
        let schedule = self.schedule.clone();
        let mut w = self.shared.world.lock();
        let name = w.tasks[id].name.clone();
        let finished = match polled {
            Err(panic) => {
                let message = idemsim_store::panic_message(&*panic);
                return Err(ExploreError::Panicked { task: name, message, schedule });
            }
            Ok(Poll::Ready(())) => {
                w.tasks[id].done = true;
                true
            }
            Ok(Poll::Pending) if w.tasks[id].gate.is_none() => {
                let why = "it waited on something the explorer does not drive (every wait must be an Env call)";
                return Err(ExploreError::Undriven { task: name, why: why.into(), schedule });
            }
            Ok(Poll::Pending) => false,
        };
        drop(w);
        if finished {
            self.futures[id] = None;
        }
        let error = self.shared.world.lock().error.take();
        match error {
            Some(why) => Err(ExploreError::Undriven { task: name, why, schedule }),
            None => Ok(()),
        }
    }

    /// Faults off; the reconciler and the outbox relay finish what is
    /// pending. Returns when the run ends.
    fn heal(&mut self) -> SimTime {
        let mut w = self.shared.world.lock();
        w.healing = true;
        w.record(NodeId::World, Event::Phase { phase: Phase::Heal });
        let lease_ms = w.history.meta.lease_ms;
        let p = &self.shared.settings;
        let settle_ms = (2 * lease_ms).saturating_add(p.reconcile_bound_ms).saturating_add(p.reconcile_idle_max_ms);
        let end = w.now.plus_ms(settle_ms);
        for (node, origin) in [(NodeId::Reconciler, Origin::Reconciler), (NodeId::Relay, Origin::Relay)] {
            let task = w.tasks.len();
            let env = ExploreEnv { shared: self.shared.clone(), task, node, origin, skew_ms: 0 };
            let future: TaskFuture = match node {
                NodeId::Reconciler => Box::pin(async move {
                    let protocol = env.shared.protocol.clone();
                    crate::protocol::reconciler(&*protocol, &env).await;
                }),
                _ => Box::pin(async move {
                    loop {
                        crate::protocol::Env::sleep_ms(&env, env.shared.settings.relay_interval_ms).await;
                        crate::protocol::relay_pass(&env).await;
                    }
                }),
            };
            w.spawn(node.to_string(), future);
        }
        end
    }

    fn finish(self, livelock: bool) -> Execution {
        let Executor { shared, futures, steps, schedule, arities, heal_ends } = self;
        drop(futures);
        let mut w = shared.world.lock();
        w.spawned.clear();
        let end = w.now.max(heal_ends.unwrap_or(SimTime::ZERO));
        w.now = end;
        w.record(NodeId::World, Event::Phase { phase: Phase::End });
        let history = std::mem::take(&mut w.history);
        let (violations, _) = judge(&history);
        let broke_at = violations.iter().filter_map(|v| v.events.last().map(|&i| w.entry_steps[i] as usize)).min();
        Execution { history, violations, schedule, arities, steps, broke_at, livelock }
    }
}
