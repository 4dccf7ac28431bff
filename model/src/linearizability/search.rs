//! The search: Wing and Gong's walk over the orders consistent with real
//! time, with Lowe's memo of (operations placed, model state).

use super::Operation;
use crate::ids::Scope;
use crate::RefStore;
use std::collections::HashSet;

/// One call or return in time order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    op: usize,
    is_call: bool,
}

/// `Some(true)` when an order explains every answer of `ops` (the part of
/// `scope`) starting from `start`, `Some(false)` when none does, `None` past
/// `states_max`.
pub(super) fn search(ops: &[&Operation], scope: &Scope, start: &RefStore, states_max: usize) -> Option<bool> {
    explore(ops, scope, start, states_max, |_| true)
}

/// Every state (of the key) an order explaining every answer of `ops` can
/// leave the model in, starting from `start`: `Some(vec![])` when no order
/// explains them, `None` past `states_max`. Meant for operations that all
/// returned: an operation whose answer was lost is left out of every order.
pub(super) fn end_states(
    ops: &[&Operation],
    scope: &Scope,
    start: &RefStore,
    states_max: usize,
) -> Option<Vec<RefStore>> {
    let mut ends: Vec<RefStore> = Vec::new();
    let mut hashes: HashSet<u64> = HashSet::new();
    let found = explore(ops, scope, start, states_max, |model| {
        if hashes.insert(state_hash(model, scope)) {
            ends.push(model.clone());
        }
        false
    })?;
    debug_assert!(!found);
    Some(ends)
}

/// Wing and Gong's search with Lowe's memo: walks the orders consistent
/// with real time, calling `at_end` with the model after each order that
/// explains every returned answer; stops with `Some(true)` when `at_end`
/// says so, `Some(false)` when every order is walked, `None` past
/// `states_max` memoised states.
fn explore(
    ops: &[&Operation],
    scope: &Scope,
    start: &RefStore,
    states_max: usize,
    mut at_end: impl FnMut(&RefStore) -> bool,
) -> Option<bool> {
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
    let mut model = start.clone();
    let mut linearized = vec![0u64; ops.len().div_ceil(64)];
    let mut seen: HashSet<(Vec<u64>, u64)> = HashSet::new();
    let mut stack: Vec<(usize, RefStore)> = Vec::new();
    let mut entry = list.head;
    loop {
        if seen.len() > states_max {
            return None;
        }
        // The list always ends on a return (an operation returns after it
        // is invoked), so the walk meets one before it runs off the end;
        // lost answers return last, so meeting one means every operation
        // that returned is placed.
        let done = list.is_empty() || (!entries[entry].is_call && ops[entries[entry].op].returned_ns.is_none());
        if done && at_end(&model) {
            return Some(true);
        }
        if done || !entries[entry].is_call {
            // An order is complete, or an operation returned before any
            // order placed it: take back the last placed one, and try the
            // call after it.
            let Some((k, before)) = stack.pop() else { return Some(false) };
            let op = entries[k].op;
            linearized[op / 64] &= !(1 << (op % 64));
            model = before;
            list.unlift(k, ret_of[op]);
            entry = list.next[k];
            continue;
        }
        let e = entries[entry];
        let op = ops[e.op];
        let mut after = model.clone();
        let answer = op.call.apply(&mut after);
        if op.answer.as_ref().is_none_or(|a| *a == answer) {
            linearized[e.op / 64] |= 1 << (e.op % 64);
            if seen.insert((linearized.clone(), state_hash(&after, scope))) {
                stack.push((entry, std::mem::replace(&mut model, after)));
                list.lift(entry, ret_of[e.op]);
                entry = list.head;
                continue;
            }
            linearized[e.op / 64] &= !(1 << (e.op % 64));
        }
        entry = list.next[entry];
    }
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
pub(super) fn state_hash(model: &RefStore, scope: &Scope) -> u64 {
    let text = format!("{:?}{:?}", model.read(scope), model.tombstone(scope));
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
