//! The sequential reference store: the oracle every real store is compared to.

use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, MessageId, Scope, SimTime};
use crate::lookup::Lookup;
use crate::record::{
    Claim, Completion, LocalEffect, OutboxEntry, OutboxMessage, Record, RecordState, RecoveryPoint, Takeover,
    WriteOutcome,
};

/// The store operations of docs/protocol.md §4 to §8 over hash maps, one
/// at a time. Each method is the specification of the store-trait method
/// of the same name.
///
/// Records are looked up by scope (every operation does so once) in a map
/// with a fixed hasher; the scans that answer in scope order (`sweep`,
/// `stale_in_progress`) filter the map and sort what they found, so no hash
/// order reaches an answer. (A B-tree cost a dozen string comparisons a
/// look-up.)
#[derive(Clone, Debug, Default)]
pub struct RefStore {
    records: Lookup<Scope, Record>,
    /// Released records leave a tombstone with their attempt, so a later
    /// claim of the key continues the count: a fencing token is never
    /// reused for a key (deleting the row would reset it to 1, letting a
    /// stale holder of the old record write into the new one).
    tombstones: Lookup<Scope, (Attempt, SimTime)>,
    effects: Lookup<Scope, Vec<LocalEffect>>,
    outbox: Vec<(OutboxEntry, bool)>,
}

impl RefStore {
    /// An empty store.
    pub fn new() -> RefStore {
        RefStore::default()
    }

    /// Atomic insert-if-absent. The inserter owns the execution with a lease
    /// until `now + lease_ms`, holding attempt 1, or one more than a released
    /// record of the same key held; anyone else gets the existing record.
    pub fn claim(&mut self, scope: &Scope, fingerprint: &Fingerprint, now: SimTime, lease_ms: u64) -> Claim {
        if let Some(existing) = self.records.get(scope) {
            return Claim::Existing(existing.clone());
        }
        let attempt = self.tombstones.remove(scope).map_or(Attempt::FIRST, |(a, _)| a.next());
        let state = RecordState::InProgress { attempt, locked_until: now.plus_ms(lease_ms), recovery_point: None };
        self.records.insert(scope.clone(), Record { fingerprint: fingerprint.clone(), created_at: now, state });
        Claim::Owned(attempt)
    }

    /// Takes over an `in_progress` record whose lease expired (`locked_until
    /// <= now`) and whose attempt is still `expected`: bumps the attempt and
    /// renews the lease, keeping the recovery point.
    pub fn take_over(&mut self, scope: &Scope, expected: Attempt, now: SimTime, lease_ms: u64) -> Takeover {
        let Some(record) = self.records.get_mut(scope) else {
            return Takeover::Refused(None);
        };
        match &mut record.state {
            RecordState::InProgress { attempt, locked_until, .. } if *attempt == expected && *locked_until <= now => {
                *attempt = attempt.next();
                *locked_until = now.plus_ms(lease_ms);
                Takeover::Granted(*attempt)
            }
            _ => Takeover::Refused(Some(record.clone())),
        }
    }

    /// Records where an execution got to, if `attempt` still holds the record.
    pub fn write_recovery_point(&mut self, scope: &Scope, attempt: Attempt, point: &RecoveryPoint) -> WriteOutcome {
        match self.held_state(scope, attempt) {
            Some(RecordState::InProgress { recovery_point, .. }) => {
                *recovery_point = Some(point.clone());
                WriteOutcome::Applied
            }
            _ => WriteOutcome::Fenced,
        }
    }

    /// Marks the record completed with the response, and commits the local
    /// effect and outbox messages with it, if `attempt` still holds it.
    pub fn complete(&mut self, scope: &Scope, attempt: Attempt, completion: &Completion) -> WriteOutcome {
        let Some(state) = self.held_state(scope, attempt) else {
            return WriteOutcome::Fenced;
        };
        *state = RecordState::Completed { response: completion.response.clone(), attempt };
        if let Some(effect) = &completion.local_effect {
            self.effects.entry(scope.clone()).or_default().push(effect.clone());
        }
        for message in &completion.outbox {
            let entry = OutboxEntry { scope: scope.clone(), message: message.clone() };
            self.outbox.push((entry, false));
        }
        WriteOutcome::Applied
    }

    /// Queues outbox messages for `scope` on their own, outside any
    /// completion (an application that writes its outbox row in a
    /// transaction of its own): nothing about the record is checked.
    pub fn stage_outbox(&mut self, scope: &Scope, messages: &[OutboxMessage]) {
        for message in messages {
            let entry = OutboxEntry { scope: scope.clone(), message: message.clone() };
            self.outbox.push((entry, false));
        }
    }

    /// The tombstone a released record of `scope` left: its attempt, and
    /// when it was created.
    pub fn tombstone(&self, scope: &Scope) -> Option<(Attempt, SimTime)> {
        self.tombstones.get(scope).copied()
    }

