//! "Sometimes" coverage: counts of the interesting interleavings a run
//! actually reached, so a clean verdict is never vacuous.

use crate::checker::{Index, RecordId};
use crate::history::{Answer, Entry, Event, Fault, History, Origin};
use crate::ids::{Attempt, NodeId, RequestId, Scope, SimTime};
use crate::lookup::{Lookup, LookupSet};
use crate::Sometimes;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How often each interesting interleaving happened: a count per
/// [`Sometimes`], indexed by it (`coverage[Sometimes::Takeover]`), and how
/// the operations ended. Its JSON is a flat object: each counter's name,
/// then the outcomes' fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    counts: [u64; Sometimes::COUNT],
    /// How the operations ended (not a "sometimes" counter).
    pub outcomes: crate::checker::Outcomes,
}

impl std::ops::Index<Sometimes> for Coverage {
    type Output = u64;
    fn index(&self, s: Sometimes) -> &u64 {
        &self.counts[s.index()]
    }
}

impl std::ops::IndexMut<Sometimes> for Coverage {
    fn index_mut(&mut self, s: Sometimes) -> &mut u64 {
        &mut self.counts[s.index()]
    }
}

/// The counters as a JSON map, in list order.
struct Counters<'a>(&'a Coverage);

impl Serialize for Counters<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Sometimes::COUNT))?;
        for s in Sometimes::ALL {
            map.serialize_entry(s.name(), &self.0[s])?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Flat<'a> {
    #[serde(flatten)]
    counters: Counters<'a>,
    #[serde(flatten)]
    outcomes: &'a crate::checker::Outcomes,
}

impl Serialize for Coverage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Flat { counters: Counters(self), outcomes: &self.outcomes }.serialize(serializer)
    }
}

#[derive(Deserialize)]
struct Raw {
    #[serde(flatten)]
    outcomes: crate::checker::Outcomes,
    /// Counters by name; one missing (from a report written before it
    /// existed) counts zero, one unknown is ignored.
    #[serde(flatten)]
    counters: std::collections::BTreeMap<String, u64>,
}

impl<'de> Deserialize<'de> for Coverage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Coverage, D::Error> {
        let raw = Raw::deserialize(deserializer)?;
        let mut c = Coverage { outcomes: raw.outcomes, ..Coverage::default() };
        for (name, n) in raw.counters {
            if let Some(s) = Sometimes::from_name(&name) {
                c[s] = n;
            }
        }
        Ok(c)
    }
}

/// A replay at least this long after the completion counts as late.
const LATE_MS: u64 = 3_600_000;

