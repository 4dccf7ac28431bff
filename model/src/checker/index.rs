//! Look-ups the checkers share, built once per history.
//!
//! The checkers judge by the client's view: a store or effect event is
//! attributed to the scope `(caller, key)` of the request the client sent,
//! never to the record key the server computed. A server that keys records
//! wrongly (the key alone, the key and the body) then breaks the property
//! it really breaks (isolation, at-most-once) instead of hiding its effects
//! under a record key no client asked for.

use super::Lookup;
use crate::fingerprint::{Fingerprint, FingerprintMemo};
use crate::history::{Entry, Event, History, Origin};
use crate::ids::{CallerId, DownstreamKey, IdempotencyKey, OpId, RequestId, Scope};
use crate::request::Request;

/// Which request each try was, so store and server events that name a
/// `RequestId` can be tied back to the caller, key and body that was sent.
#[derive(Debug, Default)]
pub struct Index<'h> {
    sent: Lookup<RequestId, Sent<'h>>,
    /// Each operation's first send, and its latest distinct try.
    ops: Lookup<OpId, (usize, Sent<'h>)>,
    /// The client scopes, numbered.
    scopes: Vec<Scope>,
    scope_ids: Lookup<(&'h str, &'h str), u32>,
    /// `scope_ids` by the strings' addresses (see `attribute`).
    scope_addresses: Lookup<(usize, usize), u32>,
    /// The fingerprints of the requests as the client sent them, numbered.
    fingerprints: Vec<Fingerprint>,
    /// The client scope of each entry that concerns a record (`NONE` for
    /// the others).
    attributed: Vec<u32>,
    /// The record (as the store keyed it) each entry names (`NONE` for
    /// the others), numbered per history.
    records: Vec<u32>,
    record_ids: Lookup<&'h Scope, u32>,
    /// The entries that name a record, in order (see [`Index::record_entries`]).
    record_entries: Vec<u32>,
    /// The `ResponseReceived` entries, in order.
    responses_received: Vec<u32>,
    /// The clients' entries (sends, answers, time-outs, retries,
    /// give-ups), in order (see [`Index::client_entries`]).
    client_entries: Vec<u32>,
    /// How each operation ended, computed once for the checker of progress
    /// and the coverage counters.
    op_ends: std::cell::OnceCell<Vec<(OpId, super::progress::End)>>,
}

/// A record scope as the store keyed it, numbered per history: checkers
/// keep their per-record state in vectors by this number instead of maps
/// keyed by two strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId(u32);

