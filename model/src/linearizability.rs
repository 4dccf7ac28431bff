//! Linearizability of a store's concurrent history against the reference
//! model: is there one order of the operations, consistent with real time
//! (an operation that returned before another was invoked comes first),
//! in which [`RefStore`] gives every answer the store gave?
//!
//! The search is Wing and Gong's, with Lowe's memo of (operations
//! linearized, model state) pairs already explored, as Porcupine and
//! Knossos run it. The history is first cut by key: every operation here
//! names one record, and operations on different records commute, so the
//! history is linearizable exactly when each key's part is
//! (P-compositionality, Herlihy and Wing). An operation whose answer was
//! lost (a timeout, a connection killed mid-commit) may or may not have
//! taken effect, at any time after its invocation: it is linearized if an
//! order needs it, and left out otherwise.
//!
//! A history found not linearizable is cut down ([`shrink`]) to the fewest
//! operations of the failing key that still no order explains.
//!
//! ```
//! use idemsim_model::linearizability::{check, Answer, Call, Operation, Verdict};
//! use idemsim_model::{Claim, Fingerprint, Scope, SimTime};
//! let scope = Scope::new("acme", "k1");
//! let claim = |caller, at: u64, answer| Operation {
//!     caller,
//!     call: Call::Claim { scope: scope.clone(), fingerprint: Fingerprint::of("POST", "/orders", b"{}"), now: SimTime(0), lease_ms: 1_000 },
//!     invoked_ns: at,
//!     returned_ns: Some(at + 10),
//!     answer: Some(Answer::Claim(answer)),
//! };
//! // Two claims of one key, both told they own it: no order explains that.
//! let racy = [claim(0, 0, Claim::Owned(idemsim_model::Attempt(1))), claim(1, 5, Claim::Owned(idemsim_model::Attempt(1)))];
//! assert!(matches!(check(&racy, 1_000_000), Verdict::NotLinearizable { .. }));
//! ```

use crate::ids::{Attempt, Scope, SimTime};
use crate::record::{Claim, Completion, Record, RecoveryPoint, Takeover, WriteOutcome};
use crate::{Fingerprint, RefStore};
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// A store operation and its arguments: what the sequential model replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `claim`.
    Claim {
        /// The record.
        scope: Scope,
        /// The request's fingerprint.
        fingerprint: Fingerprint,
        /// The caller's clock.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// `take_over`.
    TakeOver {
        /// The record.
        scope: Scope,
        /// The attempt the caller saw.
        expected: Attempt,
        /// The caller's clock.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// `write_recovery_point`.
    WriteRecoveryPoint {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The point.
        point: RecoveryPoint,
    },
    /// `complete`.
    Complete {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The completion.
        completion: Completion,
    },
    /// `release`.
    Release {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
    },
    /// `read`.
    Read {
        /// The record.
        scope: Scope,
    },
}

impl Call {
    /// The record the operation names.
    pub fn scope(&self) -> &Scope {
        match self {
            Call::Claim { scope, .. }
            | Call::TakeOver { scope, .. }
            | Call::WriteRecoveryPoint { scope, .. }
            | Call::Complete { scope, .. }
            | Call::Release { scope, .. }
            | Call::Read { scope } => scope,
        }
    }

    /// Runs the operation on the model.
    pub fn apply(&self, model: &mut RefStore) -> Answer {
        match self {
            Call::Claim { scope, fingerprint, now, lease_ms } => {
                Answer::Claim(model.claim(scope, fingerprint, *now, *lease_ms))
            }
            Call::TakeOver { scope, expected, now, lease_ms } => {
                Answer::Takeover(model.take_over(scope, *expected, *now, *lease_ms))
            }
            Call::WriteRecoveryPoint { scope, attempt, point } => {
                Answer::Write(model.write_recovery_point(scope, *attempt, point))
            }
            Call::Complete { scope, attempt, completion } => Answer::Write(model.complete(scope, *attempt, completion)),
            Call::Release { scope, attempt } => Answer::Write(model.release(scope, *attempt)),
            Call::Read { scope } => Answer::Record(model.read(scope)),
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Claim { scope, now, lease_ms, .. } => write!(f, "claim {scope} at {now} for {lease_ms} ms"),
            Call::TakeOver { scope, expected, now, .. } => write!(f, "take_over {scope} expecting {expected} at {now}"),
            Call::WriteRecoveryPoint { scope, attempt, .. } => write!(f, "write_recovery_point {scope} as {attempt}"),
            Call::Complete { scope, attempt, completion } => {
                write!(f, "complete {scope} as {attempt} with {}", completion.response.status)
            }
            Call::Release { scope, attempt } => write!(f, "release {scope} as {attempt}"),
            Call::Read { scope } => write!(f, "read {scope}"),
        }
    }
}

/// What the store answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Of a claim.
    Claim(Claim),
    /// Of a takeover.
    Takeover(Takeover),
    /// Of a fenced write.
    Write(WriteOutcome),
    /// Of a read.
    Record(Option<Record>),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let record = |r: &Record| match r.is_completed() {
            true => format!("completed (attempt {})", r.attempt()),
            false => format!("in progress (attempt {})", r.attempt()),
        };
        match self {
            Answer::Claim(Claim::Owned(a)) => write!(f, "owned, attempt {a}"),
            Answer::Claim(Claim::Existing(r)) => write!(f, "found {}", record(r)),
            Answer::Takeover(Takeover::Granted(a)) => write!(f, "granted attempt {a}"),
            Answer::Takeover(Takeover::Refused(_)) => f.write_str("refused"),
            Answer::Write(WriteOutcome::Applied) => f.write_str("applied"),
            Answer::Write(WriteOutcome::Fenced) => f.write_str("fenced"),
            Answer::Record(None) => f.write_str("no record"),
            Answer::Record(Some(r)) => f.write_str(&record(r)),
        }
    }
}