impl Coverage {
    /// The counters as `(name, value)` pairs, in list order.
    pub fn counters(&self) -> [(&'static str, u64); Sometimes::COUNT] {
        Sometimes::ALL.map(|s| (s.name(), self[s]))
    }

    /// Adds another run's counts (for a sweep's totals).
    pub fn add(&mut self, other: &Coverage) {
        for s in Sometimes::ALL {
            self[s] += other[s];
        }
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
        c[Sometimes::ResponseLostAfterCommit] = tracker.committed_unanswered.len() as u64;
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
                c[Sometimes::Takeover] += 1;
                let record = record_of(scope);
                if let Some(previous) = self.holder[record.get()].replace(*attempt) {
                    c[Sometimes::LeaseExpiredMidExecute] += u64::from(self.begun.contains(&(record, previous)));
                }
            }
            Event::RecoveryPointWritten { scope, attempt, .. } => {
                self.begun.insert((record_of(scope), *attempt));
            }
            Event::DownstreamCalled { scope, attempt, from, .. } => {
                self.begun.insert((record_of(scope), *attempt));
                self.calling.insert((record_of(scope), *attempt), *from);
            }
            Event::WriteFenced { .. } => c[Sometimes::StaleHolderFenced] += 1,
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
                    Origin::Reconciler => c[Sometimes::ReconcilerCompleted] += 1,
                    Origin::Sweeper | Origin::Relay => {}
                }
            }
            Event::StoreProbed(_) => c[Sometimes::StoreProbed] += 1,
            Event::DownstreamAnswered { status, delay_ms, .. } => {
                c[Sometimes::ProviderRefused] += u64::from(*status != 200);
                c[Sometimes::ProviderAnsweredLate] += u64::from(*delay_ms > 0);
            }
            Event::RecordSwept { scope, completed, .. } => {
                c[Sometimes::RecordSwept] += u64::from(*completed);
                self.completed[record_of(scope).get()] = None;
            }
            Event::Released { scope, .. } => {
                let record = record_of(scope);
                self.executing.remove(&record);
                self.completed[record.get()] = None;
            }
            Event::GaveUp { reason, .. } if reason.contains("budget") => c[Sometimes::RetryBudgetExhausted] += 1,
            Event::MessageConsumed { applied: false, .. } => c[Sometimes::MessageRedelivered] += 1,
            Event::RequestReceived { req, copy, .. } if *copy > 1 && self.scope_completed(*req) => {
                c[Sometimes::DuplicateAfterCompletion] += 1;
            }
            Event::ResponseSent { req, answer, .. } => match answer {
                Answer::Replayed => {
                    c[Sometimes::Replay] += 1;
                    self.observe_late(c, *req, entry.at);
                }
                Answer::Mismatch => c[Sometimes::MismatchRejected] += 1,
                Answer::InFlight => c[Sometimes::InFlightRejected] += 1,
                _ => {}
            },
            Event::ResponseReceived { req, .. } => {
                self.committed_unanswered.remove(req);
            }
            Event::Fault(Fault::Crashed { node }) => {
                let before = self.calling.len();
                self.calling.retain(|_, from| from != node);
                c[Sometimes::CrashBetweenEffectAndCompletion] += (before - self.calling.len()) as u64;
                let before = self.executing.len();
                self.executing.retain(|_, server| server != node);
                c[Sometimes::CrashMidExecution] += (before - self.executing.len()) as u64;
            }
            _ => {}
        }
    }

    /// A replay of a record completed an hour or more before.
    fn observe_late(&self, c: &mut Coverage, req: RequestId, at: SimTime) {
        let completed = self.completed_at(req);
        let late_ms = LATE_MS.min(self.window_ms / 2);
        c[Sometimes::LateReplay] += u64::from(completed.is_some_and(|completed| at.since_ms(completed) >= late_ms));
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
        assert_eq!(c[Sometimes::Takeover], 1);
        assert_eq!(c[Sometimes::LeaseExpiredMidExecute], 1);
        assert_eq!(c[Sometimes::CrashBetweenEffectAndCompletion], 1);
        assert_eq!(c[Sometimes::StaleHolderFenced], 1);
        assert_eq!(c[Sometimes::ReconcilerCompleted], 1);
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
        assert_eq!(c[Sometimes::DuplicateAfterCompletion], 1);
        assert_eq!(c[Sometimes::ResponseLostAfterCommit], 1);
        assert_eq!(c[Sometimes::Replay], 1);
        let mut total = Coverage::default();
        total.add(&c);
        total.add(&c);
        assert_eq!(total[Sometimes::Replay], 2);
        // The JSON is flat, every counter by name then the outcomes, and
        // reads back; a counter a report does not have counts zero.
        let json = serde_json::to_value(&total).unwrap();
        assert_eq!(json["replay"], 2);
        assert_eq!(json.as_object().unwrap().len(), Sometimes::COUNT + 4, "{json}");
        assert_eq!(serde_json::from_value::<Coverage>(json).unwrap(), total);
        let old: Coverage =
            serde_json::from_str(r#"{"replay": 3, "operations": 1, "acknowledged": 1, "gave_up": 0, "errors": 0}"#)
                .unwrap();
        assert_eq!((old[Sometimes::Replay], old[Sometimes::StoreProbed], old.outcomes.operations), (3, 0, 1));
    }
}
