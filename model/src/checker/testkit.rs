//! Builders for hand-written histories in checker tests.

use crate::history::{Answer, Entry, Event, History, Origin, RunMeta};
use crate::ids::{Attempt, CallerId, IdempotencyKey, NodeId, OpId, RequestId, Scope, SimTime, Try};
use crate::request::{Request, StoredResponse};
use crate::Bytes;

pub fn req(op: u32, try_no: u32) -> RequestId {
    RequestId { op: OpId(op), try_no: Try(try_no) }
}

pub fn by(op: u32, try_no: u32) -> Origin {
    Origin::Request { req: req(op, try_no), copy: 1 }
}

pub fn scope() -> Scope {
    Scope::new("acme", "k1")
}

pub fn request(caller: &str, key: Option<&str>, path: &str, body: &str) -> Request {
    Request {
        caller: CallerId(caller.into()),
        key: key.map(|k| IdempotencyKey(k.into())),
        method: "POST".into(),
        path: path.into(),
        body: Bytes::text(body),
    }
}

pub fn ok(body: &str) -> StoredResponse {
    StoredResponse::new(201, body)
}

/// A history under construction: events at increasing times.
pub struct Story {
    pub history: History,
    now: u64,
}

impl Story {
    pub fn new() -> Story {
        Story { history: History::new(RunMeta::default()), now: 0 }
    }

    pub fn meta(mut self, f: impl FnOnce(&mut RunMeta)) -> Story {
        f(&mut self.history.meta);
        self
    }

    /// Moves time forward.
    pub fn wait(&mut self, ms: u64) -> &mut Story {
        self.now += ms;
        self
    }

    pub fn at(&mut self, node: NodeId, event: Event) -> usize {
        self.history.entries.push(Entry { at: SimTime(self.now), node, event });
        self.history.entries.len() - 1
    }

    pub fn send(&mut self, client: u32, r: RequestId, request: Request) -> usize {
        self.at(NodeId::Client(client), Event::RequestSent { req: r, to: NodeId::Server(0), request })
    }

    pub fn claimed(&mut self, origin: Origin, s: &Scope, fingerprint: &str) -> usize {
        let locked_until = SimTime(self.now + self.history.meta.lease_ms);
        self.at(
            NodeId::Db,
            Event::Claimed {
                by: origin,
                scope: s.clone(),
                fingerprint: crate::Fingerprint(fingerprint.into()),
                attempt: Attempt(1),
                locked_until,
            },
        )
    }

    pub fn taken_over(&mut self, origin: Origin, s: &Scope, attempt: u32) -> usize {
        let locked_until = SimTime(self.now + self.history.meta.lease_ms);
        self.at(NodeId::Db, Event::TakenOver { by: origin, scope: s.clone(), attempt: Attempt(attempt), locked_until })
    }

    pub fn completed(&mut self, origin: Origin, s: &Scope, attempt: u32, response: StoredResponse) -> usize {
        self.at(
            NodeId::Db,
            Event::CompletionWritten {
                by: origin,
                scope: s.clone(),
                attempt: Attempt(attempt),
                response,
                outbox: vec![],
            },
        )
    }

    pub fn answered(&mut self, r: RequestId, answer: Answer, response: StoredResponse) -> usize {
        self.at(NodeId::Server(0), Event::ResponseSent { req: r, copy: 1, answer, response, retry_after_ms: None })
    }

    pub fn received(&mut self, client: u32, r: RequestId, answer: Answer, response: StoredResponse) -> usize {
        self.at(NodeId::Client(client), Event::ResponseReceived { req: r, answer, response, retry_after_ms: None })
    }

    pub fn end(&mut self) -> usize {
        self.at(NodeId::World, Event::Phase { phase: crate::history::Phase::End })
    }
}
