//! The downstream dependency (a payment provider that dedups by its own
//! idempotency key) and the outbox consumer (which dedups by message id).

use crate::msg::{CallBody, Msg, ReplyBody};
use crate::node::Node;
use idemsim_model::{Event, NodeId};

/// The dependency: performs an effect for each new downstream key, and
/// answers a repeated key with the original charge.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle_dependency(node: &Node, msg: Box<Msg>) {
    let Msg::Call { id, from, origin, body: CallBody::Charge { scope, attempt, downstream_key } } = *msg else {
        return;
    };
    let charge_id = node.sim.with(|w| {
        let called = Event::DownstreamCalled {
            by: origin,
            from,
            scope: scope.clone(),
            attempt,
            downstream_key: downstream_key.clone(),
        };
        w.record(NodeId::Downstream, called);
        if let Some(existing) = w.charges.get(&downstream_key) {
            return existing.clone();
        }
        let charge_id = format!("ch_{}", w.charges.len() + 1);
        w.charges.insert(downstream_key.clone(), charge_id.clone());
        w.record(NodeId::Downstream, Event::DownstreamEffect { scope, downstream_key });
        charge_id
    });
    node.reply(from, id, ReplyBody::Charged { charge_id });
}

/// The consumer: applies each message once, acknowledges every delivery.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle_consumer(node: &Node, msg: Box<Msg>) {
    let Msg::Call { id, from, body: CallBody::Publish { entry }, .. } = *msg else { return };
    node.sim.with(|w| {
        let applied = w.consumed.insert(entry.message.id.clone());
        w.record(NodeId::Consumer, Event::MessageConsumed { id: entry.message.id, scope: entry.scope, applied });
    });
    node.reply(from, id, ReplyBody::Ack);
}
