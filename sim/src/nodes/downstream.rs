//! The downstream dependency (a payment provider that dedups by its own
//! idempotency key) and the outbox consumer (which dedups by message id).

use crate::runtime::msg::{CallBody, Msg, ReplyBody};
use crate::runtime::node::Node;
use crate::runtime::world::Action;
use idemsim_model::{Event, NodeId};
use idemsim_protocol::{Decision, Ledger};

/// The dependency: performs an effect for each new downstream key, and
/// answers a repeated key as it answered the first time (the original
/// charge, or the decline). Under the fault profile it may also refuse a
/// new key for now (429 or 503 with a `Retry-After`, nothing charged),
/// decline it for good (402), or answer late (the charge made on arrival):
/// each a keyed draw on the call.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle_dependency(node: &Node, msg: Box<Msg>) {
    let Msg::Call { id, from, origin, body: CallBody::Charge { scope, attempt, downstream_key } } = *msg else {
        return;
    };
    node.sim.with(|w| {
        w.record(NodeId::Downstream, Ledger::received(origin, from, &scope, attempt, &downstream_key));
        let (draws, p, faults) = (w.draws.dependency, &w.faults.profile, w.faults.on());
        let delay_ms = match faults && draws.chance(id, 0, p.provider_slow_permille) {
            true => draws.between(id, 1, 1, p.provider_slow_ms_max.max(1)),
            false => 0,
        };
        let (body, status, retry_after_ms) = match w.downstream.ledger.decided(&downstream_key) {
            Some(answer) => answered(answer),
            None if faults && draws.chance(id, 2, p.provider_unavailable_permille) => {
                let retry_after_ms = draws.between(id, 3, 1, p.provider_retry_after_ms_max.max(1));
                let status = if draws.chance(id, 4, 500) { 429 } else { 503 };
                (ReplyBody::Unavailable { retry_after_ms }, status, Some(retry_after_ms))
            }
            None if draws.chance(id, 5, p.provider_decline_permille) => {
                w.downstream.ledger.decline(&downstream_key);
                (ReplyBody::Declined, 402, None)
            }
            None => {
                let (answer, effect) = w.downstream.ledger.charge(&scope, &downstream_key);
                if let Some(effect) = effect {
                    w.record(NodeId::Downstream, effect);
                }
                answered(answer)
            }
        };
        if status != 200 || delay_ms > 0 {
            let answered = Event::DownstreamAnswered { scope, downstream_key, status, retry_after_ms, delay_ms };
            w.record(NodeId::Downstream, answered);
        }
        let reply = Box::new(Msg::Reply { id, body });
        match delay_ms {
            0 => w.send(NodeId::Downstream, from, reply),
            _ => {
                let now = w.now().0;
                w.schedule_at_from(
                    now,
                    now + delay_ms,
                    Action::Send { from: NodeId::Downstream, to: from, msg: reply },
                );
            }
        }
    });
}

/// The reply, status and `Retry-After` of a decided charge.
fn answered(decision: Decision) -> (ReplyBody, u16, Option<u64>) {
    match decision {
        Decision::Charged(charge_id) => (ReplyBody::Charged { charge_id }, 200, None),
        Decision::Declined => (ReplyBody::Declined, 402, None),
    }
}

/// The consumer: applies each message once, acknowledges every delivery.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle_consumer(node: &Node, msg: Box<Msg>) {
    let Msg::Call { id, from, body: CallBody::Publish { entry }, .. } = *msg else { return };
    node.sim.with(|w| {
        let applied = w.downstream.consume(&entry.message.id);
        w.record(NodeId::Consumer, Event::MessageConsumed { id: entry.message.id, scope: entry.scope, applied });
    });
    node.reply(from, id, ReplyBody::Ack);
}

/// What the provider and the consumer remember.
///
/// **Invariant:** the provider decides each downstream key once, for good
/// (its [`Ledger`]); the consumer applies each message id once.
#[derive(Default)]
pub(crate) struct Downstream {
    /// The provider's books.
    pub ledger: Ledger,
    consumed: std::collections::BTreeSet<idemsim_model::MessageId>,
}

impl Downstream {
    /// The consumer takes message `id`: true the first time (it applies
    /// it), false for a repeat.
    pub fn consume(&mut self, id: &idemsim_model::MessageId) -> bool {
        self.consumed.insert(id.clone())
    }
}