/// One operation of a concurrent history: who called, what, when it was
/// invoked and when it returned (on one clock, any unit), and the answer.
/// `returned_ns` and `answer` are `None` for an operation whose answer was
/// lost: it may or may not have taken effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// The caller (a task, a connection).
    pub caller: u32,
    /// The operation.
    pub call: Call,
    /// When it was invoked.
    pub invoked_ns: u64,
    /// When it returned; `None` when its answer was lost.
    pub returned_ns: Option<u64>,
    /// Its answer; `None` when it was lost.
    pub answer: Option<Answer>,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self.returned_ns.map_or("never".to_string(), |r| r.to_string());
        let answer = self.answer.as_ref().map_or("answer lost".to_string(), |a| a.to_string());
        write!(f, "caller {}: {} [{} .. {}] -> {answer}", self.caller, self.call, self.invoked_ns, end)
    }
}

/// The checker's conclusion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order consistent with real time explains every answer.
    Linearizable,
    /// No order explains the answers of these operations (indices into the
    /// history given, all on `scope`).
    NotLinearizable {
        /// The key whose operations no order explains.
        scope: Scope,
        /// The operations of that key.
        operations: Vec<usize>,
    },
    /// The search for `scope` was cut off after exploring its budget of
    /// states without an answer.
    Unknown {
        /// The key the search gave up on.
        scope: Scope,
    },
}

/// Checks `history`, key by key, exploring at most `states_max` states per
/// key.
pub fn check(history: &[Operation], states_max: usize) -> Verdict {
    let mut by_key: BTreeMap<&Scope, Vec<usize>> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        by_key.entry(op.call.scope()).or_default().push(i);
    }
    for (scope, ops) in by_key {
        let part: Vec<&Operation> = ops.iter().map(|&i| &history[i]).collect();
        match search(&part, states_max) {
            Some(true) => {}
            Some(false) => return Verdict::NotLinearizable { scope: scope.clone(), operations: ops },
            None => return Verdict::Unknown { scope: scope.clone() },
        }
    }
    Verdict::Linearizable
}

/// A short history no order explains, cut from a non-linearizable part
/// (`operations`, indices into `history`) in two sound steps. First the
/// shortest prefix in time that fails: the operations invoked before some
/// moment, those still running then taken as answers lost (a linearizable
/// history has every such prefix linearizable). Then, one at a time, the
/// operations that change nothing in the model (a read, a claim that found
/// a record, a refused takeover, a fenced write, an answer lost): dropping
/// one removes constraints only, so what still fails without it is still a
/// witness.
/// Operations that changed the record stay: without them the rest would
/// fail for the wrong reason. Returns the operations, in invocation order.
pub fn shrink(history: &[Operation], operations: &[usize], states_max: usize) -> Vec<Operation> {
    let mut ops: Vec<Operation> = operations.iter().map(|&i| history[i].clone()).collect();
    ops.sort_by_key(|o| o.invoked_ns);
    let fails = |part: &[Operation]| search(&part.iter().collect::<Vec<_>>(), states_max) == Some(false);
    // The shortest failing prefix: operations 0..n, cut at the n-th
    // invocation (binary search: a prefix of a linearizable history is
    // linearizable, so failure is monotone in n).
    let prefix = |n: usize| -> Vec<Operation> {
        let cut = ops[n - 1].invoked_ns;
        ops[..n]
            .iter()
            .map(|o| match o.returned_ns {
                Some(r) if r <= cut => o.clone(),
                _ => Operation { returned_ns: None, answer: None, ..o.clone() },
            })
            .collect()
    };
    let (mut lo, mut hi) = (1, ops.len());
    if !fails(&prefix(hi)) {
        return ops;
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        match fails(&prefix(mid)) {
            true => hi = mid,
            false => lo = mid + 1,
        }
    }
    let mut kept = prefix(hi);
    let mut k = 0;
    while k < kept.len() {
        if changes_nothing(&kept[k]) {
            let mut without = kept.clone();
            without.remove(k);
            if fails(&without) {
                kept = without;
                continue;
            }
        }
        k += 1;
    }
    kept
}

