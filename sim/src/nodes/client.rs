//! Client nodes: each operation starts at its time and runs the protocol
//! core's retry loop in the simulator's environment.

use crate::nodes::env::SimClient;
use crate::runtime::node::{sleep_ms, Node};
use crate::runtime::world::true_now;
use crate::workload::Operation;
use std::rc::Rc;

/// Starts every operation of this client at its time.
pub(crate) fn drive(node: &Rc<Node>, ops: std::sync::Arc<[Operation]>) {
    for at in 0..ops.len() {
        let (node, ops) = (node.clone(), ops.clone());
        // Boxed: madsim moves a future several times on its way into a
        // task, and this one holds the operation's whole retry loop.
        madsim::task::spawn_local(Box::pin(async move {
            let op = &ops[at];
            sleep_ms(op.start_ms.saturating_sub(true_now().0)).await;
            let protocol = node.sim.with(|w| w.protocol.clone());
            let env = SimClient::new(&node, op);
            crate::protocol::run_operation(&*protocol, &env, op.op, &op.request).await;
        }));
    }
}
