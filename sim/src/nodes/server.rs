//! The API server node: each delivered request gets a task that runs the
//! protocol core's handler in the simulator's environment and sends the
//! answer back.

use crate::nodes::env::SimEnv;
use crate::runtime::msg::Msg;
use crate::runtime::node::Node;
use idemsim_model::history::Origin;

/// The server's message handler: each request gets its own task.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle(node: &Node, msg: Box<Msg>) {
    let Msg::Request { req, request } = *msg else { return };
    let node = node.clone();
    // Boxed: madsim moves a future several times on its way into a task,
    // and this one holds the request.
    madsim::task::spawn_local(Box::pin(async move {
        let (copy, fingerprint, protocol) = node.sim.with(|w| {
            let protocol = w.protocol.clone();
            let (method, path, body) = protocol.fingerprint_fields(&request);
            let fingerprint = w.fingerprints.of(method, path, body);
            let copies = w.received.entry(req).or_insert(0);
            *copies += 1;
            (*copies, fingerprint, protocol)
        });
        let env = SimEnv::new(&node, Origin::Request { req, copy });
        let Some(reply) = crate::protocol::serve(&*protocol, &env, req, copy, &request, fingerprint).await else {
            return;
        };
        let client = node.sim.with(|w| w.client_of(req));
        node.sim.send(node.id, client, Box::new(Msg::Response { req, reply }));
    }));
}