/// Whether dropping an operation can only make a failing history fail
/// more plainly: its answer says it changed nothing in the model, or its
/// answer was lost (the search could already leave it out).
fn changes_nothing(op: &Operation) -> bool {
    matches!(
        op.answer,
        None | Some(
            Answer::Record(_)
                | Answer::Claim(Claim::Existing(_))
                | Answer::Takeover(Takeover::Refused(_))
                | Answer::Write(WriteOutcome::Fenced)
        )
    )
}

/// One call or return in time order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    op: usize,
    is_call: bool,
}

/// `Some(true)` when an order explains every answer of `ops` (all on one
/// key), `Some(false)` when none does, `None` past `states_max`.
fn search(ops: &[&Operation], states_max: usize) -> Option<bool> {
    // Calls and returns in time order; at a tie a return comes first (the
    // operation that returned is over before the other began). A lost
    // answer returns after everything.
    let mut entries: Vec<(u64, bool, usize)> = Vec::with_capacity(ops.len() * 2);
    for (i, op) in ops.iter().enumerate() {
        entries.push((op.invoked_ns, true, i));
        entries.push((op.returned_ns.unwrap_or(u64::MAX), false, i));
    }
    entries.sort_by_key(|&(at, is_call, i)| (at, is_call, i));
    let entries: Vec<Entry> = entries.into_iter().map(|(_, is_call, op)| Entry { op, is_call }).collect();
    let mut ret_of = vec![0usize; ops.len()];
    for (k, e) in entries.iter().enumerate().filter(|(_, e)| !e.is_call) {
        ret_of[e.op] = k;
    }
    let mut list = Links::new(entries.len());
    let mut model = RefStore::new();
    let mut linearized = vec![0u64; ops.len().div_ceil(64)];
    let mut seen: HashSet<(Vec<u64>, u64)> = HashSet::new();
    let mut stack: Vec<(usize, RefStore)> = Vec::new();
    let mut entry = list.head;
    while !list.is_empty() {
        if seen.len() > states_max {
            return None;
        }
        // The list always ends on a return (an operation returns after it
        // is invoked), so the walk meets one before it runs off the end.
        let e = entries[entry];
        if !e.is_call {
            if ops[e.op].returned_ns.is_none() {
                // Only lost answers are left: every operation that
                // returned is linearized.
                return Some(true);
            }
            // An operation returned before any order placed it: take back
            // the last placed one, and try the call after it.
            let Some((k, before)) = stack.pop() else { return Some(false) };
            let op = entries[k].op;
            linearized[op / 64] &= !(1 << (op % 64));
            model = before;
            list.unlift(k, ret_of[op]);
            entry = list.next[k];
            continue;
        }
        let op = ops[e.op];
        let mut after = model.clone();
        let answer = op.call.apply(&mut after);
        if op.answer.as_ref().is_none_or(|a| *a == answer) {
            linearized[e.op / 64] |= 1 << (e.op % 64);
            if seen.insert((linearized.clone(), state_hash(&after, op.call.scope()))) {
                stack.push((entry, std::mem::replace(&mut model, after)));
                list.lift(entry, ret_of[e.op]);
                entry = list.head;
                continue;
            }
            linearized[e.op / 64] &= !(1 << (e.op % 64));
        }
        entry = list.next[entry];
    }
    Some(true)
}

/// A doubly linked list over the entries (by index), from which an
/// operation's call and return are lifted when it is placed, and put back
/// in place when it is taken back.
struct Links {
    head: usize,
    next: Vec<usize>,
    prev: Vec<usize>,
}

impl Links {
    /// Entries `0..n` in order; `n` stands for the end, `usize::MAX` for
    /// before the head.
    fn new(n: usize) -> Links {
        Links { head: 0, next: (1..=n).collect(), prev: (0..n).map(|i| i.wrapping_sub(1)).collect() }
    }

    fn is_empty(&self) -> bool {
        self.head >= self.next.len()
    }

    fn lift(&mut self, call: usize, ret: usize) {
        self.unlink(call);
        self.unlink(ret);
    }

    /// Undoes [`Links::lift`]: in the reverse order, so each entry's
    /// neighbours are the ones it had.
    fn unlift(&mut self, call: usize, ret: usize) {
        self.relink(ret);
        self.relink(call);
    }

    fn unlink(&mut self, k: usize) {
        let (p, q) = (self.prev[k], self.next[k]);
        match p {
            usize::MAX => self.head = q,
            p => self.next[p] = q,
        }
        if q < self.next.len() {
            self.prev[q] = p;
        }
    }

