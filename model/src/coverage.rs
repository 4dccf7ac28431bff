//! "Sometimes" coverage: counts of the interesting interleavings a run
//! actually reached, so a clean verdict is never vacuous.

use crate::checker::{Index, RecordId};
use crate::history::{Answer, Entry, Event, Fault, History, Origin};
use crate::ids::{Attempt, NodeId, RequestId, Scope, SimTime};
use crate::lookup::{Lookup, LookupSet};
use serde::{Deserialize, Serialize};

/// How often each interesting interleaving happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// A takeover was granted.
    pub takeover: u64,
    /// A lease expired while its holder had begun executing (called the
    /// dependency or wrote a recovery point) and the record was taken over.
    pub lease_expired_mid_execute: u64,
    /// A stale holder's write was fenced.
    pub stale_holder_fenced: u64,
    /// A network duplicate of a request arrived after its key completed.
    pub duplicate_after_completion: u64,
    /// A completion committed but the client never got that try's answer.
    pub response_lost_after_commit: u64,
    /// A server crashed after calling the dependency and before completing.
    pub crash_between_effect_and_completion: u64,
    /// A stored response was replayed.
    pub replay: u64,
    /// A fingerprint mismatch was answered 422.
    pub mismatch_rejected: u64,
    /// A live in-flight key was answered 409.
    pub in_flight_rejected: u64,
    /// The reconciler completed a record nobody retried.
    pub reconciler_completed: u64,
    /// A server crashed while an execution it started was unfinished.
    pub crash_mid_execution: u64,
    /// A stored response was replayed an hour or more after it was stored.
    pub late_replay: u64,
    /// A completed record was swept.
    pub record_swept: u64,
    /// A client stopped retrying because its retry budget was spent.
    pub retry_budget_exhausted: u64,
    /// The consumer received a message it had already applied.
    pub message_redelivered: u64,
    /// A second service sent the store an operation the protocol never
    /// asks for, and the store answered (property `store-contract`).
    #[serde(default)]
    pub store_probed: u64,
    /// The dependency declined a charge (402) or refused it for now (429
    /// or 503, with `Retry-After`).
    #[serde(default)]
    pub provider_refused: u64,
    /// The dependency answered a call late (its answer may outlast the
    /// caller's timeout while the charge went through).
    #[serde(default)]
    pub provider_answered_late: u64,
    /// How the operations ended (not a "sometimes" counter).
    #[serde(flatten)]
    pub outcomes: crate::checker::Outcomes,
}

/// A replay at least this long after the completion counts as late.
const LATE_MS: u64 = 3_600_000;

impl Coverage {
    /// The counters as `(name, value)` pairs, in declaration order.
    pub fn counters(&self) -> [(&'static str, u64); 18] {
        [
            ("takeover", self.takeover),
            ("lease_expired_mid_execute", self.lease_expired_mid_execute),
            ("stale_holder_fenced", self.stale_holder_fenced),
            ("duplicate_after_completion", self.duplicate_after_completion),
            ("response_lost_after_commit", self.response_lost_after_commit),
            ("crash_between_effect_and_completion", self.crash_between_effect_and_completion),
            ("replay", self.replay),
            ("mismatch_rejected", self.mismatch_rejected),
            ("in_flight_rejected", self.in_flight_rejected),
            ("reconciler_completed", self.reconciler_completed),
            ("crash_mid_execution", self.crash_mid_execution),
            ("late_replay", self.late_replay),
            ("record_swept", self.record_swept),
            ("retry_budget_exhausted", self.retry_budget_exhausted),
            ("message_redelivered", self.message_redelivered),
            ("store_probed", self.store_probed),
            ("provider_refused", self.provider_refused),
            ("provider_answered_late", self.provider_answered_late),
        ]
    }

    /// Adds another run's counts (for a sweep's totals).
    pub fn add(&mut self, other: &Coverage) {
        self.takeover += other.takeover;
        self.lease_expired_mid_execute += other.lease_expired_mid_execute;
        self.stale_holder_fenced += other.stale_holder_fenced;
        self.duplicate_after_completion += other.duplicate_after_completion;
        self.response_lost_after_commit += other.response_lost_after_commit;
        self.crash_between_effect_and_completion += other.crash_between_effect_and_completion;
        self.replay += other.replay;
        self.mismatch_rejected += other.mismatch_rejected;
        self.in_flight_rejected += other.in_flight_rejected;
        self.reconciler_completed += other.reconciler_completed;
        self.crash_mid_execution += other.crash_mid_execution;
        self.late_replay += other.late_replay;
        self.record_swept += other.record_swept;
        self.retry_budget_exhausted += other.retry_budget_exhausted;
        self.message_redelivered += other.message_redelivered;
        self.store_probed += other.store_probed;
        self.provider_refused += other.provider_refused;
        self.provider_answered_late += other.provider_answered_late;
        self.outcomes.add(&other.outcomes);
    }

    /// The counters in `self` that are zero.
    pub fn missing(&self) -> Vec<&'static str> {
        self.counters().into_iter().filter(|(_, v)| *v == 0).map(|(n, _)| n).collect()
    }