impl RecordId {
    /// The number, from 0, for indexing per-record vectors.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// A client scope `(caller, key)`, numbered per history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopeId(u32);

impl ScopeId {
    /// The number, from 0, for indexing per-scope vectors.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// One send: where, what, and its client scope and fingerprint numbers.
#[derive(Clone, Copy, Debug)]
struct Sent<'h> {
    at: usize,
    request: &'h Request,
    scope: u32,
    fingerprint: FingerprintId,
}

/// A request fingerprint as the client sent it, numbered per history:
/// equal numbers, equal fingerprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FingerprintId(u32);

const NONE: u32 = u32::MAX;

/// Two requests with these fields equal have the same fingerprint.
fn same_fingerprint_inputs(a: &Request, b: &Request) -> bool {
    a.body == b.body && a.path == b.path && a.method == b.method
}

/// The events of [`Index::client_entries`].
fn is_client_event(event: &Event) -> bool {
    matches!(
        event,
        Event::RequestSent { .. }
            | Event::ResponseReceived { .. }
            | Event::TimedOut { .. }
            | Event::RetryScheduled { .. }
            | Event::GaveUp { .. }
    )
}

impl<'h> Index<'h> {
    /// Indexes a history. Each distinct request is fingerprinted once.
    pub fn new(history: &'h History) -> Index<'h> {
        Index::with_memo(history, &mut FingerprintMemo::default())
    }

    /// [`Index::new`], fingerprinting through `memo`: a caller that judges
    /// many histories (a sweep's worker) hashes each distinct request once
    /// across all of them.
    pub fn with_memo(history: &'h History, memo: &mut FingerprintMemo) -> Index<'h> {
        let sends = history.entries.iter().filter(|e| matches!(e.event, Event::RequestSent { .. })).count();
        let mut index = Index {
            sent: Lookup::with_capacity_and_hasher(sends, Default::default()),
            ops: Lookup::with_capacity_and_hasher(sends, Default::default()),
            scope_ids: Lookup::with_capacity_and_hasher(sends, Default::default()),
            scope_addresses: Lookup::with_capacity_and_hasher(sends, Default::default()),
            ..Index::default()
        };
        let mut distinct: Lookup<Fingerprint, FingerprintId> =
            Lookup::with_capacity_and_hasher(sends, Default::default());
        for (i, entry) in history.entries.iter().enumerate() {
            if is_client_event(&entry.event) {
                index.client_entries.push(i as u32);
            }
            let Event::RequestSent { req, request, .. } = &entry.event else {
                if let Event::ResponseReceived { .. } = entry.event {
                    index.responses_received.push(i as u32);
                }
                continue;
            };
            if index.sent.contains_key(req) {
                continue;
            }
            // A retry mostly repeats its operation's last try: its numbers
            // are taken from there, without hashing the body again.
            let last = index.ops.get(&req.op).map(|(_, last)| *last);
            let fingerprint = match last {
                Some(last) if same_fingerprint_inputs(last.request, request) => last.fingerprint,
                _ => {
                    let fingerprint = request.fingerprint_in(memo);
                    let next = FingerprintId(index.fingerprints.len() as u32);
                    *distinct.entry(fingerprint).or_insert_with_key(|fingerprint| {
                        index.fingerprints.push(fingerprint.clone());
                        next
                    })
                }
            };
            let scope = match (&request.key, last) {
                (Some(key), Some(last))
                    if last.request.key.as_ref() == Some(key) && last.request.caller == request.caller =>
                {
                    last.scope
                }
                (Some(key), _) => index.scope_id(&request.caller, key),
                (None, _) => NONE,
            };
            let sent = Sent { at: i, request, scope, fingerprint };
            index.sent.insert(*req, sent);
            index.ops.entry(req.op).and_modify(|(_, last)| *last = sent).or_insert((i, sent));
        }
        index.attribute(history);
        index
    }

    /// Where `req` was sent, the request, its scope's number (if keyed)
    /// and its fingerprint's: [`Index::request`],
    /// [`Index::request_scope_id`] and [`Index::request_fingerprint`] in
    /// one look-up.
    pub(crate) fn sent(&self, req: RequestId) -> Option<(usize, &'h Request, Option<ScopeId>, FingerprintId)> {
        let sent = self.sent.get(&req)?;
        Some((sent.at, sent.request, (sent.scope != NONE).then_some(ScopeId(sent.scope)), sent.fingerprint))
    }

    /// The scope `(caller, key)` the request sent as `req` names, if keyed.
    pub fn request_scope(&self, req: RequestId) -> Option<&Scope> {
        let sent = self.sent.get(&req)?;
        (sent.scope != NONE).then(|| &self.scopes[sent.scope as usize])
    }

    /// The number of [`Index::request_scope`].
    pub fn request_scope_id(&self, req: RequestId) -> Option<ScopeId> {
        let sent = self.sent.get(&req)?;
        (sent.scope != NONE).then_some(ScopeId(sent.scope))
    }

    /// The fingerprint, as the client sent it, of the request sent as `req`.
    pub fn request_fingerprint(&self, req: RequestId) -> Option<FingerprintId> {
        self.sent.get(&req).map(|s| s.fingerprint)
    }

    /// The fingerprint a number stands for.
    pub fn fingerprint(&self, id: FingerprintId) -> &Fingerprint {
        &self.fingerprints[id.0 as usize]
    }

    /// The number of a fingerprint some request was sent with, if any.
    pub fn fingerprint_id(&self, fingerprint: &Fingerprint) -> Option<FingerprintId> {
        self.fingerprints.iter().position(|f| f == fingerprint).map(|i| FingerprintId(i as u32))
    }

    fn scope_id(&mut self, caller: &'h CallerId, key: &'h IdempotencyKey) -> u32 {
        let address = (caller.0.as_ptr() as usize, key.0.as_ptr() as usize);
        if let Some(&id) = self.scope_addresses.get(&address) {
            return id;
        }
        let id = *self.scope_ids.entry((&caller.0, &key.0)).or_insert_with(|| {
            self.scopes.push(Scope { caller: caller.clone(), key: key.clone() });
            (self.scopes.len() - 1) as u32
        });
        self.scope_addresses.insert(address, id);
        id
    }

    /// The request sent as `req`, and the index of its send.
    pub fn request(&self, req: RequestId) -> Option<(usize, &'h Request)> {
        self.sent.get(&req).map(|s| (s.at, s.request))
    }

    /// The index of the first send of an operation.
    pub fn first_send(&self, op: OpId) -> Option<usize> {
        self.ops.get(&op).map(|(first, _)| *first)
    }

    /// The caller on whose behalf `origin` acted, when it was a request.
    pub fn caller_of(&self, origin: Origin) -> Option<&'h CallerId> {
        self.request(origin.request()?).map(|(_, r)| &r.caller)
    }

    /// The client's scope `(caller, key)` that entry `i` (an event naming a
    /// record) acted for: the scope of the request behind it, or for the
    /// background jobs and the dependency, of the request whose claim or
    /// takeover last held the record. `None` for events that name no
    /// record.
    pub fn client_scope(&self, i: usize) -> Option<&Scope> {
        let id = *self.attributed.get(i)?;
        (id != NONE).then(|| &self.scopes[id as usize])
    }

    /// [`Index::client_scope`], or the record's own scope when the entry
    /// was not attributed (a history without requests, as in unit tests).
    pub fn client_scope_or<'a>(&'a self, i: usize, record: &'a Scope) -> &'a Scope {
        self.client_scope(i).unwrap_or(record)
    }

    /// The number of [`Index::client_scope`]: every entry that names a
    /// record has one (its own record's scope when nothing else applies).
    pub fn client_scope_id(&self, i: usize) -> Option<ScopeId> {
        let id = *self.attributed.get(i)?;
        (id != NONE).then_some(ScopeId(id))
    }

    /// The scope a number stands for.
    pub fn scope(&self, id: ScopeId) -> &Scope {
        &self.scopes[id.get()]
    }

    /// How many client scopes are numbered (ids are `0..scope_count()`).
    pub fn scope_count(&self) -> usize {
        self.scopes.len()
    }

    /// The record that entry `i` names, if it names one.
    pub fn record(&self, i: usize) -> Option<RecordId> {
        let id = *self.records.get(i)?;
        (id != NONE).then_some(RecordId(id))
    }

    /// The entries of `history` (the history this index was built from)
    /// that name a record: those with a [`Index::record`] and a
    /// [`Index::client_scope_id`], in order. A checker that looks at
    /// records only walks these instead of the whole history.
    pub fn record_entries<'a>(&'a self, history: &'a History) -> impl Iterator<Item = (usize, &'a Entry)> + 'a {
        self.record_entries.iter().map(|&i| (i as usize, &history.entries[i as usize]))
    }

