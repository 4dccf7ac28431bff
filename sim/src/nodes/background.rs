//! Background job nodes: the reconciler, the sweeper and the outbox relay
//! run the protocol core's jobs in the simulator's environment.

use crate::nodes::env::SimEnv;
use crate::runtime::node::Node;
use futures::StreamExt;
use idemsim_model::history::Origin;
use std::rc::Rc;

/// The reconciler node's job.
pub(crate) async fn reconciler(node: Rc<Node>) {
    let protocol = node.sim.with(|w| w.protocol.clone());
    crate::protocol::reconciler(&*protocol, &SimEnv::new(&node, Origin::Reconciler)).await;
}

/// The sweeper node's job.
pub(crate) async fn sweeper(node: Rc<Node>) {
    let protocol = node.sim.with(|w| w.protocol.clone());
    crate::protocol::sweeper(&*protocol, &SimEnv::new(&node, Origin::Sweeper)).await;
}

/// Probes a second service sends in a run, at most.
const PROBES: u64 = 8;

/// The second service, a task on the database's machine (a crash of the
/// database ends it; the restart starts it again): during the fault
/// phase, [`PROBES`] times at seeded moments, it probes a record of the
/// workload with an operation the protocol never asks for (see `probe.rs`
/// here and in the model).
pub(crate) async fn meddler(node: Rc<Node>) {
    let (count, lease_ms, fault_ms) =
        node.sim.with(|w| (w.probe_scopes.len() as u64, w.history.meta.lease_ms, w.config.phases.fault_ms));
    if count == 0 {
        return;
    }
    let gap_max_ms = (2 * fault_ms / PROBES).max(1);
    for n in 0..PROBES {
        let wait_ms = node.sim.with(|w| w.draws.meddler.between(n, 0, 0, gap_max_ms));
        crate::runtime::alarm::Alarm::after_ms(wait_ms).await;
        let Some((scope, pick)) = node.sim.with(|w| {
            let scope = w.probe_scopes[w.draws.meddler.between(n, 1, 0, count - 1) as usize].clone();
            w.faults.on().then(|| (scope, w.draws.meddler.between(n, 2, 0, 1 << 32)))
        }) else {
            return;
        };
        crate::nodes::probe::probe(&node, &scope, pick, lease_ms);
    }
}

/// The relay's message handler: a notification wakes the relay.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle_relay(node: &Node, msg: Box<crate::runtime::msg::Msg>) {
    if let crate::runtime::msg::Msg::Notify = *msg {
        node.sim.with(|w| w.relay_wake.as_ref().map(|tx| tx.unbounded_send(())));
    }
}

/// Runs a relay pass when the database notifies a commit with messages,
/// and every `relay_interval_ms` in case a notification was lost or a
/// publish failed.
pub(crate) async fn relay(node: Rc<Node>) {
    let interval = node.sim.with(|w| w.config.protocol.relay_interval_ms);
    let (tx, mut wake) = futures::channel::mpsc::unbounded();
    node.sim.with(|w| w.relay_wake = Some(tx));
    let env = SimEnv::new(&node, Origin::Relay);
    loop {
        let _ = futures::future::select(crate::runtime::alarm::Alarm::after_ms(interval), wake.next()).await;
        while wake.try_recv().is_ok() {}
        crate::protocol::relay_pass(&env).await;
    }
}