    /// Releases the record (an execution that must not be stored, such as a
    /// validation error), if `attempt` still holds it: the key reads as
    /// absent again, and a tombstone keeps the attempt count.
    pub fn release(&mut self, scope: &Scope, attempt: Attempt) -> WriteOutcome {
        if self.held_state(scope, attempt).is_none() {
            return WriteOutcome::Fenced;
        }
        if let Some(record) = self.records.remove(scope) {
            self.tombstones.insert(scope.clone(), (attempt, record.created_at));
        }
        WriteOutcome::Applied
    }

    /// The record, if any.
    pub fn read(&self, scope: &Scope) -> Option<Record> {
        self.records.get(scope).cloned()
    }

    /// Puts `record` under `scope`, replacing any: the state a check
    /// starts from (a probe's judgement starts from the record the store
    /// returned).
    pub fn put(&mut self, scope: &Scope, record: Record) {
        self.records.insert(scope.clone(), record);
    }

    /// The record, to change in place: a building block for a store with
    /// one deliberate difference from this one (the operations above never
    /// need it, and a store that uses it is judged like any other).
    pub fn record_mut(&mut self, scope: &Scope) -> Option<&mut Record> {
        self.records.get_mut(scope)
    }

    /// Local effect rows committed for a scope, oldest first.
    pub fn effects(&self, scope: &Scope) -> Vec<LocalEffect> {
        self.effects.get(scope).cloned().unwrap_or_default()
    }

    /// Deletes `completed` records created at or before `now - window_ms`;
    /// never touches `in_progress` ones. Returns the swept records as they
    /// were, in scope order. Tombstones as old go too, silently.
    pub fn sweep(&mut self, now: SimTime, window_ms: u64) -> Vec<(Scope, Record)> {
        self.tombstones.retain(|_, (_, created_at)| created_at.plus_ms(window_ms) > now);
        let mut expired: Vec<Scope> = self
            .records
            .iter()
            .filter(|(_, r)| r.is_completed() && r.created_at.plus_ms(window_ms) <= now)
            .map(|(s, _)| s.clone())
            .collect();
        expired.sort_unstable();
        expired
            .into_iter()
            .filter_map(|scope| {
                let record = self.records.remove(&scope)?;
                Some((scope, record))
            })
            .collect()
    }

    /// `in_progress` records whose lease expired at or before `now`, in scope
    /// order, at most `limit`.
    pub fn stale_in_progress(&self, now: SimTime, limit: usize) -> Vec<(Scope, Record)> {
        let mut stale: Vec<(&Scope, &Record)> = self
            .records
            .iter()
            .filter(|(_, r)| matches!(r.state, RecordState::InProgress { locked_until, .. } if locked_until <= now))
            .collect();
        stale.sort_unstable_by(|a, b| a.0.cmp(b.0));
        stale.into_iter().take(limit).map(|(s, r)| (s.clone(), r.clone())).collect()
    }

    /// Unpublished outbox messages in commit order, at most `limit`.
    pub fn outbox_pending(&self, limit: usize) -> Vec<OutboxEntry> {
        self.outbox.iter().filter(|(_, published)| !published).take(limit).map(|(e, _)| e.clone()).collect()
    }

    /// Marks a message published; false if no such message exists.
    pub fn outbox_mark_published(&mut self, id: &MessageId) -> bool {
        match self.outbox.iter_mut().find(|(e, _)| e.message.id == *id) {
            Some((_, published)) => {
                *published = true;
                true
            }
            None => false,
        }
    }

    /// The state of `scope` if it is `in_progress` held by `attempt`.
    fn held_state(&mut self, scope: &Scope, attempt: Attempt) -> Option<&mut RecordState> {
        let record = self.records.get_mut(scope)?;
        match record.state {
            RecordState::InProgress { attempt: holder, .. } if holder == attempt => Some(&mut record.state),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::StoredResponse;
    use crate::DownstreamKey;

    const LEASE: u64 = 100;

    fn fp() -> Fingerprint {
        Fingerprint("f".into())
    }

    fn done(body: &str) -> Completion {
        Completion { response: StoredResponse::new(201, body), local_effect: None, outbox: vec![] }
    }

    #[test]
    fn first_claim_owns_second_sees_the_record() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        assert_eq!(s.claim(&scope, &fp(), SimTime(10), LEASE), Claim::Owned(Attempt::FIRST));
        let Claim::Existing(r) = s.claim(&scope, &fp(), SimTime(11), LEASE) else { panic!("expected existing") };
        assert_eq!(r.created_at, SimTime(10));
        assert_eq!(
            r.state,
            RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(110), recovery_point: None }
        );
    }

