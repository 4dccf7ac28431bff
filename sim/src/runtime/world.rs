//! The shared state of one simulated run: its history, clock, node table
//! and agenda, and the parts that keep their own invariants (draws, waits,
//! ending, faults, and the clients', servers', database's and downstream
//! nodes' tables), all made by [`World::new`].
//!
//! Every node task reaches it through a [`Sim`] handle; the lock is never
//! held across an `await`, so each access is one atomic step of the run.

use crate::config::SimConfig;
use crate::faults::plan::FaultAction;
use crate::faults::swarm::FaultProfile;
use crate::runtime::msg::Msg;
use futures::channel::{mpsc, oneshot};
use idemsim_model::history::{Fault, Phase};
use idemsim_model::retry::TokenBucket;
use idemsim_model::{Event, History, NodeId, Scope, SimTime};
use idemsim_store::IdempotencyStore;
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

/// A hash map with a fixed hasher, for the world's tables that are only
/// looked up by key, never iterated: no hash order can reach a run.
pub(crate) type Lookup<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// A timed action run by the agenda task on the world node.
#[derive(Debug)]
pub(crate) enum Action {
    /// Hand a message to its receiver's mailbox. Boxed: agenda entries
    /// are moved by B-tree inserts and removals, and a message is large.
    Deliver { from: NodeId, to: NodeId, msg: Box<Msg> },
    /// Apply a planned fault.
    Fault(FaultAction),
    /// Bring a crashed node back.
    Restart(NodeId),
    /// Unfreeze a paused node.
    Resume(NodeId),
    /// Send a message now (an answer that was held back).
    Send { from: NodeId, to: NodeId, msg: Box<Msg> },
    /// Undo a partition of one node.
    Reconnect { node: NodeId, outgoing: bool, incoming: bool },
}

/// What the world knows about one node.
#[derive(Default)]
pub(crate) struct NodeState {
    pub madsim: Option<madsim::runtime::NodeHandle>,
    pub up: bool,
    pub paused: bool,
    pub mailbox: Option<crate::runtime::mailbox::Sender<Box<Msg>>>,
    /// The node's handler, when it may run at delivery
    /// ([`crate::runtime::node::Handling::at_once`]).
    pub at_once: Option<crate::runtime::node::Handler>,
    pub cut_out: bool,
    pub cut_in: bool,
    pub offset_ms: i64,
    pub drift_ppm: i32,
}

/// The mutable state of a run.
pub(crate) struct World {
    pub config: Arc<SimConfig>,
    /// The fault profile, the fault phase, and the faults waiting for a site.
    pub faults: crate::faults::in_run::RunFaults,
    pub history: History,
    pub store: Arc<dyn IdempotencyStore>,
    /// The run's keyed draws, one stream per subsystem.
    pub draws: crate::runtime::draws::Draws,
    /// The records the second service probes: every scope the workload
    /// uses, in order.
    pub probe_scopes: Vec<idemsim_model::Scope>,
    /// Messages scheduled for delivery, duplicates included.
    pub messages: u64,
    pub nodes: crate::runtime::node_table::NodeTable,
    pub agenda: crate::runtime::agenda::Agenda,
    /// What wakes the agenda task.
    pub wakeups: crate::runtime::wakeups::Wakeups,
    /// Whether the run goes on: its step budget, its first failure, and
    /// whether it is stopping.
    pub ending: crate::runtime::ending::Ending,
    /// The protocol servers, clients and jobs run.
    pub protocol: Arc<dyn crate::protocol::Protocol>,
    /// The provider's books and the messages the consumer applied.
    pub downstream: crate::nodes::downstream::Downstream,
    /// Which client sends each operation, and each one's retry budget.
    pub clients: crate::nodes::client::Clients,
    /// The copies of each request received, key locks, fingerprints.
    pub servers: crate::nodes::server::Servers,
    /// Callers waiting for replies and clients waiting for responses.
    pub waits: crate::runtime::waits::Waits,
    /// Store operations the database node has not answered yet.
    pub store_queue: crate::nodes::db::StoreQueue,
    /// The write-back cache, when durability is write-back and the store
    /// opted in to it.
    pub write_back: Option<crate::nodes::disk::WriteBack>,
    /// Wakes the relay's current incarnation when a notification arrives.
    pub relay_wake: Option<mpsc::UnboundedSender<()>>,
    /// The run's clock, once it runs: read here, the world's own steps
    /// skip the thread-local look-up of [`true_now`], and the agenda's
    /// wake-up timers are armed on it.
    pub clock: Option<RunClock>,
}

/// A cheap, cloneable handle on the world.
#[derive(Clone)]
pub(crate) struct Sim(Arc<Mutex<World>>);

pub(crate) use crate::runtime::run_clock::{forget_clock, keep_clock, sleep_ms_from_now, true_now, RunClock};

