//! Cutting a history no order explains down to a short witness, in steps
//! that are each sound: what still fails after a step fails in the
//! history the store really gave.

use super::search::{end_states, search};
use super::{Answer, Call, Operation};
use crate::ids::Scope;
use crate::record::{Claim, Takeover, WriteOutcome};
use crate::RefStore;

/// A short history no order explains: `operations` (in invocation order),
/// starting from any of `starts`, the states the key's `before` earlier
/// operations (all returned before the first of these began) can leave the
/// record in.
#[derive(Clone, Debug)]
pub struct Witness {
    /// Operations of the key that came before (each returned before any
    /// of `operations` was invoked): their every order ends in one of
    /// `starts`.
    pub before: usize,
    /// The states the record can stand in when `operations` begin.
    pub starts: Vec<RefStore>,
    /// Operations from which no order explains every answer, from any of
    /// `starts`. Those still running at the moment the history was cut
    /// (step 1 of [`shrink`]) are judged as answers lost.
    pub operations: Vec<Operation>,
    /// The same operations as the store really answered them: an
    /// operation still running at the cut has its later answer here.
    pub as_answered: Vec<Operation>,
    /// Operations without an answer at the cut (still running, or lost)
    /// left out, as the store answered them: with each placed anywhere or
    /// not at all, the rest still has no order.
    pub left_out: Vec<Operation>,
}

impl Witness {
    /// The callers the witness names, ascending.
    pub fn callers(&self) -> Vec<u32> {
        let mut callers: Vec<u32> = self.operations.iter().map(|o| o.caller).collect();
        callers.sort_unstable();
        callers.dedup();
        callers
    }
}

/// A short witness cut from a non-linearizable part of `history`
/// (`operations`, indices into it, all on one key), in four sound steps.
///
/// 1. The shortest prefix in time that fails: the operations invoked
///    before some moment, those still running then taken as answers lost
///    (every prefix of a linearizable history is linearizable).
/// 2. The latest quiet moment (nothing of the key running) after which the
///    rest still fails from every state the operations before it can leave
///    the record in: those are replaced by their end states.
/// 3. One at a time, the operations that change nothing in the model (a
///    read, a claim that found a record, a refused takeover, a fenced
///    write): dropping one removes constraints only.
/// 4. One at a time, the operations without an answer at the cut, where
///    the rest still fails without them (shown apart, as answered).
///
/// Operations that returned having changed the record stay: without them
/// the rest could fail for a reason the store never gave. Past `states_max` states in a step, the step keeps
/// what it had.
pub fn shrink(history: &[Operation], scope: &Scope, operations: &[usize], states_max: usize) -> Witness {
    let mut ops = super::part_of(history, operations, scope);
    ops.sort_by_key(|o| o.invoked_ns);
    let b = &Budget { scope, states_max };
    let judged = shortest_prefix(&ops, b);
    let as_answered = ops[..judged.len()].to_vec();
    let mut witness =
        Witness { before: 0, starts: vec![RefStore::new()], operations: judged, as_answered, left_out: Vec::new() };
    cut_at_quiet_moment(&mut witness, b);
    drop_no_ops(&mut witness, b);
    drop_unanswered(&mut witness, b);
    witness
}

/// The key a witness is cut for, and the search budget of each step.
struct Budget<'a> {
    scope: &'a Scope,
    states_max: usize,
}

/// Whether no order explains `ops` from any of `starts`.
fn fails(ops: &[Operation], starts: &[RefStore], b: &Budget) -> bool {
    let ops: Vec<&Operation> = ops.iter().collect();
    starts.iter().all(|start| search(&ops, b.scope, start, b.states_max) == Some(false))
}

/// Step 1: the operations invoked by some moment (an invocation or a
/// return), those still running then taken as lost, for the earliest
/// moment that fails (binary search: failure is monotone in time).
fn shortest_prefix(ops: &[Operation], b: &Budget) -> Vec<Operation> {
    let empty = [RefStore::new()];
    let mut moments: Vec<u64> = ops.iter().flat_map(|o| [Some(o.invoked_ns), o.returned_ns]).flatten().collect();
    moments.sort_unstable();
    moments.dedup();
    let prefix = |cut: u64| -> Vec<Operation> {
        ops.iter()
            .take_while(|o| o.invoked_ns <= cut)
            .map(|o| match o.returned_ns {
                Some(r) if r <= cut => o.clone(),
                _ => Operation { returned_ns: None, answer: None, ..o.clone() },
            })
            .collect()
    };
    if !fails(ops, &empty, b) {
        return ops.to_vec();
    }
    let (mut lo, mut hi) = (0, moments.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match fails(&prefix(moments[mid]), &empty, b) {
            true => hi = mid,
            false => lo = mid + 1,
        }
    }
    match moments.get(hi) {
        Some(&cut) => prefix(cut),
        None => ops.to_vec(),
    }
}

