//! Look-ups the checkers share, built once per history.

use crate::history::{Event, History, Origin};
use crate::ids::{CallerId, OpId, RequestId};
use crate::request::Request;
use std::collections::BTreeMap;

/// Which request each try was, so store and server events that name a
/// `RequestId` can be tied back to the caller, key and body that was sent.
#[derive(Debug, Default)]
pub struct Index<'h> {
    sent: BTreeMap<RequestId, (usize, &'h Request)>,
    first_send: BTreeMap<OpId, usize>,
}

impl<'h> Index<'h> {
    /// Indexes a history.
    pub fn new(history: &'h History) -> Index<'h> {
        let mut index = Index::default();
        for (i, entry) in history.entries.iter().enumerate() {
            if let Event::RequestSent { req, request, .. } = &entry.event {
                index.sent.entry(*req).or_insert((i, request));
                index.first_send.entry(req.op).or_insert(i);
            }
        }
        index
    }

    /// The request sent as `req`, and the index of its send.
    pub fn request(&self, req: RequestId) -> Option<(usize, &'h Request)> {
        self.sent.get(&req).copied()
    }

    /// The index of the first send of an operation.
    pub fn first_send(&self, op: OpId) -> Option<usize> {
        self.first_send.get(&op).copied()
    }

    /// The caller on whose behalf `origin` acted, when it was a request.
    pub fn caller_of(&self, origin: Origin) -> Option<&'h CallerId> {
        self.request(origin.request()?).map(|(_, r)| &r.caller)
    }
}
