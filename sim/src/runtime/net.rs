//! The simulated network: seeded drops, duplicates, delays (and so
//! reordering) and partitions, each recorded in the history.
//!
//! Duplication applies to HTTP-level messages (client requests and
//! responses, dependency calls, publishes). Store calls ride a database
//! session, which is a TCP connection: it can drop or stall, never deliver
//! a statement twice.
//!
//! madsim's own network cannot duplicate and does not report what it
//! drops, so messages travel through the world's agenda instead: `send`
//! decides every copy's fate up front from the network stream, and the
//! agenda task delivers each copy into the receiver's mailbox at its time.

use crate::runtime::msg::Msg;
use crate::runtime::node::Handler;
use crate::runtime::world::{Action, Sim, World};
use idemsim_model::history::Fault;
use idemsim_model::{Event, NodeId};

impl Sim {
    /// Sends a message. It may be dropped, delayed or duplicated.
    pub fn send(&self, from: NodeId, to: NodeId, msg: Box<Msg>) {
        self.with(|w| w.send(from, to, msg));
    }
}

impl World {
    /// The message comes boxed and stays in its box until its handler
    /// takes it apart: a message is large, and moving it by value through
    /// every step of its way cost a copy at each.
    pub fn send(&mut self, from: NodeId, to: NodeId, msg: Box<Msg>) {
        self.step();
        let now = self.now().0;
        if self.nodes.get(&from).is_some_and(|n| n.cut_out) {
            return self.dropped(from, to, &msg, "sender partitioned");
        }
        // Every draw about this message is keyed by the message itself.
        let key = self.draws.fresh_key(msg.key());
        let (net, p) = (self.draws.net, &self.faults.profile);
        let (lo, hi) = (p.latency_ms[0], p.latency_ms[1]);
        if self.faults.on() && net.chance(key, 0, p.drop_permille) {
            return self.dropped(from, to, &msg, "lost");
        }
        if self.faults.on() && msg.may_duplicate() && net.chance(key, 1, p.dup_permille) {
            let copy_to = self.duplicate_target(to, &msg, key);
            let extra = net.between(key, 3, 0, self.faults.profile.dup_delay_max_ms);
            let delay = net.between(key, 4, lo, hi) + extra;
            let what = msg.describe();
            self.record(from, Event::Fault(Fault::Duplicated { from, to: copy_to, what }));
            self.messages += 1;
            self.schedule_at_from(now, now + delay, Action::Deliver { from, to: copy_to, msg: msg.clone() });
        }
        let delay = net.between(key, 5, lo, hi);
        self.messages += 1;
        self.schedule_at_from(now, now + delay, Action::Deliver { from, to, msg });
    }

    /// A duplicated client request may reach another server (a load
    /// balancer retrying); anything else is duplicated on its own link.
    fn duplicate_target(&mut self, to: NodeId, msg: &Msg, key: u64) -> NodeId {
        let servers = u64::from(self.config.topology.servers);
        match (msg, to) {
            (Msg::Request { .. }, NodeId::Server(_)) => {
                NodeId::Server(self.draws.net.between(key, 2, 0, servers - 1) as u32)
            }
            _ => to,
        }
    }

    /// Puts a message into `to`'s mailbox, unless `to` is down or cut off.
    /// A message whose handler runs at once, for a node whose receive loop
    /// would take it next, comes back with the handler instead, for the
    /// caller to run outside the world's lock ([`crate::runtime::node::Handling`]).
    pub fn deliver(&mut self, from: NodeId, to: NodeId, msg: Box<Msg>) -> Option<(Handler, Box<Msg>)> {
        let Some(node) = self.nodes.get(&to) else {
            self.dropped(from, to, &msg, "no such node");
            return None;
        };
        if node.cut_in {
            self.dropped(from, to, &msg, "receiver partitioned");
            return None;
        }
        let Some(mailbox) = node.mailbox.as_ref().filter(|_| node.up) else {
            self.dropped(from, to, &msg, "receiver down");
            return None;
        };
        if !node.paused {
            // A reply goes straight to its waiting caller, as the receive
            // loop would hand it on (a paused node's replies wait in its
            // mailbox with everything else until it resumes).
            match *msg {
                Msg::Reply { id, body } => {
                    self.waits.answer_call(id, body);
                    return None;
                }
                Msg::Response { req, .. } => {
                    self.waits.answer_request(to, req, msg);
                    return None;
                }
                _ => {}
            }
            if let Some(handle) = node.at_once.filter(|_| mailbox.idle()) {
                return Some((handle, msg));
            }
        }
        if let Err(refused) = mailbox.send(msg) {
            self.dropped(from, to, &refused, "receiver down");
        }
        None
    }

    fn dropped(&mut self, from: NodeId, to: NodeId, msg: &Msg, why: &str) {
        let mut what = String::with_capacity(48);
        msg.describe_into(&mut what);
        crate::runtime::msg::push(&mut what, &[" (", why, ")"]);
        self.record(from, Event::Fault(Fault::Dropped { from, to, what }));
    }
}