/// Step 2. A quiet moment is an index `i` where every operation before it
/// returned before operation `i` was invoked: in every order those come
/// first. The end states are carried forward from one quiet moment to the
/// next, and the latest moment whose rest still fails is kept.
fn cut_at_quiet_moment(witness: &mut Witness, b: &Budget) {
    let ops = &witness.operations;
    let mut cuts: Vec<(usize, Vec<RefStore>)> = Vec::new();
    let mut states = witness.starts.clone();
    let (mut last_cut, mut returned_max) = (0, 0u64);
    for i in 1..ops.len() {
        let Some(r) = ops[i - 1].returned_ns else { break };
        returned_max = returned_max.max(r);
        if returned_max > ops[i].invoked_ns {
            continue;
        }
        let Some(next) = states_after(&ops[last_cut..i], &states, b) else { break };
        if next.is_empty() {
            break;
        }
        states = next;
        last_cut = i;
        cuts.push((i, states.clone()));
    }
    for (i, starts) in cuts.into_iter().rev() {
        if fails(&ops[i..], &starts, b) {
            witness.before += i;
            witness.starts = starts;
            witness.operations.drain(..i);
            witness.as_answered.drain(..i);
            return;
        }
    }
}

/// The states `ops` (all returned) can leave the record in from any of
/// `starts`; `None` past the budget.
fn states_after(ops: &[Operation], starts: &[RefStore], b: &Budget) -> Option<Vec<RefStore>> {
    let ops: Vec<&Operation> = ops.iter().collect();
    let mut all: Vec<RefStore> = Vec::new();
    for start in starts {
        for end in end_states(&ops, b.scope, start, b.states_max)? {
            let k = b.scope;
            let same = |s: &RefStore| s.read(k) == end.read(k) && s.tombstone(k) == end.tombstone(k);
            if !all.iter().any(same) {
                all.push(end);
            }
        }
    }
    Some(all)
}

/// Step 3.
fn drop_no_ops(witness: &mut Witness, b: &Budget) {
    let mut k = 0;
    while k < witness.operations.len() {
        if changes_nothing(&witness.operations[k]) {
            let mut without = witness.operations.clone();
            without.remove(k);
            if fails(&without, &witness.starts, b) {
                witness.operations = without;
                witness.as_answered.remove(k);
                continue;
            }
        }
        k += 1;
    }
}

/// Step 4: an operation without an answer at the cut (still running, or
/// lost) may or may not have happened; the witness fails with it placed
/// anywhere or left out, so where the rest fails without it too, it is
/// left out (kept in `left_out`, to be shown apart). Those the store later
/// said changed nothing go first.
fn drop_unanswered(witness: &mut Witness, b: &Budget) {
    for no_ops_only in [true, false] {
        let mut k = 0;
        while k < witness.operations.len() {
            let op = &witness.operations[k];
            if op.answer.is_none() && (!no_ops_only || changes_nothing(&witness.as_answered[k])) {
                let mut without = witness.operations.clone();
                without.remove(k);
                if fails(&without, &witness.starts, b) {
                    witness.operations = without;
                    witness.left_out.push(witness.as_answered.remove(k));
                    continue;
                }
            }
            k += 1;
        }
    }
    witness.left_out.sort_by_key(|o| o.invoked_ns);
}

/// Whether the model's operation changed nothing: told by its answer, or,
/// for a lost answer, by the call (only a read never changes anything).
pub(super) fn changes_nothing(op: &Operation) -> bool {
    match &op.answer {
        None => matches!(op.call, Call::Read { .. }),
        Some(answer) => {
            matches!(
                answer,
                Answer::Record(_)
                    | Answer::Claim(Claim::Existing(_))
                    | Answer::Takeover(Takeover::Refused(_))
                    | Answer::Write(WriteOutcome::Fenced)
            ) || matches!(answer, Answer::Swept(swept) if swept.is_empty())
        }
    }
}
