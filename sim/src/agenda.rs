//! The world's timed actions, earliest first, ties in the order they were
//! scheduled: a binary heap, because every message passes through here
//! once (a push and a pop) and a heap does that for a fraction of a
//! B-tree's cost.

use crate::world::Action;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Actions by time; see the module doc.
#[derive(Default)]
pub(crate) struct Agenda {
    heap: BinaryHeap<Reverse<Entry>>,
    scheduled: u64,
}

struct Entry {
    at_ms: u64,
    seq: u64,
    action: Action,
}

impl Agenda {
    /// Schedules `action` at `at_ms`; true when it is now the earliest.
    pub fn push(&mut self, at_ms: u64, action: Action) -> bool {
        self.scheduled += 1;
        let seq = self.scheduled;
        self.heap.push(Reverse(Entry { at_ms, seq, action }));
        self.heap.peek().is_some_and(|first| first.0.seq == seq)
    }

    /// The earliest action, if it is due at `now_ms`.
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Action> {
        match self.heap.peek() {
            Some(first) if first.0.at_ms <= now_ms => self.heap.pop().map(|e| e.0.action),
            _ => None,
        }
    }

    /// When the earliest action is due.
    pub fn next_ms(&self) -> Option<u64> {
        self.heap.peek().map(|first| first.0.at_ms)
    }

    /// Forgets everything scheduled.
    pub fn clear(&mut self) {
        self.heap.clear();
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        (self.at_ms, self.seq).cmp(&(other.at_ms, other.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

#[cfg(test)]
mod tests {
    use super::*;
    use idemsim_model::NodeId;

    fn restart(n: u32) -> Action {
        Action::Restart(NodeId::Server(n))
    }

    fn node(action: Option<Action>) -> Option<u32> {
        match action? {
            Action::Restart(NodeId::Server(n)) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut agenda = Agenda::default();
        assert!(agenda.push(10, restart(1)));
        assert!(!agenda.push(10, restart(2)), "a tie is not earlier");
        assert!(agenda.push(5, restart(3)));
        assert!(!agenda.push(7, restart(4)));
        assert_eq!(agenda.next_ms(), Some(5));
        assert_eq!(node(agenda.pop_due(4)), None, "nothing due yet");
        let order: Vec<_> = std::iter::from_fn(|| node(agenda.pop_due(10))).collect();
        assert_eq!(order, vec![3, 4, 1, 2]);
        assert_eq!(agenda.next_ms(), None);
    }
}