    fn relink(&mut self, k: usize) {
        let (p, q) = (self.prev[k], self.next[k]);
        match p {
            usize::MAX => self.head = k,
            p => self.next[p] = k,
        }
        if q < self.next.len() {
            self.prev[q] = k;
        }
    }
}

/// A hash of the model's state for one key: its record and its tombstone
/// (FNV-1a over their debug text: the same state, the same hash).
fn state_hash(model: &RefStore, scope: &Scope) -> u64 {
    let text = format!("{:?}{:?}", model.read(scope), model.tombstone(scope));
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordState;
    use crate::StoredResponse;

    fn scope() -> Scope {
        Scope::new("acme", "k1")
    }

    fn fp() -> Fingerprint {
        Fingerprint::of("POST", "/orders", b"{}")
    }

    fn op(caller: u32, call: Call, span: (u64, u64), answer: Answer) -> Operation {
        Operation { caller, call, invoked_ns: span.0, returned_ns: Some(span.1), answer: Some(answer) }
    }

    fn claim(caller: u32, span: (u64, u64), answer: Claim) -> Operation {
        let call = Call::Claim { scope: scope(), fingerprint: fp(), now: SimTime(0), lease_ms: 1_000 };
        op(caller, call, span, Answer::Claim(answer))
    }

    fn complete(caller: u32, span: (u64, u64), attempt: u32, outcome: WriteOutcome) -> Operation {
        let completion =
            Completion { response: StoredResponse::new(201, "{}"), local_effect: None, outbox: Vec::new() };
        let call = Call::Complete { scope: scope(), attempt: Attempt(attempt), completion };
        op(caller, call, span, Answer::Write(outcome))
    }

    fn in_progress() -> Record {
        let state = RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(1_000), recovery_point: None };
        Record { fingerprint: fp(), created_at: SimTime(0), state }
    }

    #[test]
    fn overlapping_claims_are_ordered_by_their_answers() {
        // The second claim overlaps the first and found its record: the
        // order first, then second explains both.
        let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), claim(1, (5, 15), Claim::Existing(in_progress()))];
        assert_eq!(check(&h, 10_000), Verdict::Linearizable);
        // Reversed real time: the finder returned before the owner began.
        let h = [claim(1, (0, 4), Claim::Existing(in_progress())), claim(0, (5, 10), Claim::Owned(Attempt(1)))];
        assert!(matches!(check(&h, 10_000), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn two_owners_of_one_key_are_caught_and_shrink_to_the_pair() {
        let mut h = vec![claim(0, (0, 10), Claim::Owned(Attempt(1))), claim(1, (2, 12), Claim::Owned(Attempt(1)))];
        h.push(complete(0, (20, 30), 1, WriteOutcome::Applied));
        h.push(op(2, Call::Read { scope: Scope::new("acme", "k2") }, (0, 1), Answer::Record(None)));
        let Verdict::NotLinearizable { scope: s, operations } = check(&h, 10_000) else { panic!("caught") };
        assert_eq!(s, scope());
        // The completion after both claims is not needed to show it.
        assert_eq!(shrink(&h, &operations, 10_000), h[..2].to_vec());
    }

    #[test]
    fn a_lost_answer_may_or_may_not_have_taken_effect() {
        // A completion whose answer was lost, then a read that saw it done:
        // it took effect.
        let mut lost = complete(0, (20, 30), 1, WriteOutcome::Applied);
        (lost.returned_ns, lost.answer) = (None, None);
        let read = |answer| op(1, Call::Read { scope: scope() }, (40, 50), Answer::Record(answer));
        let mut done = in_progress();
        done.state = RecordState::Completed { response: StoredResponse::new(201, "{}"), attempt: Attempt(1) };
        let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), lost.clone(), read(Some(done))];
        assert_eq!(check(&h, 10_000), Verdict::Linearizable);
        // Or it did not.
        let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), lost, read(Some(in_progress()))];
        assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    }

    #[test]
    fn a_completion_applied_twice_is_caught() {
        let h = [
            claim(0, (0, 10), Claim::Owned(Attempt(1))),
            complete(0, (20, 30), 1, WriteOutcome::Applied),
            complete(1, (40, 50), 1, WriteOutcome::Applied),
        ];
        assert!(matches!(check(&h, 10_000), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn a_budget_too_small_says_unknown_not_clean() {
        let h: Vec<Operation> = (0..8).map(|c| claim(c, (0, 100), Claim::Existing(in_progress()))).collect();
        let mut h = h;
        h.push(claim(9, (0, 100), Claim::Owned(Attempt(1))));
        assert_eq!(check(&h, 10_000), Verdict::Linearizable);
        assert!(matches!(check(&h, 2), Verdict::Unknown { .. }));
    }
}