    /// The clients' entries of `history` (the history this index was built
    /// from): `RequestSent`, `ResponseReceived`, `TimedOut`,
    /// `RetryScheduled` and `GaveUp`, in order. A checker of the clients'
    /// behaviour walks these instead of the whole history.
    pub fn client_entries<'a>(&'a self, history: &'a History) -> impl Iterator<Item = (usize, &'a Entry)> + 'a {
        self.client_entries.iter().map(|&i| (i as usize, &history.entries[i as usize]))
    }

    /// The `ResponseReceived` entries of `history` (the history this index
    /// was built from), in order.
    pub fn responses_received<'a>(&'a self, history: &'a History) -> impl Iterator<Item = (usize, &'a Entry)> + 'a {
        self.responses_received.iter().map(|&i| (i as usize, &history.entries[i as usize]))
    }

    /// How each operation of `history` (the history this index was built
    /// from) ended, in operation order.
    pub(crate) fn op_ends(&self, history: &History) -> &[(OpId, super::progress::End)] {
        self.op_ends.get_or_init(|| super::progress::ends(self.client_entries(history), history.entries.len()))
    }

    /// How many distinct requests (`RequestId`s) were sent: a size for
    /// the checkers' maps keyed by request or operation.
    pub fn sends(&self) -> usize {
        self.sent.len()
    }

    /// How many records are numbered (ids are `0..record_count()`).
    pub fn record_count(&self) -> usize {
        self.record_ids.len()
    }

    /// The number of the record keyed by `scope`, if some event names it.
    pub fn record_of(&self, scope: &Scope) -> Option<RecordId> {
        self.record_ids.get(scope).map(|&id| RecordId(id))
    }

    fn attribute(&mut self, history: &'h History) {
        let mut record_ids = std::mem::take(&mut self.record_ids);
        record_ids.reserve(self.sent.len());
        let mut holder: Vec<u32> = Vec::new();
        let mut called: Lookup<&'h DownstreamKey, u32> = crate::lookup::lookup(self.sent.len());
        self.attributed = vec![NONE; history.entries.len()];
        self.records = vec![NONE; history.entries.len()];
        // Most events share their scope's strings with the request's (a
        // clone of a `Text` is the same allocation): numbering by the two
        // addresses first spares hashing and comparing the strings. Equal
        // addresses are equal strings (the history holds them all alive);
        // equal strings at other addresses fall through to `record_ids`.
        let mut by_address: Lookup<(usize, usize), u32> = crate::lookup::lookup(self.sent.len());
        for (i, entry) in history.entries.iter().enumerate() {
            let Some(record) = entry.event.scope() else { continue };
            let next = record_ids.len() as u32;
            let address = (record.caller.0.as_ptr() as usize, record.key.0.as_ptr() as usize);
            let record_id = match by_address.get(&address) {
                Some(&id) => id,
                None => *by_address.entry(address).or_insert(*record_ids.entry(record).or_insert(next)),
            };
            if record_id == next {
                holder.push(NONE);
            }
            self.records[i] = record_id;
            self.record_entries.push(i as u32);
            let by_request = entry
                .event
                .origin()
                .and_then(Origin::request)
                .and_then(|req| self.sent.get(&req))
                .map(|sent| sent.scope)
                .filter(|&id| id != NONE);
            let id = match &entry.event {
                Event::DownstreamEffect { downstream_key, .. } | Event::DownstreamAnswered { downstream_key, .. } => {
                    called.get(downstream_key).copied()
                }
                _ => by_request,
            }
            .or_else(|| Some(holder[record_id as usize]).filter(|&h| h != NONE))
            .unwrap_or_else(|| self.scope_id(&record.caller, &record.key));
            match &entry.event {
                Event::Claimed { .. } | Event::TakenOver { .. } if by_request.is_some() => {
                    holder[record_id as usize] = id;
                }
                Event::DownstreamCalled { downstream_key, .. } => {
                    called.insert(downstream_key, id);
                }
                _ => {}
            }
            self.attributed[i] = id;
        }
        self.record_ids = record_ids;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, DownstreamKey, NodeId, SimTime};

    /// A server that keys records by the key alone: the events it records
    /// under `*/k` are attributed to the callers that sent them.
    #[test]
    fn record_events_are_attributed_to_the_client_scope() {
        let mut s = Story::new();
        let shared = Scope::new("*", "k");
        s.send(0, req(1, 1), request("acme", Some("k"), "/charges", "{}"));
        s.send(1, req(2, 1), request("globex", Some("k"), "/charges", "{}"));
        let claimed = s.at(
            NodeId::Db,
            Event::Claimed {
                by: by(1, 1),
                scope: shared.clone(),
                fingerprint: crate::Fingerprint("f".into()),
                attempt: Attempt(1),
                locked_until: SimTime(1_000),
            },
        );
        let called = s.at(
            NodeId::Downstream,
            Event::DownstreamCalled {
                by: by(1, 1),
                from: NodeId::Server(0),
                scope: shared.clone(),
                attempt: Attempt(1),
                downstream_key: DownstreamKey("dk".into()),
            },
        );
        let effect = s.at(
            NodeId::Downstream,
            Event::DownstreamEffect { scope: shared.clone(), downstream_key: DownstreamKey("dk".into()) },
        );
        let completed = s.completed(Origin::Reconciler, &shared, 1, ok("x"));
        let replayed = s.completed(by(2, 1), &shared, 1, ok("x"));
        let index = Index::new(&s.history);
        let acme = Scope::new("acme", "k");
        for i in [claimed, called, effect, completed] {
            assert_eq!(index.client_scope(i), Some(&acme), "#{i}");
        }
        assert_eq!(index.client_scope(replayed), Some(&Scope::new("globex", "k")));
        assert_eq!(index.client_scope(0), None, "a send names no record");
        let named: Vec<usize> = (0..s.history.entries.len()).filter(|&i| index.record(i).is_some()).collect();
        let walked: Vec<usize> = index.record_entries(&s.history).map(|(i, _)| i).collect();
        assert_eq!(walked, named, "record_entries walks exactly the entries that name a record");
        assert_eq!(walked, vec![claimed, called, effect, completed, replayed]);
        let clients: Vec<usize> = index.client_entries(&s.history).map(|(i, _)| i).collect();
        assert_eq!(clients, vec![0, 1], "the two sends are the clients' entries");
    }
}
