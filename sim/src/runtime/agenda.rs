//! The world's timed actions, earliest first; within a millisecond,
//! waiters' deadlines after everything else, and ties in the order they
//! were scheduled: a binary heap, because every message passes through here
//! once (a push and a pop) and a heap does that for a fraction of a
//! B-tree's cost.

use crate::runtime::waits::Waiter;
use crate::runtime::world::Action;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Actions by time; see the module doc.
#[derive(Default)]
pub(crate) struct Agenda {
    heap: BinaryHeap<Reverse<Entry>>,
    /// Waiters' deadlines, apart: most are dropped unseen once their waiter
    /// is answered, and a small entry makes that cheap.
    deadlines: BinaryHeap<Reverse<Deadline>>,
    scheduled: u64,
}

/// What [`Agenda::pop_due`] hands out.
pub(crate) enum Due {
    Action(Action),
    /// A waiter's deadline has come and it still waits: it stops waiting.
    Expire(Waiter),
}

struct Entry {
    at_ms: u64,
    seq: u64,
    action: Action,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Deadline {
    at_ms: u64,
    seq: u64,
    waiter: Waiter,
}

/// What the agenda task does next ([`crate::runtime::world::World::agenda_step`]).
pub(crate) enum Step {
    /// Apply this action, due now.
    Apply(Action),
    /// Nothing is due: wait to be woken.
    Wait,
    /// The run is over.
    Stop,
}

impl Agenda {
    /// Schedules `action` at `at_ms`.
    pub fn push(&mut self, at_ms: u64, action: Action) {
        self.scheduled += 1;
        self.heap.push(Reverse(Entry { at_ms, seq: self.scheduled, action }));
    }

    /// Schedules `waiter`'s deadline at `at_ms`.
    pub fn push_deadline(&mut self, at_ms: u64, waiter: Waiter) {
        self.scheduled += 1;
        self.deadlines.push(Reverse(Deadline { at_ms, seq: self.scheduled, waiter }));
    }

    /// The earliest entry due at `now_ms`: actions first, then the
    /// deadlines of waiters that still wait (`waits`); the others go.
    pub fn pop_due(&mut self, now_ms: u64, waits: impl Fn(Waiter) -> bool) -> Option<Due> {
        let action_ms = self.heap.peek().map_or(u64::MAX, |first| first.0.at_ms);
        if action_ms <= now_ms && self.deadlines.peek().is_none_or(|d| action_ms <= d.0.at_ms) {
            return self.heap.pop().map(|e| Due::Action(e.0.action));
        }
        while let Some(Reverse(first)) = self.deadlines.peek() {
            if first.at_ms > now_ms || first.at_ms >= action_ms {
                break;
            }
            let waiter = first.waiter;
            self.deadlines.pop();
            if waits(waiter) {
                return Some(Due::Expire(waiter));
            }
        }
        match action_ms <= now_ms {
            true => self.heap.pop().map(|e| Due::Action(e.0.action)),
            false => None,
        }
    }

    /// When the earliest entry is due, after dropping the deadlines of
    /// waiters that no longer wait.
    pub fn next_live_ms(&mut self, waits: impl Fn(Waiter) -> bool) -> Option<u64> {
        while self.deadlines.peek().is_some_and(|d| !waits(d.0.waiter)) {
            self.deadlines.pop();
        }
        self.next_ms()
    }

    /// When the earliest entry is due.
    pub fn next_ms(&self) -> Option<u64> {
        let action = self.heap.peek().map(|first| first.0.at_ms);
        let deadline = self.deadlines.peek().map(|first| first.0.at_ms);
        match (action, deadline) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, d) => a.or(d),
        }
    }

    /// Forgets everything scheduled.
    pub fn clear(&mut self) {
        self.heap.clear();
        self.deadlines.clear();
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

    fn node(due: Option<Due>) -> Option<u32> {
        match due? {
            Due::Action(Action::Restart(NodeId::Server(n))) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut agenda = Agenda::default();
        agenda.push(10, restart(1));
        agenda.push(10, restart(2));
        agenda.push(5, restart(3));
        agenda.push(7, restart(4));
        assert_eq!(agenda.next_ms(), Some(5));
        assert_eq!(node(agenda.pop_due(4, |_| true)), None, "nothing due yet");
        let order: Vec<_> = std::iter::from_fn(|| node(agenda.pop_due(10, |_| true))).collect();
        assert_eq!(order, vec![3, 4, 1, 2]);
        assert_eq!(agenda.next_ms(), None);
    }

    #[test]
    fn deadlines_come_last_in_their_millisecond_and_answered_ones_go_unseen() {
        let mut agenda = Agenda::default();
        let (answered, waiting) = (Waiter::Call(1), Waiter::Call(2));
        agenda.push_deadline(5, answered);
        agenda.push_deadline(6, waiting);
        agenda.push(6, restart(1));
        let waits = |w: Waiter| w == waiting;
        assert_eq!(agenda.next_live_ms(waits), Some(6), "the answered deadline at 5 is dropped");
        assert_eq!(node(agenda.pop_due(6, waits)), Some(1), "the action before the deadline of its millisecond");
        assert!(matches!(agenda.pop_due(6, waits), Some(Due::Expire(w)) if w == waiting));
        assert_eq!(agenda.next_ms(), None);
    }
}
