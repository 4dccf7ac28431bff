//! The agenda task, and the fault verbs: crash, restart, pause, resume,
//! partition, reconnect, skew. Faults come from the seeded plan, from the
//! fault sites inside the server (crash or pause at the worst moment), and
//! from the heal phase undoing them.

use crate::faults::plan::FaultAction;
use crate::runtime::agenda::Step;
use crate::runtime::node::Node;
use crate::runtime::world::{Action, Sim, World};
use idemsim_model::history::Fault;
use idemsim_model::{Event, NodeId};

/// Runs agenda actions at their times, until the run stops. Woken by the
/// timers of [`crate::runtime::wakeups`], armed for each scheduled action's time.
pub(crate) async fn agenda(sim: Sim) {
    let waker = std::future::poll_fn(|cx| std::task::Poll::Ready(cx.waker().clone())).await;
    sim.with(|w| w.wakeups.set_waker(&waker));
    loop {
        match sim.with(|w| w.agenda_step(w.now().0)) {
            Step::Apply(action) => apply(&sim, action),
            Step::Wait => Woken::default().await,
            Step::Stop => return,
        }
    }
}

/// Pending until the task is woken once.
#[derive(Default)]
struct Woken {
    polled: bool,
}

impl std::future::Future for Woken {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        match std::mem::replace(&mut self.polled, true) {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        }
    }
}

fn apply(sim: &Sim, action: Action) {
    match action {
        Action::Deliver { from, to, msg } => {
            if let Some((handle, msg)) = sim.with(|w| w.deliver(from, to, msg)) {
                handle(&Node { id: to, sim: sim.clone() }, msg);
            }
        }
        Action::Fault(FaultAction::Crash { node, down_ms }) => sim.crash(node, down_ms),
        Action::Fault(FaultAction::Pause { node, for_ms }) => sim.pause(node, for_ms),
        Action::Fault(FaultAction::Partition { node, outgoing, incoming, for_ms }) => sim.with(|w| {
            let n = w.node(node);
            n.cut_out |= outgoing;
            n.cut_in |= incoming;
            w.record(NodeId::World, Event::Fault(Fault::Partitioned { node, outgoing, incoming }));
            w.schedule_at(w.now().0 + for_ms, Action::Reconnect { node, outgoing, incoming });
        }),
        Action::Fault(FaultAction::CrashBeforeCompletion { .. } | FaultAction::PauseBeforeCompletion { .. }) => {
            unreachable!("a site fault waits for its site, never on the agenda")
        }
        Action::Fault(FaultAction::Skew { node, offset_ms, drift_ppm }) => sim.with(|w| {
            let n = w.node(node);
            n.offset_ms = offset_ms;
            n.drift_ppm = drift_ppm;
            w.record(NodeId::World, Event::Fault(Fault::ClockSkewed { node, offset_ms }));
        }),
        Action::Send { from, to, msg } => sim.send(from, to, msg),
        Action::Restart(node) => sim.restart(node),
        Action::Resume(node) => sim.resume(node),
        Action::Reconnect { node, outgoing, incoming } => sim.with(|w| {
            let n = w.node(node);
            if (outgoing && n.cut_out) || (incoming && n.cut_in) {
                n.cut_out &= !outgoing;
                n.cut_in &= !incoming;
                w.record(NodeId::World, Event::Fault(Fault::Reconnected { node }));
            }
        }),
    }
}

impl Sim {
    /// Crashes a node (its tasks and unanswered work are gone) and restarts
    /// it after `down_ms`, if faults are still on then (the heal phase
    /// restarts every node anyway).
    pub fn crash(&self, node: NodeId, down_ms: u64) {
        let handle = self.with(|w| {
            let n = w.node(node);
            if !n.up {
                return None;
            }
            n.up = false;
            n.paused = false;
            n.mailbox = None;
            let handle = n.madsim.clone();
            w.waits.forget(node);
            // A process's locks die with it.
            w.servers.crashed(node);
            w.record(NodeId::World, Event::Fault(Fault::Crashed { node }));
            if node == NodeId::Db {
                w.lose_unsynced_writes();
                // The store operations it waited on die with its tasks.
                w.store_queue.lost();
            }
            w.schedule_at(w.now().0 + down_ms, Action::Restart(node));
            handle
        });
        if let Some(h) = handle {
            madsim::runtime::Handle::current().kill(h.id());
        }
    }

    /// Restarts a crashed node: its init runs again with empty memory.
    pub fn restart(&self, node: NodeId) {
        let handle = self.with(|w| {
            let n = w.node(node);
            if n.up {
                return None;
            }
            let handle = n.madsim.clone();
            w.record(NodeId::World, Event::Fault(Fault::Restarted { node }));
            handle
        });
        if let Some(h) = handle {
            madsim::runtime::Handle::current().restart(h.id());
        }
    }

    /// Freezes a node for `for_ms`: its tasks stop, its mailbox fills.
    pub fn pause(&self, node: NodeId, for_ms: u64) {
        let handle = self.with(|w| {
            let n = w.node(node);
            if !n.up || n.paused {
                return None;
            }
            n.paused = true;
            let handle = n.madsim.clone();
            w.record(NodeId::World, Event::Fault(Fault::Paused { node, for_ms }));
            w.schedule_at(w.now().0 + for_ms, Action::Resume(node));
            handle
        });
        if let Some(h) = handle {
            madsim::runtime::Handle::current().pause(h.id());
        }
    }

    /// Resumes a paused node.
    pub fn resume(&self, node: NodeId) {
        let handle = self.with(|w| {
            let n = w.node(node);
            if !n.paused {
                return None;
            }
            n.paused = false;
            let handle = n.madsim.clone();
            w.record(NodeId::World, Event::Fault(Fault::Resumed { node }));
            handle
        });
        if let Some(h) = handle {
            madsim::runtime::Handle::current().resume(h.id());
        }
    }

    /// The heal phase: faults off, partitions repaired, every node running.
    pub fn heal(&self) {
        let (down, paused) = self.with(World::begin_heal);
        for node in paused {
            self.resume(node);
        }
        for node in down {
            self.restart(node);
        }
    }
}