    /// Measures a history.
    pub fn of(history: &History) -> Coverage {
        Coverage::measure(history, &Index::new(history))
    }

    /// [`Coverage::of`] with an index the caller already built.
    pub fn measure(history: &History, index: &Index) -> Coverage {
        let mut tracker = Tracker {
            index,
            window_ms: history.meta.expiry_window_ms,
            begun: crate::lookup::lookup_set(index.record_count()),
            calling: crate::lookup::lookup(index.record_count()),
            holder: vec![None; index.record_count()],
            committed_unanswered: crate::lookup::lookup_set(index.sends()),
            executing: crate::lookup::lookup(index.record_count()),
            completed: vec![None; index.record_count()],
        };
        let mut c = Coverage::default();
        for (i, entry) in history.entries.iter().enumerate() {
            tracker.observe(&mut c, i, entry);
        }
        c.response_lost_after_commit = tracker.committed_unanswered.len() as u64;
        c.outcomes = crate::checker::Outcomes::of_ends(index.op_ends(history));
        c
    }
}

struct Tracker<'i, 'h> {
    index: &'i Index<'h>,
    /// The documented expiry window: a replay after half of it (or an
    /// hour) is late.
    window_ms: u64,
    /// Executions that began (recovery point or downstream call), not finished.
    begun: LookupSet<(RecordId, Attempt)>,
    /// Executions that called the dependency, by the calling node.
    calling: Lookup<(RecordId, Attempt), NodeId>,
    holder: Vec<Option<Attempt>>,
    committed_unanswered: LookupSet<RequestId>,
    /// Unfinished executions started by a request, by record: the server.
    executing: Lookup<RecordId, NodeId>,
    /// When each record completed, if it is completed (by record number).
    completed: Vec<Option<SimTime>>,
}

impl<'i, 'h> Tracker<'i, 'h> {
    fn observe(&mut self, c: &mut Coverage, i: usize, entry: &'h Entry) {
        let record = self.index.record(i);
        let record_of = |_: &Scope| record.expect("an event that names a record is numbered");
        match &entry.event {
            Event::Claimed { scope, attempt, .. } => {
                self.holder[record_of(scope).get()] = Some(*attempt);
            }
            Event::TakenOver { scope, attempt, .. } => {
                c.takeover += 1;
                let record = record_of(scope);
                if let Some(previous) = self.holder[record.get()].replace(*attempt) {
                    c.lease_expired_mid_execute += u64::from(self.begun.contains(&(record, previous)));
                }
            }
            Event::RecoveryPointWritten { scope, attempt, .. } => {
                self.begun.insert((record_of(scope), *attempt));
            }
            Event::DownstreamCalled { scope, attempt, from, .. } => {
                self.begun.insert((record_of(scope), *attempt));
                self.calling.insert((record_of(scope), *attempt), *from);
            }
            Event::WriteFenced { .. } => c.stale_holder_fenced += 1,
            Event::ExecutionStarted { by: Origin::Request { .. }, scope, .. } => {
                self.executing.insert(record_of(scope), entry.node);
            }
            Event::CompletionWritten { scope, attempt, by, .. } => {
                let record = record_of(scope);
                self.executing.remove(&record);
                self.completed[record.get()] = Some(entry.at);
                self.begun.remove(&(record, *attempt));
                self.calling.remove(&(record, *attempt));
                match by {
                    Origin::Request { req, .. } => {
                        self.committed_unanswered.insert(*req);
                    }
                    Origin::Reconciler => c.reconciler_completed += 1,
                    Origin::Sweeper | Origin::Relay => {}
                }
            }
            Event::StoreProbed(_) => c.store_probed += 1,
            Event::DownstreamAnswered { status, delay_ms, .. } => {
                c.provider_refused += u64::from(*status != 200);
                c.provider_answered_late += u64::from(*delay_ms > 0);
            }
            Event::RecordSwept { scope, completed, .. } => {
                c.record_swept += u64::from(*completed);
                self.completed[record_of(scope).get()] = None;
            }
            Event::Released { scope, .. } => {
                let record = record_of(scope);
                self.executing.remove(&record);
                self.completed[record.get()] = None;
            }
            Event::GaveUp { reason, .. } if reason.contains("budget") => c.retry_budget_exhausted += 1,
            Event::MessageConsumed { applied: false, .. } => c.message_redelivered += 1,
            Event::RequestReceived { req, copy, .. } if *copy > 1 && self.scope_completed(*req) => {
                c.duplicate_after_completion += 1;
            }
            Event::ResponseSent { req, answer, .. } => match answer {
                Answer::Replayed => {
                    c.replay += 1;
                    self.observe_late(c, *req, entry.at);
                }
                Answer::Mismatch => c.mismatch_rejected += 1,
                Answer::InFlight => c.in_flight_rejected += 1,
                _ => {}
            },
            Event::ResponseReceived { req, .. } => {
                self.committed_unanswered.remove(req);
            }
            Event::Fault(Fault::Crashed { node }) => {
                let before = self.calling.len();
                self.calling.retain(|_, from| from != node);
                c.crash_between_effect_and_completion += (before - self.calling.len()) as u64;
                let before = self.executing.len();
                self.executing.retain(|_, server| server != node);
                c.crash_mid_execution += (before - self.executing.len()) as u64;
            }
            _ => {}
        }
    }