impl Sim {
    pub fn new(world: World) -> Sim {
        Sim(Arc::new(Mutex::new(world)))
    }

    pub fn lock(&self) -> MutexGuard<'_, World> {
        self.0.lock()
    }

    /// Runs `f` on the world as one atomic step.
    pub fn with<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        f(&mut self.lock())
    }

    /// [`Sim::with`], unless the world is locked already (by this thread:
    /// a run is one thread), when it does nothing.
    pub fn try_with<R>(&self, f: impl FnOnce(&mut World) -> R) -> Option<R> {
        self.0.try_lock().map(|mut w| f(&mut w))
    }

    /// Appends an event at the current true time. Inlined into its callers
    /// (the environments' `record`): as a call of its own, the event was
    /// copied twice more on its way.
    #[inline(always)]
    pub fn record(&self, node: NodeId, event: Event) {
        // Not through `with`, nor through `World::record`: an event is
        // large, and each move into another binding was one more copy.
        let event = std::mem::ManuallyDrop::new(event);
        // SAFETY: `event` is not used or dropped after this.
        unsafe { self.lock().record_moved(node, &event) }
    }

    /// The clock of `node`: true time plus its offset and drift.
    pub fn node_now(&self, node: NodeId) -> SimTime {
        self.with(|w| w.node_time(node, w.now()))
    }
}

impl World {
    /// The world of a run of `ops` under `config` and `profile`, with the
    /// seed's draws, recording into `history`, and the receiver its
    /// controller hears a failure on. The write-back cache is there when
    /// durability is write-back and the store opts in to it.
    pub fn new(
        config: Arc<SimConfig>,
        seed: u64,
        ops: &[crate::workload::Operation],
        history: History,
        store: Arc<dyn IdempotencyStore>,
        protocol: Arc<dyn crate::protocol::Protocol>,
        profile: FaultProfile,
    ) -> (World, oneshot::Receiver<String>) {
        let (abort, aborted) = oneshot::channel();
        let write_back =
            matches!(config.durability, crate::config::Durability::WriteBack { .. }) && store.durability().is_some();
        let mut probe_scopes: Vec<Scope> = ops.iter().filter_map(|o| o.request.scope()).collect();
        probe_scopes.sort_unstable();
        probe_scopes.dedup();
        let world = World {
            ending: crate::runtime::ending::Ending::new(config.budgets.steps_for(ops.len() as u64), abort),
            config,
            faults: crate::faults::in_run::RunFaults::new(profile),
            history,
            store,
            draws: crate::runtime::draws::Draws::new(seed),
            probe_scopes,
            messages: 0,
            nodes: Default::default(),
            agenda: Default::default(),
            wakeups: Default::default(),
            protocol,
            downstream: Default::default(),
            clients: crate::nodes::client::Clients::new(ops),
            // Room for a run's deliveries: growing step by step costs more
            // than the run's look-ups.
            servers: crate::nodes::server::Servers::new(ops.len() * 4, crate::worker_memo::take()),
            waits: Default::default(),
            store_queue: Default::default(),
            write_back: write_back.then(Default::default),
            relay_wake: None,
            clock: None,
        };
        (world, aborted)
    }

    /// Appends an event at the current true time. Inlined into its callers
    /// (the event then goes straight from where it was made into the
    /// history), with the debug log out of line.
    #[inline(always)]
    pub fn record(&mut self, node: NodeId, event: Event) {
        let event = std::mem::ManuallyDrop::new(event);
        // SAFETY: `event` is not used or dropped after this.
        unsafe { self.record_moved(node, &event) }
    }

    /// [`World::record`] of an event the history takes over: copied once,
    /// straight into the history's free slot (`History::push`, spelled
    /// out: through a call, or an `Entry` built first, a large event was
    /// copied again at each step).
    ///
    /// # Safety
    /// The caller must treat `event` as moved: never use or drop it after.
    #[inline(always)]
    unsafe fn record_moved(&mut self, node: NodeId, event: &Event) {
        self.step();
        let at = self.now();
        self.history.assert_next_at(at);
        let entries = &mut self.history.entries;
        entries.reserve(1);
        let slot = entries.spare_capacity_mut()[0].as_mut_ptr();
        // SAFETY: `reserve(1)` made room for one more entry and `slot`
        // points at it; every field is written before the length covers
        // it; the event is read once, and its owner gives it up (above).
        unsafe {
            std::ptr::addr_of_mut!((*slot).at).write(at);
            std::ptr::addr_of_mut!((*slot).node).write(node);
            std::ptr::copy_nonoverlapping(event, std::ptr::addr_of_mut!((*slot).event), 1);
            entries.set_len(entries.len() + 1);
        }
        if tracing::level_enabled!(tracing::Level::DEBUG) {
            self.log_last();
        }
    }

