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

/// What the world keeps of the clients: which client sends each operation,
/// and each client's retry budget.
///
/// **Invariant:** an operation's client is the workload's, fixed for the
/// run; a client's budget is made at its first use, from the configured
/// one, and shared by all its operations.
pub(crate) struct Clients {
    by_op: crate::runtime::world::Lookup<idemsim_model::OpId, u32>,
    buckets: std::collections::BTreeMap<u32, idemsim_model::retry::TokenBucket>,
}

impl Clients {
    /// The clients of `ops`.
    pub fn new(ops: &[Operation]) -> Clients {
        Clients { by_op: ops.iter().map(|o| (o.op, o.client)).collect(), buckets: Default::default() }
    }

    /// The client node that sends `req`.
    pub fn of(&self, req: idemsim_model::RequestId) -> idemsim_model::NodeId {
        idemsim_model::NodeId::Client(self.by_op.get(&req.op).copied().unwrap_or(0))
    }

    /// `client`'s retry budget (made from `budget` at its first use).
    pub fn bucket(
        &mut self,
        client: u32,
        budget: &idemsim_model::retry::RetryBudget,
    ) -> &mut idemsim_model::retry::TokenBucket {
        self.buckets.entry(client).or_insert_with(|| idemsim_model::retry::TokenBucket::new(budget))
    }
}