    /// A replay of a record completed an hour or more before.
    fn observe_late(&self, c: &mut Coverage, req: RequestId, at: SimTime) {
        let completed = self.completed_at(req);
        let late_ms = LATE_MS.min(self.window_ms / 2);
        c.late_replay += u64::from(completed.is_some_and(|completed| at.since_ms(completed) >= late_ms));
    }

    fn scope_completed(&self, req: RequestId) -> bool {
        self.completed_at(req).is_some()
    }

    /// When the record of `req`'s client scope (as the store keyed a
    /// record of that scope) completed, if it is completed.
    fn completed_at(&self, req: RequestId) -> Option<SimTime> {
        let record = self.index.record_of(self.index.request_scope(req)?)?;
        self.completed[record.get()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::history::WriteKind;
    use crate::ids::DownstreamKey;

    #[test]
    fn a_takeover_of_a_begun_execution_and_a_crash_are_counted() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/charges", "{}"));
        s.claimed(by(1, 1), &scope(), "f");
        let call = Event::DownstreamCalled {
            by: by(1, 1),
            from: NodeId::Server(0),
            scope: scope(),
            attempt: Attempt(1),
            downstream_key: DownstreamKey("dk".into()),
        };
        s.at(NodeId::Downstream, call);
        s.at(NodeId::World, Event::Fault(Fault::Crashed { node: NodeId::Server(0) }));
        s.wait(2000);
        s.taken_over(Origin::Reconciler, &scope(), 2);
        s.at(
            NodeId::Db,
            Event::WriteFenced { by: by(1, 1), scope: scope(), attempt: Attempt(1), write: WriteKind::Completion },
        );
        s.completed(Origin::Reconciler, &scope(), 2, ok("x"));
        let c = Coverage::of(&s.history);
        assert_eq!(c.takeover, 1);
        assert_eq!(c.lease_expired_mid_execute, 1);
        assert_eq!(c.crash_between_effect_and_completion, 1);
        assert_eq!(c.stale_holder_fenced, 1);
        assert_eq!(c.reconciler_completed, 1);
        assert!(c.missing().contains(&"replay"));
    }

    #[test]
    fn a_duplicate_after_completion_and_a_lost_response_are_counted() {
        let mut s = Story::new();
        let fp = crate::Fingerprint("f".into());
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.at(NodeId::Server(0), Event::RequestReceived { req: req(1, 1), copy: 1, fingerprint: fp.clone() });
        s.completed(by(1, 1), &scope(), 1, ok("x"));
        s.at(NodeId::Server(1), Event::RequestReceived { req: req(1, 1), copy: 2, fingerprint: fp });
        s.answered(req(1, 1), Answer::Replayed, ok("x"));
        let c = Coverage::of(&s.history);
        assert_eq!(c.duplicate_after_completion, 1);
        assert_eq!(c.response_lost_after_commit, 1);
        assert_eq!(c.replay, 1);
        let mut total = Coverage::default();
        total.add(&c);
        total.add(&c);
        assert_eq!(total.replay, 2);
    }
}