    /// Logs the last event recorded (`RUST_LOG=idemsim=debug`).
    #[inline(never)]
    fn log_last(&self) {
        if let Some(entry) = self.history.entries.last() {
            let (node, at) = (entry.node, entry.at);
            tracing::debug!(target: "idemsim", %node, at = %at, "{}", crate::render::timeline::describe(&entry.event));
        }
    }

    /// Counts one step against the budget.
    #[inline]
    pub fn step(&mut self) {
        self.ending.step();
    }

    /// The store under test broke (it panicked, returned an error or never
    /// answered): the run stops and fails with `why`.
    pub fn store_broke(&mut self, why: String) {
        self.ending.fail(crate::RunError::Store(why));
    }

    /// A client's retry budget.
    pub fn bucket(&mut self, client: u32) -> &mut TokenBucket {
        self.clients.bucket(client, &self.config.protocol.retry.budget)
    }

    pub fn node_time(&self, node: NodeId, now: SimTime) -> SimTime {
        let Some(state) = self.nodes.get(&node) else { return now };
        // Most clocks do not drift: no 128-bit division for them.
        let drift = match state.drift_ppm {
            0 => 0,
            ppm => (now.0 as i128 * i128::from(ppm)) / 1_000_000,
        };
        let local = now.0 as i128 + i128::from(state.offset_ms) + drift;
        SimTime(local.clamp(0, i128::from(u64::MAX)) as u64)
    }

    pub fn schedule_at(&mut self, at_ms: u64, action: Action) {
        self.schedule_at_from(self.now().0, at_ms, action);
    }

    /// [`World::schedule_at`], for a caller that has read the clock.
    pub fn schedule_at_from(&mut self, now_ms: u64, at_ms: u64, action: Action) {
        self.agenda.push(at_ms, action);
        self.wakeups.ensure(at_ms, now_ms, self.clock.as_ref());
    }

    /// True simulated time ([`true_now`]), from the run's clock.
    #[inline]
    pub fn now(&self) -> SimTime {
        match &self.clock {
            Some(clock) => clock.now(),
            None => true_now(),
        }
    }

    pub fn node(&mut self, id: NodeId) -> &mut NodeState {
        self.nodes.entry(id)
    }

    /// Schedules `waiter`'s deadline `timeout_ms` from now. It gets a
    /// timer of its own only if nothing wakes the agenda task before it:
    /// most waiters are answered long before their deadline, and when the
    /// agenda task next looks, it arms one for its earliest live entry.
    pub fn expire_after(&mut self, timeout_ms: u64, waiter: crate::runtime::waits::Waiter) {
        let now = self.now().0;
        self.agenda.push_deadline(now + timeout_ms, waiter);
        self.wakeups.ensure_by(now + timeout_ms, now, self.clock.as_ref());
    }

    /// The agenda's next step at `now_ms`: the next action due (expired
    /// waiters stop waiting on the way), or else to wait, with a timer
    /// armed for its earliest entry.
    pub fn agenda_step(&mut self, now_ms: u64) -> crate::runtime::agenda::Step {
        use crate::runtime::agenda::Due;
        loop {
            let waits = &self.waits;
            match self.agenda.pop_due(now_ms, |waiter| waits.waits(waiter)) {
                Some(Due::Expire(waiter)) => self.waits.expire(waiter),
                Some(Due::Action(action)) => return crate::runtime::agenda::Step::Apply(action),
                None => break,
            }
        }
        if self.ending.stopping() {
            return crate::runtime::agenda::Step::Stop;
        }
        let waits = &self.waits;
        self.wakeups.forget_past(now_ms);
        if let Some(next) = self.agenda.next_live_ms(|waiter| waits.waits(waiter)) {
            self.wakeups.ensure(next, now_ms, self.clock.as_ref());
        }
        crate::runtime::agenda::Step::Wait
    }

    /// Drops every handle that a pending task could be waiting on, so the
    /// run's tasks are cancelled and freed with the runtime.
    pub fn tear_down(&mut self) {
        self.nodes.clear();
        self.agenda.clear();
        self.wakeups = Default::default();
        self.relay_wake = None;
        self.store_queue.clear();
        self.waits.stop_all();
    }

    /// Ends the fault phase: repairs partitions, resumes and restarts nodes
    /// (through the caller), and turns message faults off.
    pub fn begin_heal(&mut self) -> (Vec<NodeId>, Vec<NodeId>) {
        self.faults.heal();
        let mut down = Vec::new();
        let mut paused = Vec::new();
        let mut partitioned = false;
        for (id, n) in self.nodes.iter_mut() {
            partitioned |= n.cut_in || n.cut_out;
            n.cut_in = false;
            n.cut_out = false;
            if !n.up {
                down.push(id);
            }
            if n.paused {
                paused.push(id);
            }
        }
        self.record(NodeId::World, Event::Phase { phase: Phase::Heal });
        if partitioned {
            self.record(NodeId::World, Event::Fault(Fault::PartitionsHealed));
        }
        (down, paused)
    }
}