    #[test]
    fn takeover_needs_an_expired_lease_and_the_current_attempt() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        s.claim(&scope, &fp(), SimTime(0), LEASE);
        assert!(matches!(s.take_over(&scope, Attempt(1), SimTime(99), LEASE), Takeover::Refused(Some(_))));
        assert_eq!(s.take_over(&scope, Attempt(1), SimTime(100), LEASE), Takeover::Granted(Attempt(2)));
        // The old attempt can no longer take over, write or complete.
        assert!(matches!(s.take_over(&scope, Attempt(1), SimTime(500), LEASE), Takeover::Refused(Some(_))));
        let rp = RecoveryPoint { downstream_key: DownstreamKey("dk".into()), data: crate::Bytes::text("{}") };
        assert_eq!(s.write_recovery_point(&scope, Attempt(1), &rp), WriteOutcome::Fenced);
        assert_eq!(s.complete(&scope, Attempt(1), &done("stale")), WriteOutcome::Fenced);
        assert_eq!(s.release(&scope, Attempt(1)), WriteOutcome::Fenced);
        assert_eq!(s.write_recovery_point(&scope, Attempt(2), &rp), WriteOutcome::Applied);
        assert_eq!(s.complete(&scope, Attempt(2), &done("fresh")), WriteOutcome::Applied);
        let r = s.read(&scope).unwrap();
        assert_eq!(
            r.state,
            RecordState::Completed { response: StoredResponse::new(201, "fresh"), attempt: Attempt(2) }
        );
        assert!(matches!(s.take_over(&scope, Attempt(2), SimTime(10_000), LEASE), Takeover::Refused(Some(_))));
        assert_eq!(s.take_over(&Scope::new("a", "none"), Attempt(1), SimTime(0), LEASE), Takeover::Refused(None));
    }

    #[test]
    fn a_completed_record_never_changes() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        s.claim(&scope, &fp(), SimTime(0), LEASE);
        assert_eq!(s.complete(&scope, Attempt(1), &done("one")), WriteOutcome::Applied);
        assert_eq!(s.complete(&scope, Attempt(1), &done("two")), WriteOutcome::Fenced);
        assert_eq!(s.release(&scope, Attempt(1)), WriteOutcome::Fenced);
        assert!(
            matches!(s.read(&scope).unwrap().state, RecordState::Completed { ref response, .. } if response.body.0 == b"one")
        );
    }

    #[test]
    fn release_frees_the_key_for_a_corrected_retry() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        s.claim(&scope, &fp(), SimTime(0), LEASE);
        assert_eq!(s.release(&scope, Attempt(1)), WriteOutcome::Applied);
        assert_eq!(s.read(&scope), None);
        // The attempt count goes on: a stale holder of attempt 1 stays fenced.
        assert_eq!(s.claim(&scope, &Fingerprint("g".into()), SimTime(1), LEASE), Claim::Owned(Attempt(2)));
        assert_eq!(s.complete(&scope, Attempt(1), &done("stale")), WriteOutcome::Fenced);
        assert_eq!(s.complete(&scope, Attempt(2), &done("fresh")), WriteOutcome::Applied);
    }

    #[test]
    fn old_tombstones_are_swept_silently() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        s.claim(&scope, &fp(), SimTime(0), LEASE);
        s.release(&scope, Attempt(1));
        assert_eq!(s.sweep(SimTime(5_000), 1_000), Vec::<(Scope, Record)>::new());
        assert_eq!(s.claim(&scope, &fp(), SimTime(5_001), LEASE), Claim::Owned(Attempt::FIRST));
    }

    #[test]
    fn completion_commits_effect_and_outbox_together() {
        let mut s = RefStore::new();
        let scope = Scope::new("a", "k");
        s.claim(&scope, &fp(), SimTime(0), LEASE);
        let msg =
            crate::OutboxMessage { id: MessageId("m1".into()), topic: "t".into(), payload: crate::Bytes::text("p") };
        let effect = LocalEffect { id: "order-1".into(), data: crate::Bytes::text("row") };
        let c = Completion {
            response: StoredResponse::new(201, "ok"),
            local_effect: Some(effect.clone()),
            outbox: vec![msg],
        };
        assert_eq!(s.complete(&scope, Attempt(2), &c), WriteOutcome::Fenced);
        assert!(s.effects(&scope).is_empty() && s.outbox_pending(10).is_empty());
        assert_eq!(s.complete(&scope, Attempt(1), &c), WriteOutcome::Applied);
        assert_eq!(s.effects(&scope), vec![effect]);
        assert_eq!(s.outbox_pending(10).len(), 1);
        assert!(s.outbox_mark_published(&MessageId("m1".into())));
        assert!(!s.outbox_mark_published(&MessageId("nope".into())));
        assert!(s.outbox_pending(10).is_empty());
    }

    #[test]
    fn sweep_removes_only_old_completed_records() {
        let mut s = RefStore::new();
        let (old, young, open) = (Scope::new("a", "old"), Scope::new("a", "young"), Scope::new("a", "open"));
        s.claim(&old, &fp(), SimTime(0), LEASE);
        s.complete(&old, Attempt(1), &done("x"));
        s.claim(&open, &fp(), SimTime(0), LEASE);
        s.claim(&young, &fp(), SimTime(50), LEASE);
        s.complete(&young, Attempt(1), &done("y"));
        let swept = s.sweep(SimTime(1000), 1000);
        assert_eq!(
            swept.iter().map(|(s, r)| (s.clone(), r.is_completed())).collect::<Vec<_>>(),
            vec![(old.clone(), true)]
        );
        assert_eq!(s.read(&old), None);
        assert!(s.read(&open).is_some() && s.read(&young).is_some());
        assert_eq!(s.stale_in_progress(SimTime(1000), 10).len(), 1);
        assert_eq!(s.stale_in_progress(SimTime(99), 10).len(), 0);
    }
}
